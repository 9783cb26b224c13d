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
	cols := []column{
		{"drain_s", "drain s", "%.3f", true},
		{"late_p50_ms", "lateness p50 ms", "%.3f", true},
		{"late_p99_ms", "lateness p99 ms", "%.3f", true},
		{"late_max_ms", "lateness max ms", "%.1f", true},
		{"cpu_ns_job", "CPU ns/job", "%.0f", true},
		{"extra_goroutines", "peak extra goroutines", "%.0f", true},
		{"lost", "lost", "%.0f", false},
		{"duplicates", "duplicate runs", "%.0f", false},
		{"early", "early", "%.0f", false},
	}
	const what = "deadlines uniformly spread over the window, starting 0.5 s + 3 µs per timer after the " +
		"first add (so that the slowest add path is done first), all run. Lateness is the time from a deadline to the start of its job, measured by the job itself; " +
		"drain is the time from the first deadline to the last job start (ideal: the window). CPU ns/job " +
		"is the process's user+system CPU time from the first deadline until the last job has started, " +
		"divided by the jobs fired: everything the implementation does to fire them, plus the job's own " +
		"bookkeeping, which is the same for all. Extra goroutines is the peak of runtime.NumGoroutine(), " +
		"read by every job as it starts, minus the count before the implementation was created. Lost: " +
		"jobs that never ran within 10 s after the window; early: jobs that started more than one tick " +
		"before their deadline."
	registerWorkload(workload{
		Name:    "fire",
		Title:   "Fire: deadlines spread over a window",
		What:    "N one-shots with " + what,
		Columns: cols,
		Run: func(im impl, c config, r *rand.Rand) (metrics, []string, error) {
			return runFire(im, c, r, c.FireWindow)
		},
	})
	registerWorkload(workload{
		Name:  "fire-dense",
		Title: "Fire, dense: the same deadlines packed into a short window",
		What: "The fire workload's N one-shots with the deadlines packed into a window a tenth as long or " +
			"less (-fire-dense-window), so that many jobs fall due in every millisecond: " + what,
		Columns: cols,
		Run: func(im impl, c config, r *rand.Rand) (metrics, []string, error) {
			return runFire(im, c, r, c.FireDense)
		},
	})
}

// firing is what fireAll measured: each job's lateness, how often it ran,
// and the process's CPU time while they fired.
type firing struct {
	// late is each job's start minus its deadline, in ns; valid where runs
	// is at least 1.
	late []int64
	runs []atomic.Int32
	// fired is the number of jobs that ran at least once.
	fired int
	// first and last are the earliest and latest first starts, since base.
	first, last time.Duration
	// cpu is the process's CPU time from just before the first deadline to
	// the moment the last job had started; cpuOK is false where it cannot
	// be read.
	cpu   time.Duration
	cpuOK bool
	// extraGoroutines is the peak goroutine count seen by the jobs minus
	// the count before the implementation was created.
	extraGoroutines int
	// addDone is how long adding every timer took, since base.
	addDone time.Duration
}

