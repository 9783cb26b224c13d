package main

import (
	"fmt"
	"math/rand/v2"
	"runtime/debug"
	"sync/atomic"
	"time"
)

// spikeIdle is how long a spike's aftermath idles before the memory left
// behind is read.
const spikeIdle = 3 * time.Second

func init() {
	cols := []column{
		{"peak_bytes_task", "peak bytes/timer (incl. handles)", "%.0f", true},
		{"retained_bytes_task", "retained bytes/timer", "%.1f", true},
		{"retained_pct", "retained % of peak", "%.1f", false},
		{"lost", "lost", "%.0f", false},
	}
	const what = " The live heap is read after a garbage collection: before the implementation is created, " +
		"once every timer is pending (peak), and after the spike is over, the caller has dropped its " +
		"handles and the process has idled for 3 s (retained; freed memory is returned to the OS " +
		"first). Bytes are per timer of the spike; retained % is retained over peak. A gateway that " +
		"lives through a reconnect storm keeps what is retained for as long as it runs."
	onlyHeaps := func(im impl) string {
		switch im.Name {
		case "runtime", "lazycancel", "eagercancel":
			return ""
		}
		return "sized for the heaps: not run"
	}
	registerWorkload(workload{
		Name:    "spike-cancel",
		Title:   "Spike, then every timer cancelled",
		What:    "N one-shots an hour or so out are added, then all cancelled." + what,
		Columns: cols,
		Skip:    onlyHeaps,
		Run: func(im impl, c config, r *rand.Rand) (metrics, []string, error) {
			return runSpike(im, c, r, false)
		},
	})
	registerWorkload(workload{
		Name:  "spike-fire",
		Title: "Spike, then every timer fired",
		What: "N one-shots are added with deadlines spread over 10 s, starting once adding is surely " +
			"over, and all run (lost counts those that did not within a minute)." + what,
		Columns: cols,
		Skip:    onlyHeaps,
		Run: func(im impl, c config, r *rand.Rand) (metrics, []string, error) {
			return runSpike(im, c, r, true)
		},
	})
}

func runSpike(im impl, c config, r *rand.Rand, fire bool) (metrics, []string, error) {
	n := c.SpikeN
	base := settledMem()
	t, err := newTimers(im, c, n)
	if err != nil {
		return nil, nil, err
	}
	defer t.Close()
	var fired atomic.Int64
	done := make(chan struct{})
	job := func() {
		k := fired.Add(1)
		noteProgress(int(k))
		if k == int64(n) {
			close(done)
		}
	}
	if fire {
		// Adds take well under a microsecond each; leave three, and spread
		// the deadlines so that the runtime's goroutine per timer stays
		// within memory.
		lead := 3*time.Second + time.Duration(n)*time.Microsecond
		start := time.Now()
		for i := range n {
			noteProgress(i)
			d := lead + time.Duration(r.Int64N(int64(10*time.Second))) - time.Since(start)
			if err := t.Add(i, d, job); err != nil {
				return nil, nil, fmt.Errorf("add %d: %w", i, err)
			}
		}
	} else if err := addAll(t, farDelays(r, n, time.Hour, 10*time.Minute), noop); err != nil {
		return nil, nil, err
	}
	if err := t.Settle(n); err != nil {
		return nil, nil, err
	}
	peak := settledMem()
	lost := 0
	if fire {
		giveUp := time.After(time.Minute + 13*time.Second + time.Duration(n)*time.Microsecond)
		tick := time.NewTicker(100 * time.Millisecond) // progress while the deadlines approach
		defer tick.Stop()
	wait:
		for {
			select {
			case <-done:
				break wait
			case <-tick.C:
				progressCount.Add(1)
			case <-giveUp:
				lost = n - int(fired.Load())
				break wait
			}
		}
	} else {
		for i := range n {
			noteProgress(i)
			t.Cancel(i)
		}
	}
	if err := t.Settle(0); err != nil {
		return nil, nil, err
	}
	t.Prepare(0) // the caller lets go of its handles
	for end := time.Now().Add(spikeIdle); time.Now().Before(end); {
		time.Sleep(100 * time.Millisecond)
		progressCount.Add(1)
	}
	debug.FreeOSMemory()
	after := settledMem()
	grew := float64(peak.heapAlloc) - float64(base.heapAlloc)
	left := float64(after.heapAlloc) - float64(base.heapAlloc)
	return metrics{
		"peak_bytes_task":     grew / float64(n),
		"retained_bytes_task": left / float64(n),
		"retained_pct":        100 * left / grew,
		"lost":                float64(lost),
	}, nil, nil
}
