package main

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync/atomic"
	"time"
)

// hbMode is how the heartbeat workload re-arms a device's timeout.
type hbMode int

const (
	// hbReset re-arms with the native call, each device keeping its own
	// timeout, so every heartbeat postpones the deadline.
	hbReset hbMode = iota
	// hbMixed re-arms with the native call and a timeout drawn afresh at
	// every heartbeat, so deadlines move earlier about as often as later.
	hbMixed
	// hbEarlier re-arms with the native call and a timeout shorter than
	// what is left of the device's deadline, so every heartbeat moves the
	// deadline earlier.
	hbEarlier
	// hbCancelAdd cancels the device's timer and adds a new one.
	hbCancelAdd
)

// Timeouts of the always-earlier mode: every device starts at
// earlierFirst, and each of its heartbeats takes earlierStep off its
// previous timeout, down to earlierFloor. The heartbeats take far less
// than earlierStep, so each new deadline is earlier than the last one.
const (
	earlierFirst = 60 * time.Second
	earlierStep  = 3 * time.Second
	earlierFloor = 2 * time.Second
)

func init() {
	hbColumns := []column{
		{"ns_hb", "ns/heartbeat", "%.0f", true},
		{"cpu_ns_hb", "CPU ns/heartbeat", "%.0f", true},
		{"allocs_hb", "allocs/heartbeat", "%.2f", false},
		{"bytes_device", "bytes/device (incl. handles)", "%.0f", true},
		{"entries_per_live", "heap entries/live (end)", "%.3f", false},
		{"entries_per_live_peak", "heap entries/live (peak)", "%.3f", false},
	}
	const what = "D devices, each with its own timeout drawn from 30–60 s, are armed; then H heartbeats on " +
		"random devices each move that device's deadline to now+timeout. ns/heartbeat includes waiting " +
		"until an asynchronous scheduler has applied them all; CPU ns/heartbeat is the process's user+system " +
		"CPU time over the same span, which counts work an implementation does on other goroutines (the " +
		"owner of a go-schedule heap, the runtime's timer code) however many cores it spreads over. Bytes are live heap per device at the end, " +
		"after GC, including the caller's handles (see the add table). Heap entries per live task are " +
		"go-schedule's Stats().HeapEntries/Pending, at the end and at the peak of samples taken every 5 ms " +
		"during the heartbeats. "
	noReset := func(im impl) string {
		if im.ResetCall == "" {
			return "no re-arm call in this library (only Stop+AfterFunc; see the cancel+add table)"
		}
		return ""
	}
	registerWorkload(workload{
		Name:    "heartbeat-reset",
		Title:   "Heartbeat, native re-arm (Reset / Timer.Reset / MoveTimer)",
		What:    what + "Each heartbeat is the implementation's native re-arm call with the device's own timeout, so it always postpones; the ratio is to time.Timer.Reset.",
		Columns: hbColumns,
		Skip:    noReset,
		Run: func(im impl, c config, r *rand.Rand) (metrics, []string, error) {
			return runHeartbeat(im, c, r, hbReset)
		},
	})
	registerWorkload(workload{
		Name:  "heartbeat-mixed",
		Title: "Heartbeat, native re-arm with a timeout drawn at every heartbeat (mixed fleet)",
		What: what + "Each heartbeat is the native re-arm call with a timeout drawn afresh from 30–60 s, as " +
			"in a fleet whose devices negotiate different keep-alives: a deadline moves earlier about as " +
			"often as later, which for go-schedule is the path that goes through the owner goroutine and " +
			"leaves a tombstone. The ratio is to time.Timer.Reset on the same sequence.",
		Columns: hbColumns,
		Skip:    noReset,
		Run: func(im impl, c config, r *rand.Rand) (metrics, []string, error) {
			return runHeartbeat(im, c, r, hbMixed)
		},
	})
	registerWorkload(workload{
		Name:  "heartbeat-earlier",
		Title: "Heartbeat, native re-arm that always moves the deadline earlier",
		What: what + "Instead of its own timeout, each heartbeat uses a timeout 3 s shorter than the " +
			"device's previous one (from 60 s, down to 2 s), so every heartbeat moves the deadline earlier: " +
			"the worst case for go-schedule, whose heap owner must then move the entry. The ratio is to " +
			"time.Timer.Reset on the same sequence.",
		Columns: hbColumns,
		Skip:    noReset,
		Run: func(im impl, c config, r *rand.Rand) (metrics, []string, error) {
			return runHeartbeat(im, c, r, hbEarlier)
		},
	})
	registerWorkload(workload{
		Name:    "heartbeat-canceladd",
		Title:   "Heartbeat as cancel + add",
		What:    what + "Each heartbeat cancels the device's timer and adds a new one with the device's own timeout; the ratio is to time.AfterFunc+Stop.",
		Columns: hbColumns,
		Run: func(im impl, c config, r *rand.Rand) (metrics, []string, error) {
			return runHeartbeat(im, c, r, hbCancelAdd)
		},
	})
}

