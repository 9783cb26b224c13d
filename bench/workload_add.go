package main

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"time"
)

func init() {
	registerWorkload(workload{
		Name:  "add",
		Title: "Add: one-shots far in the future",
		What: "N one-shot timers 1–2 h out are added from one goroutine (ns/add includes waiting until an " +
			"asynchronous scheduler has applied them all), then N add+cancel pairs run on one more timer " +
			"while the N stay pending: each cancel follows its add at once, the classic micro-benchmark " +
			"(the heartbeat cancel+add table has the harder case, a cancel deep inside a full heap). Bytes are " +
			"live heap per pending timer after GC, including the caller's handles (a TaskID, a *time.Timer, ... " +
			"per timer, the part shown as handles; go-zero keeps its key index inside the library instead), so " +
			"every implementation is charged for everything a user must hold to cancel or re-arm a timer.",
		Columns: []column{
			{"ns_add", "ns/add", "%.0f", true},
			{"allocs_add", "allocs/add", "%.2f", false},
			{"bytes_task", "bytes/pending (incl. handles)", "%.0f", true},
			{"handle_bytes", "of which handles", "%.0f", false},
			{"ns_pair", "ns/(add+cancel)", "%.0f", true},
			{"allocs_pair", "allocs/pair", "%.2f", false},
		},
		Run: runAdd,
	})
}

func runAdd(im impl, c config, r *rand.Rand) (metrics, []string, error) {
	n := c.AddN
	t, err := startImpl(im, c)
	if err != nil {
		return nil, nil, err
	}
	defer t.Close()
	ds := farDelays(r, n, time.Hour, time.Hour)
	pairDs := farDelays(r, n, time.Hour, time.Hour)

	before, handles := countedPrepare(t, n+1)
	start := time.Now()
	if err := addAll(t, ds, noop); err != nil {
		return nil, nil, err
	}
	if err := t.Settle(n); err != nil {
		return nil, nil, err
	}
	addTime := time.Since(start)
	addMallocs := mallocs()
	after := settledMem()
	// The inputs were counted in before: keep them live in after too.
	runtime.KeepAlive(ds)
	runtime.KeepAlive(pairDs)

	m := metrics{
		"ns_add":       float64(addTime.Nanoseconds()) / float64(n),
		"allocs_add":   perItem(addMallocs, before.mallocs, n),
		"bytes_task":   perItem(after.heapAlloc, before.heapAlloc, n),
		"handle_bytes": handles,
	}
	if st, ok := schedStats(t); ok {
		m["heap_entries_per_live"] = float64(st.HeapEntries) / float64(max(st.Pending, 1))
	}

	// Add+cancel pairs at n pending, on index n.
	m0 := mallocs()
	start = time.Now()
	for k, d := range pairDs {
		noteProgress(k)
		if err := t.Add(n, d, noop); err != nil {
			return nil, nil, fmt.Errorf("pair add: %w", err)
		}
		t.Cancel(n)
	}
	if err := t.Settle(n); err != nil {
		return nil, nil, err
	}
	pairTime := time.Since(start)
	m["ns_pair"] = float64(pairTime.Nanoseconds()) / float64(n)
	m["allocs_pair"] = perItem(mallocs(), m0, n)
	return m, nil, nil
}
