package main

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"time"
)

func init() {
	registerWorkload(workload{
		Name:  "parallel",
		Title: "Parallel add from 4×GOMAXPROCS goroutines",
		What: "N one-shots 1–2 h out are added by 4×GOMAXPROCS goroutines at once, each on its own share " +
			"of the indexes; ns/add is wall time over N, including waiting until an asynchronous scheduler " +
			"has applied them all.",
		Columns: []column{
			{"ns_add", "ns/add (wall)", "%.0f", true},
			{"allocs_add", "allocs/add", "%.2f", false},
		},
		Run: runParallel,
	})
}

func runParallel(im impl, c config, r *rand.Rand) (metrics, []string, error) {
	n := c.ParallelN
	t, err := newTimers(im, c, n)
	if err != nil {
		return nil, nil, err
	}
	defer t.Close()
	ds := farDelays(r, n, time.Hour, time.Hour)
	g := 4 * runtime.GOMAXPROCS(0)
	errs := make([]error, g)

	before := settledMem()
	start := time.Now()
	var wg sync.WaitGroup
	for w := range g {
		lo, hi := w*n/g, (w+1)*n/g
		wg.Go(func() {
			for i := lo; i < hi; i++ {
				noteProgress(i)
				if err := t.Add(i, ds[i], noop); err != nil {
					errs[w] = fmt.Errorf("add %d: %w", i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, nil, err
		}
	}
	if err := t.Settle(n); err != nil {
		return nil, nil, err
	}
	elapsed := time.Since(start)
	return metrics{
		"ns_add":     float64(elapsed.Nanoseconds()) / float64(n),
		"allocs_add": perItem(mallocs(), before.mallocs, n),
		"goroutines": float64(g),
	}, nil, nil
}
