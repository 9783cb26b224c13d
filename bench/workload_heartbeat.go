package main

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"time"
)

func init() {
	hbColumns := []column{
		{"ns_hb", "ns/heartbeat", "%.0f", true},
		{"allocs_hb", "allocs/heartbeat", "%.2f", false},
		{"bytes_device", "bytes/device", "%.0f", true},
		{"entries_per_live", "heap entries/live", "%.2f", false},
	}
	const what = "D devices, each with its own timeout drawn from 30–60 s, are armed; then H heartbeats on " +
		"random devices each push that device's deadline to now+timeout. ns/heartbeat includes waiting " +
		"until an asynchronous scheduler has applied them all. Bytes are live heap per device at the end, " +
		"after GC (caller's handle slice not counted). "
	registerWorkload(workload{
		Name:    "heartbeat-reset",
		Title:   "Heartbeat, native re-arm (Reset / Timer.Reset / MoveTimer)",
		What:    what + "Each heartbeat is the implementation's native re-arm call; the ratio is to time.Timer.Reset.",
		Columns: hbColumns,
		Skip: func(im impl) string {
			if im.ResetCall == "" {
				return "no re-arm call in this library (only Stop+AfterFunc; see the cancel+add table)"
			}
			return ""
		},
		Run: func(im impl, c config, r *rand.Rand) (metrics, []string, error) {
			return runHeartbeat(im, c, r, true)
		},
	})
	registerWorkload(workload{
		Name:    "heartbeat-canceladd",
		Title:   "Heartbeat as cancel + add",
		What:    what + "Each heartbeat cancels the device's timer and adds a new one; the ratio is to time.AfterFunc+Stop.",
		Columns: hbColumns,
		Run: func(im impl, c config, r *rand.Rand) (metrics, []string, error) {
			return runHeartbeat(im, c, r, false)
		},
	})
}

func runHeartbeat(im impl, c config, r *rand.Rand, native bool) (metrics, []string, error) {
	n := c.Devices
	t, err := newTimers(im, c, n)
	if err != nil {
		return nil, nil, err
	}
	defer t.Close()
	timeouts := farDelays(r, n, 30*time.Second, 30*time.Second)
	beats := make([]int32, c.Heartbeats)
	for k := range beats {
		beats[k] = int32(r.IntN(n))
	}

	before := settledMem()
	if err := addAll(t, timeouts, noop); err != nil {
		return nil, nil, err
	}
	if err := t.Settle(n); err != nil {
		return nil, nil, err
	}

	var failed int
	var firstErr error
	m0 := mallocs()
	start := time.Now()
	for k, b := range beats {
		noteProgress(k)
		i := int(b)
		if native {
			err = t.Reset(i, timeouts[i])
		} else {
			t.Cancel(i)
			err = t.Add(i, timeouts[i], noop)
		}
		if err != nil {
			failed++
			if firstErr == nil {
				firstErr = err
			}
		}
	}
	if err := t.Settle(n); err != nil {
		return nil, nil, err
	}
	elapsed := time.Since(start)
	m1 := mallocs()
	after := settledMem()
	// The inputs were counted in before: keep them live in after too.
	runtime.KeepAlive(timeouts)
	runtime.KeepAlive(beats)

	m := metrics{
		"ns_hb":        float64(elapsed.Nanoseconds()) / float64(len(beats)),
		"allocs_hb":    perItem(m1, m0, len(beats)),
		"bytes_device": perItem(after.heapAlloc, before.heapAlloc, n),
		"failed_ops":   float64(failed),
	}
	var notes []string
	if st, ok := schedStats(t); ok {
		m["entries_per_live"] = float64(st.HeapEntries) / float64(max(st.Pending, 1))
		m["tombstones"] = float64(st.Tombstones)
	}
	if failed > 0 {
		notes = append(notes, fmt.Sprintf("%d heartbeats failed; first: %v", failed, firstErr))
	}
	return m, notes, nil
}