func runHeartbeat(im impl, c config, r *rand.Rand, mode hbMode) (metrics, []string, error) {
	n := c.Devices
	t, err := startImpl(im, c)
	if err != nil {
		return nil, nil, err
	}
	defer t.Close()
	timeouts := farDelays(r, n, 30*time.Second, 30*time.Second)
	beats := make([]int32, c.Heartbeats)
	for k := range beats {
		beats[k] = int32(r.IntN(n))
	}
	// In the mixed mode every heartbeat has its own timeout, drawn up
	// front so that drawing it is not timed.
	var beatTimeouts []time.Duration
	switch mode {
	case hbMixed:
		beatTimeouts = farDelays(r, len(beats), 30*time.Second, 30*time.Second)
	case hbEarlier:
		for i := range timeouts {
			timeouts[i] = earlierFirst
		}
		last := slices.Clone(timeouts)
		beatTimeouts = make([]time.Duration, len(beats))
		for k, b := range beats {
			last[b] = max(last[b]-earlierStep, earlierFloor)
			beatTimeouts[k] = last[b]
		}
	}

	before, handles := countedPrepare(t, n)
	if err := addAll(t, timeouts, noop); err != nil {
		return nil, nil, err
	}
	if err := t.Settle(n); err != nil {
		return nil, nil, err
	}

	// For go-schedule, sample heap entries per live task while the
	// heartbeats run; other implementations have no such figure.
	var peakMilli atomic.Int64
	stopSampling := make(chan struct{})
	sampled := make(chan struct{})
	if _, ok := schedStats(t); ok {
		go func() {
			defer close(sampled)
			tk := time.NewTicker(5 * time.Millisecond)
			defer tk.Stop()
			for {
				if st, _ := schedStats(t); st.Pending > 0 {
					storeMax(&peakMilli, int64(1000*st.HeapEntries/st.Pending))
				}
				select {
				case <-stopSampling:
					return
				case <-tk.C:
				}
			}
		}()
	} else {
		close(sampled)
	}

	var failed int
	var firstErr error
	m0 := mallocs()
	cpu0, cpuOK := cpuTime()
	start := time.Now()
	for k, b := range beats {
		noteProgress(k)
		i := int(b)
		switch mode {
		case hbReset:
			err = t.Reset(i, timeouts[i])
		case hbMixed, hbEarlier:
			err = t.Reset(i, beatTimeouts[k])
		case hbCancelAdd:
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
		close(stopSampling)
		return nil, nil, err
	}
	elapsed := time.Since(start)
	cpu1, _ := cpuTime()
	m1 := mallocs()
	close(stopSampling)
	<-sampled
	after := settledMem()
	// The inputs were counted in before: keep them live in after too.
	runtime.KeepAlive(timeouts)
	runtime.KeepAlive(beats)
	runtime.KeepAlive(beatTimeouts)

	m := metrics{
		"ns_hb":        float64(elapsed.Nanoseconds()) / float64(len(beats)),
		"allocs_hb":    perItem(m1, m0, len(beats)),
		"bytes_device": perItem(after.heapAlloc, before.heapAlloc, n),
		"handle_bytes": handles,
		"failed_ops":   float64(failed),
	}
	if cpuOK {
		m["cpu_ns_hb"] = float64((cpu1 - cpu0).Nanoseconds()) / float64(len(beats))
	}
	var notes []string
	if st, ok := schedStats(t); ok {
		end := float64(st.HeapEntries) / float64(max(st.Pending, 1))
		m["entries_per_live"] = end
		m["entries_per_live_peak"] = max(end, float64(peakMilli.Load())/1000)
		m["tombstones"] = float64(st.Tombstones)
	}
	if failed > 0 {
		notes = append(notes, fmt.Sprintf("%d heartbeats failed; first: %v", failed, firstErr))
	}
	return m, notes, nil
}
