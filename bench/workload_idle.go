package main

import (
	"math/rand/v2"
	"runtime/debug"
	"time"
)

func init() {
	registerWorkload(workload{
		Name:  "idle",
		Title: "Idle: a million deadlines an hour out",
		What: "N one-shots 1 h to 1 h 10 min out are added; after a garbage collection that also returns freed memory to the OS (so the runtime's scavenger stays quiet) and a settling second, the process's " +
			"user+system CPU time is read across the idle period, in which nothing is due. Wheels tick; a " +
			"heap with one timer for the earliest deadline should sleep.",
		Columns: []column{
			{"cpu_s", "CPU s", "%.3f", true},
			{"cpu_pct", "% of one core", "%.2f", false},
		},
		Run: runIdle,
	})
}

func runIdle(im impl, c config, r *rand.Rand) (metrics, []string, error) {
	n := c.IdleN
	t, err := newTimers(im, c, n)
	if err != nil {
		return nil, nil, err
	}
	defer t.Close()
	if err := addAll(t, farDelays(r, n, time.Hour, 10*time.Minute), noop); err != nil {
		return nil, nil, err
	}
	if err := t.Settle(n); err != nil {
		return nil, nil, err
	}
	// Collect the adds' garbage and hand the freed memory back to the OS
	// now: otherwise the runtime's background scavenger returns it during
	// the idle period, paced at about 1% of a core, which is the size of
	// the figure measured.
	debug.FreeOSMemory()
	time.Sleep(time.Second)
	c0, ok0 := cpuTime()
	w0 := time.Now()
	for end := w0.Add(c.Idle); time.Now().Before(end); {
		time.Sleep(min(time.Until(end), time.Second))
		progressCount.Add(1)
	}
	c1, ok1 := cpuTime()
	cpu, wall := c1-c0, time.Since(w0)
	if !ok0 || !ok1 {
		return metrics{}, []string{"this system gives the benchmark no process CPU time: not measured"}, nil
	}
	return metrics{
		"cpu_s":   cpu.Seconds(),
		"cpu_pct": 100 * cpu.Seconds() / wall.Seconds(),
	}, nil, nil
}
