package main

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// correctRule is printed with the correctness tables.
const correctRule = "Rule: every device must time out exactly once, for the deadline set by its last " +
	"heartbeat. A run earlier than that deadline minus one tick (0 for exact implementations) is " +
	"early; if it also came before the last heartbeat it is stale (it ran for an older deadline). No " +
	"run within tick + 1 s after the deadline is lost; a second run is a duplicate. Lateness within " +
	"that window is reported, not judged. A device whose heartbeat came after its previous deadline " +
	"(the driver was too slow on a loaded machine) is excluded and counted."

// lostAfter is how long after a device's deadline (plus one tick) a run
// that has not happened counts as lost.
const lostAfter = time.Second

func init() {
	cols := []column{
		{"failures", "failures", "%.0f", false},
		{"lost", "lost", "%.0f", false},
		{"duplicates", "duplicates", "%.0f", false},
		{"early", "early", "%.0f", false},
		{"stale", "stale", "%.0f", false},
		{"early_max_ms", "max earliness ms", "%.1f", false},
		{"late_max_ms", "max lateness ms", "%.1f", false},
		{"excluded", "excluded", "%.0f", false},
		{"heartbeats", "heartbeats", "%.0f", false},
	}
	const what = "D devices get a timeout of 200–400 ms, drawn afresh at every heartbeat so that deadlines " +
		"move both later and earlier. Two driver goroutines heartbeat their half of the devices for the " +
		"heartbeat period (each device at least every 100 ms, otherwise at random), then stop. Every run " +
		"of every device's job is recorded. "
	registerWorkload(workload{
		Name:    "correct-reset",
		Title:   "Correctness under heartbeats, native re-arm",
		What:    what + "Heartbeats use the native re-arm call. " + correctRule,
		Columns: cols,
		Skip: func(im impl) string {
			if im.ResetCall == "" {
				return "no re-arm call in this library"
			}
			return tooCoarse(im)
		},
		Run: func(im impl, c config, r *rand.Rand) (metrics, []string, error) {
			return runCorrect(im, c, r, true)
		},
	})
	registerWorkload(workload{
		Name:    "correct-canceladd",
		Title:   "Correctness under heartbeats, cancel + add",
		What:    what + "Heartbeats cancel and re-add; each job also records which heartbeat armed it. " + correctRule,
		Columns: cols,
		Skip:    tooCoarse,
		Run: func(im impl, c config, r *rand.Rand) (metrics, []string, error) {
			return runCorrect(im, c, r, false)
		},
	})
}

// correctMinTimeout is the shortest timeout the correctness workloads draw.
const correctMinTimeout = 200 * time.Millisecond

// tooCoarse skips the correctness workloads for a wheel whose tick is
// longer than their timeouts: no user sets 200 ms timeouts on a 1 s wheel.
func tooCoarse(im impl) string {
	if im.Tick >= correctMinTimeout {
		return fmt.Sprintf("its %v tick is longer than the 200–400 ms timeouts of this workload", im.Tick)
	}
	return ""
}

// device is the state of one device in the correctness workload. The
// driver goroutine that owns the device writes deadline, lastBeat and gen;
// jobs write the atomics.
type device struct {
	deadline time.Duration // of the last heartbeat, since base
	lastBeat time.Duration
	gen      int32
	excluded bool

	runs     atomic.Int32
	firstRun atomic.Int64 // since base, +1 so that 0 means none
	firstGen atomic.Int32
}

func runCorrect(im impl, c config, seed *rand.Rand, native bool) (metrics, []string, error) {
	n := c.CorrectDevices
	t, err := newTimers(im, c, n)
	if err != nil {
		return nil, nil, err
	}
	defer t.Close()
	devs := make([]device, n)
	base := time.Now()
	since := func() time.Duration { return time.Since(base) }
	record := func(i int, gen int32) {
		d := &devs[i]
		now := since()
		if d.runs.Add(1) == 1 {
			d.firstRun.Store(int64(now) + 1)
			d.firstGen.Store(gen)
		}
	}
	nativeJobs := make([]func(), n)
	for i := range nativeJobs {
		nativeJobs[i] = func() { record(i, -1) }
	}
	timeout := func(r *rand.Rand) time.Duration {
		return correctMinTimeout + time.Duration(r.Int64N(int64(correctMinTimeout)))
	}
	r0 := rand.New(rand.NewPCG(seed.Uint64(), 1))
	for i := range devs {
		d := timeout(r0)
		now := since()
		devs[i].deadline, devs[i].lastBeat, devs[i].gen = now+d, now, 0
		job := nativeJobs[i]
		if !native {
			job = func() { record(i, 0) }
		}
		if err := t.Add(i, d, job); err != nil {
			return nil, nil, fmt.Errorf("add %d: %w", i, err)
		}
	}

	const drivers = 2
	var beats atomic.Int64
	var opErrs atomic.Int64
	var firstErr atomic.Value
	stopAt := since() + c.CorrectFor
	var wg sync.WaitGroup
	for w := range drivers {
		r := rand.New(rand.NewPCG(seed.Uint64(), uint64(w)+2))
		wg.Go(func() {
			for since() < stopAt {
				for i := w; i < n; i += drivers {
					d := &devs[i]
					now := since()
					if now-d.lastBeat < 100*time.Millisecond && r.IntN(10) >= 3 {
						continue
					}
					if now >= d.deadline {
						d.excluded = true
					}
					to := timeout(r)
					d.gen++
					gen := d.gen
					d.lastBeat, d.deadline = now, now+to
					var err error
					if native {
						err = t.Reset(i, to)
					} else {
						t.Cancel(i)
						err = t.Add(i, to, func() { record(i, gen) })
					}
					noteProgress(int(beats.Add(1)))
					if err != nil && opErrs.Add(1) == 1 {
						firstErr.Store(err)
					}
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
	wg.Wait()

	var latest time.Duration
	for i := range devs {
		latest = max(latest, devs[i].deadline)
	}
	time.Sleep(latest - since() + im.Tick + lostAfter)

	m := metrics{"heartbeats": float64(beats.Load()), "op_errors": float64(opErrs.Load())}
	var lost, dups, early, stale, excluded int
	var lateMax, earlyMax time.Duration
	for i := range devs {
		d := &devs[i]
		if d.excluded {
			excluded++
			continue
		}
		k := d.runs.Load()
		if k == 0 {
			lost++
			continue
		}
		dups += int(k - 1)
		at := time.Duration(d.firstRun.Load() - 1)
		if at < d.deadline-im.Tick {
			early++
			earlyMax = max(earlyMax, d.deadline-at)
			if at < d.lastBeat || (!native && d.firstGen.Load() != d.gen) {
				stale++
			}
			continue
		}
		lateMax = max(lateMax, at-d.deadline)
	}
	m["lost"], m["duplicates"], m["early"], m["stale"] = float64(lost), float64(dups), float64(early), float64(stale)
	m["failures"] = float64(lost + dups + early)
	m["excluded"] = float64(excluded)
	m["late_max_ms"] = float64(lateMax) / 1e6
	m["early_max_ms"] = float64(earlyMax) / 1e6
	var notes []string
	if e := opErrs.Load(); e > 0 {
		notes = append(notes, fmt.Sprintf("%d heartbeat calls returned an error; first: %v", e, firstErr.Load()))
	}
	if lost+dups+early > 0 {
		notes = append(notes, fmt.Sprintf("FAILED: %d lost, %d duplicate runs, %d early (%d stale) of %d devices",
			lost, dups, early, stale, n-excluded))
	}
	return m, notes, nil
}
