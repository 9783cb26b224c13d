package main

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync/atomic"
	"time"
)

func init() {
	registerWorkload(workload{
		Name:  "fire",
		Title: "Fire: deadlines spread over a window",
		What: "N one-shots with deadlines uniformly spread over the window, starting 500 ms after the " +
			"first add, all run. Lateness is the time from a deadline to the start of its job, measured by " +
			"the job itself; drain is the time from the first deadline to the last job start (ideal: the " +
			"window). Extra goroutines is the peak goroutine count while firing minus the count before " +
			"the implementation was created, sampled every millisecond. Lost: jobs that never ran within " +
			"10 s after the window; early: jobs that started more than one tick before their deadline.",
		Columns: []column{
			{"drain_s", "drain s", "%.3f", true},
			{"late_p50_ms", "lateness p50 ms", "%.3f", true},
			{"late_p99_ms", "lateness p99 ms", "%.3f", true},
			{"late_max_ms", "lateness max ms", "%.1f", true},
			{"extra_goroutines", "peak extra goroutines", "%.0f", true},
			{"lost", "lost", "%.0f", false},
			{"duplicates", "duplicate runs", "%.0f", false},
			{"early", "early", "%.0f", false},
		},
		Run: runFire,
	})
}

func runFire(im impl, c config, r *rand.Rand) (metrics, []string, error) {
	n := c.FireN
	lead := 500 * time.Millisecond
	offsets := make([]time.Duration, n) // deadline of i, from base
	for i := range offsets {
		offsets[i] = lead + time.Duration(r.Int64N(int64(c.FireWindow)))
	}
	late := make([]int64, n)
	runs := make([]atomic.Int32, n)
	var fired atomic.Int64
	var last atomic.Int64
	var base time.Time
	jobs := make([]func(), n)
	for i := range jobs {
		jobs[i] = func() {
			now := int64(time.Since(base))
			if runs[i].Add(1) == 1 {
				late[i] = now - int64(offsets[i])
				for {
					l := last.Load()
					if now <= l || last.CompareAndSwap(l, now) {
						break
					}
				}
				fired.Add(1)
			}
		}
	}

	runtime.GC()
	g0 := runtime.NumGoroutine()
	t, err := newTimers(im, c, n)
	if err != nil {
		return nil, nil, err
	}
	defer t.Close()
	sampler := sampleGoroutines(time.Millisecond)

	base = time.Now()
	for i, off := range offsets {
		noteProgress(i)
		d := off - time.Since(base)
		if err := t.Add(i, max(d, time.Nanosecond), jobs[i]); err != nil {
			sampler.Stop()
			return nil, nil, fmt.Errorf("add %d: %w", i, err)
		}
	}
	addDone := time.Since(base)
	giveUp := base.Add(lead + c.FireWindow + 10*time.Second)
	for fired.Load() < int64(n) && time.Now().Before(giveUp) {
		time.Sleep(5 * time.Millisecond)
		progressCount.Add(1)
	}
	time.Sleep(20 * time.Millisecond) // let duplicates, if any, show
	peak := sampler.Stop()

	var ls []float64
	dups, early := 0, 0
	tol := im.Tick
	for i := range late {
		k := runs[i].Load()
		if k == 0 {
			continue
		}
		if k > 1 {
			dups += int(k - 1)
		}
		if time.Duration(late[i]) < -tol {
			early++
		}
		ls = append(ls, float64(late[i])/1e6)
	}
	slices.Sort(ls)
	firstDeadline := slices.Min(offsets)
	m := metrics{
		"drain_s":          (time.Duration(last.Load()) - firstDeadline).Seconds(),
		"late_p50_ms":      percentile(ls, 50),
		"late_p99_ms":      percentile(ls, 99),
		"late_max_ms":      percentile(ls, 100),
		"extra_goroutines": float64(peak - g0),
		"lost":             float64(n - int(fired.Load())),
		"duplicates":       float64(dups),
		"early":            float64(early),
		"add_s":            addDone.Seconds(),
	}
	var notes []string
	if addDone > lead {
		notes = append(notes, fmt.Sprintf("adding took %v, longer than the %v lead: the first deadlines were already due when added", addDone.Round(time.Millisecond), lead))
	}
	return m, notes, nil
}