// fireAll arms one timer per offset (the job's deadline, counted from the
// moment adding starts) and waits until every job has run, or until
// giveUp after the last deadline. Jobs record their own lateness and the
// goroutine count; the CPU time is read around the firing only, after the
// adds have been applied and their garbage collected.
func fireAll(im impl, c config, offsets []time.Duration, giveUp time.Duration) (*firing, []string, error) {
	n := len(offsets)
	f := &firing{late: make([]int64, n), runs: make([]atomic.Int32, n)}
	var fired, first, last, peakG atomic.Int64
	first.Store(1 << 62)
	done := make(chan struct{})
	var base time.Time
	jobs := make([]func(), n)
	for i := range jobs {
		jobs[i] = func() {
			now := int64(time.Since(base))
			storeMax(&peakG, int64(runtime.NumGoroutine()))
			if f.runs[i].Add(1) == 1 {
				f.late[i] = now - int64(offsets[i])
				storeMin(&first, now)
				storeMax(&last, now)
				k := fired.Add(1)
				noteProgress(int(k))
				if k == int64(n) {
					close(done)
				}
			}
		}
	}
	firstDeadline, lastDeadline := slices.Min(offsets), slices.Max(offsets)

	runtime.GC()
	g0 := runtime.NumGoroutine()
	t, err := newTimers(im, c, n)
	if err != nil {
		return nil, nil, err
	}
	defer t.Close()

	base = time.Now()
	for i, off := range offsets {
		noteProgress(i)
		d := off - time.Since(base)
		if err := t.Add(i, max(d, time.Nanosecond), jobs[i]); err != nil {
			return nil, nil, fmt.Errorf("add %d: %w", i, err)
		}
	}
	f.addDone = time.Since(base)
	var notes []string
	if f.addDone > firstDeadline {
		notes = append(notes, fmt.Sprintf("adding took %v, longer than the %v lead: the first deadlines were already due when added, and the CPU figure misses part of the firing",
			f.addDone.Round(time.Millisecond), firstDeadline.Round(time.Millisecond)))
	}
	// Keep the cost of applying the adds, and their garbage, out of the
	// firing window where there is time for it.
	settleBefore(t, n, base.Add(firstDeadline-5*time.Millisecond))
	if firstDeadline-time.Since(base) > 200*time.Millisecond {
		runtime.GC()
	}
	// A wheel may run a job up to two ticks before its deadline, so its
	// window opens that much earlier (its ticking meanwhile is part of its
	// cost).
	if d := firstDeadline - 2*im.Tick - time.Millisecond - time.Since(base); d > 0 {
		time.Sleep(d)
	}
	c0, ok0 := cpuTime()
	opened := time.Since(base)
	limit := time.After(lastDeadline + im.Tick + giveUp - time.Since(base))
	for waiting := true; waiting; {
		select {
		case <-done:
			waiting = false
		case <-limit:
			waiting = false
		case <-time.After(time.Second):
			progressCount.Add(1)
		}
	}
	c1, ok1 := cpuTime()
	time.Sleep(20 * time.Millisecond) // let duplicates, if any, show

	f.fired = int(fired.Load())
	f.first, f.last = time.Duration(first.Load()), time.Duration(last.Load())
	f.cpu, f.cpuOK = c1-c0, ok0 && ok1 && f.fired > 0
	// A job that started before the window opened was not charged for; a
	// few (a late wake-up of this goroutine) do not matter, more do.
	before := 0
	for i := range offsets {
		if f.runs[i].Load() > 0 && offsets[i]+time.Duration(f.late[i]) < opened {
			before++
		}
	}
	if before > n/100 {
		f.cpuOK = false
		notes = append(notes, fmt.Sprintf("%d jobs ran before the CPU window opened, %v before the first deadline: CPU not measured",
			before, (firstDeadline-opened).Round(time.Millisecond)))
	}
	f.extraGoroutines = int(peakG.Load()) - g0
	return f, notes, nil
}

// lateness returns the sorted lateness of every job that ran, in ms, and
// counts duplicate runs and runs more than tol before their deadline.
func (f *firing) lateness(tol time.Duration) (ms []float64, dups, early int) {
	for i := range f.late {
		k := f.runs[i].Load()
		if k == 0 {
			continue
		}
		dups += int(k - 1)
		if time.Duration(f.late[i]) < -tol {
			early++
		}
		ms = append(ms, float64(f.late[i])/1e6)
	}
	slices.Sort(ms)
	return ms, dups, early
}

// common fills the metrics every firing workload reports.
func (f *firing) common(m metrics, n int, tol time.Duration) []float64 {
	ls, dups, early := f.lateness(tol)
	m["lost"] = float64(n - f.fired)
	m["duplicates"] = float64(dups)
	m["early"] = float64(early)
	m["extra_goroutines"] = float64(f.extraGoroutines)
	m["add_s"] = f.addDone.Seconds()
	if f.cpuOK {
		m["cpu_ns_job"] = float64(f.cpu.Nanoseconds()) / float64(f.fired)
		m["cpu_s"] = f.cpu.Seconds()
	}
	return ls
}

// fireLead is how long after the first add the fire workloads' first
// deadline may fall: long enough for go-zero's 2–3 µs adds to finish.
func fireLead(n int) time.Duration {
	return 500*time.Millisecond + time.Duration(n)*3*time.Microsecond
}

func runFire(im impl, c config, r *rand.Rand, window time.Duration) (metrics, []string, error) {
	n := c.FireN
	lead := fireLead(n)
	offsets := make([]time.Duration, n) // deadline of i, from base
	for i := range offsets {
		offsets[i] = lead + time.Duration(r.Int64N(int64(window)))
	}
	f, notes, err := fireAll(im, c, offsets, 10*time.Second)
	if err != nil {
		return nil, notes, err
	}
	m := metrics{}
	ls := f.common(m, n, im.Tick)
	m["drain_s"] = (f.last - slices.Min(offsets)).Seconds()
	m["late_p50_ms"] = percentile(ls, 50)
	m["late_p99_ms"] = percentile(ls, 99)
	m["late_max_ms"] = percentile(ls, 100)
	return m, notes, nil
}
