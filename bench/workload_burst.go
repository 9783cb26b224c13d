package main

import (
	"math/rand/v2"
	"time"
)

func init() {
	registerWorkload(workload{
		Name:  "burst",
		Title: "Burst: every deadline at the same instant",
		What: "N one-shots are all armed for one instant T, far enough out (1 s + 6 µs per timer) for the " +
			"slowest add path to finish first. First job is the start of the earliest job minus T (how late " +
			"the first job of a burst is); drain is the start of the last job minus T (how long the burst " +
			"takes to get through); CPU ns/job is the process's user+system CPU time from just before T " +
			"until the last job has started, divided by the jobs fired. Extra goroutines is the peak of " +
			"runtime.NumGoroutine(), read by every job as it starts, minus the count before the " +
			"implementation was created: a pool holds it at its size, a goroutine per job does not. Lost: " +
			"jobs that never ran within 30 s (or 30 µs per job, if longer) after T; early: jobs that started " +
			"more than one tick before T.",
		Columns: []column{
			{"first_late_ms", "first job ms", "%.3f", true},
			{"drain_ms", "drain ms", "%.1f", true},
			{"late_p50_ms", "lateness p50 ms", "%.1f", true},
			{"cpu_ns_job", "CPU ns/job", "%.0f", true},
			{"extra_goroutines", "peak extra goroutines", "%.0f", true},
			{"lost", "lost", "%.0f", false},
			{"duplicates", "duplicate runs", "%.0f", false},
			{"early", "early", "%.0f", false},
		},
		Run: runBurst,
	})
}

// burstLead is how far out the common deadline of n timers is set.
func burstLead(n int) time.Duration {
	return time.Second + time.Duration(n)*6*time.Microsecond
}

func runBurst(im impl, c config, _ *rand.Rand) (metrics, []string, error) {
	n := c.BurstN
	at := burstLead(n)
	offsets := make([]time.Duration, n)
	for i := range offsets {
		offsets[i] = at
	}
	f, notes, err := fireAll(im, c, offsets, max(30*time.Second, time.Duration(n)*30*time.Microsecond))
	if err != nil {
		return nil, notes, err
	}
	m := metrics{}
	ls := f.common(m, n, im.Tick)
	if f.fired > 0 {
		m["first_late_ms"] = float64(f.first-at) / 1e6
		m["drain_ms"] = float64(f.last-at) / 1e6
		m["late_p50_ms"] = percentile(ls, 50)
	}
	return m, notes, nil
}
