package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"syscall"
	"time"
)

// childEnv, set in a process's environment, makes the program a child that
// measures one implementation at one size and writes a result as one JSON
// line on standard output.
const childEnv = "GO_SCHEDULE_CURVE_CHILD"

// result is one child's measurement. Costs per operation are the process's
// CPU time (getrusage) over the operations and the wait until the
// implementation has applied them, divided by their number: for our
// schedulers that includes the owner goroutine's share, which runs on
// another core while the caller calls.
type result struct {
	Impl    string `json:"impl"`
	N       int    `json:"n"`
	Skipped string `json:"skipped,omitempty"`
	Error   string `json:"error,omitempty"`

	// FillNs is the wall time per add while the n tasks were added, from
	// none, the slab's and the heap's growth included.
	FillNs float64 `json:"fill_ns"`
	// CPU ns per operation, with n tasks pending.
	Add          float64 `json:"add_ns"`
	ResetLater   float64 `json:"reset_later_ns"`
	ResetEarlier float64 `json:"reset_earlier_ns"`
	Cancel       float64 `json:"cancel_ns"`
	Fire         float64 `json:"fire_ns"`
	// PassMs is the CPU time of the pass that catches up with deadlines
	// moved earlier (ours: a heap rebuild; the runtime's: adjusting its
	// timer heaps), with n pending, in milliseconds.
	PassMs float64 `json:"pass_ms"`

	// Bytes per pending task, its handle (TaskID or *time.Timer) and its
	// job's closure included: Go heap after a full collection, its
	// scannable part (runtime/metrics /gc/scan/heap), heap objects, the
	// process's resident set after that collection and at its peak.
	HeapB    float64 `json:"heap_b"`
	ScanB    float64 `json:"scan_b"`
	Objects  float64 `json:"objects"`
	RSSB     float64 `json:"rss_b"`
	PeakRSSB float64 `json:"peak_rss_b"`

	// A forced full collection with n pending, the median of fullGCs: its
	// GC CPU time, its wall time and its stop-the-world pauses.
	GCCPUMs   float64 `json:"gc_cpu_ms"`
	GCWallMs  float64 `json:"gc_wall_ms"`
	GCPauseUs float64 `json:"gc_pause_us"`
	// Under the steady load: GC CPU as a percentage of the CPU available
	// (GOMAXPROCS × wall), over whole cycles; the cycles it saw and the
	// window's length.
	// GCCycleS is the time between cycles the load should give, from the
	// heap goal and the load's allocation rate; a window is run only when
	// it fits.
	GCShare   float64 `json:"gc_share_pct"`
	GCCycles  int     `json:"gc_cycles"`
	GCWindowS float64 `json:"gc_window_s"`
	GCCycleS  float64 `json:"gc_cycle_s"`

	WallS float64 `json:"wall_s"`
}

// childConfig is what the parent passes to a child, as flags.
type childConfig struct {
	impl    string
	n       int
	ops     int           // operations per measured phase
	batch   int           // most extra tasks at once (add, cancel, fire rounds)
	window  time.Duration // longest steady-load window
	cycles  int           // GC cycles the steady window waits for
	garbage int           // bytes each heartbeat allocates
	profile string        // phase to profile
	profOut string        // file for the profile
	seed    uint64
}

// flags defines the measurement's flags, which the parent passes on, and
// with childOnly the flags only a child takes (its step and profile).
func (c *childConfig) flags(fs *flag.FlagSet, childOnly bool) {
	if childOnly {
		fs.StringVar(&c.impl, "impl", "lazy", "implementation")
		fs.IntVar(&c.n, "n", 1000, "pending tasks")
		fs.StringVar(&c.profile, "profile-phase", "", "phase to profile: fill, gc, add, cancel, reset-later, reset-earlier, pass, fire, steady")
		fs.StringVar(&c.profOut, "profile-out", "", "file for the phase's CPU profile")
	}
	fs.IntVar(&c.ops, "ops", 100_000, "operations per phase")
	fs.IntVar(&c.batch, "batch", 10_000, "most extra tasks at once in the add, cancel and fire rounds")
	fs.DurationVar(&c.window, "gc-window", 10*time.Second, "longest steady-load window")
	fs.IntVar(&c.cycles, "gc-cycles", 2, "GC cycles the steady-load window waits for")
	fs.IntVar(&c.garbage, "garbage", 4096, "bytes each heartbeat of the steady load allocates")
	fs.Uint64Var(&c.seed, "seed", 1, "random seed")
}

func (c childConfig) args() []string {
	return []string{
		"-impl", c.impl, "-n", fmt.Sprint(c.n), "-ops", fmt.Sprint(c.ops), "-batch", fmt.Sprint(c.batch),
		"-gc-window", c.window.String(), "-gc-cycles", fmt.Sprint(c.cycles), "-garbage", fmt.Sprint(c.garbage),
		"-profile-phase", c.profile, "-profile-out", c.profOut, "-seed", fmt.Sprint(c.seed),
	}
}

// childMain runs a child: it measures and writes its result to stdout.
func childMain(args []string, stdout, stderr io.Writer) int {
	var c childConfig
	fs := flag.NewFlagSet("curve child", flag.ContinueOnError)
	fs.SetOutput(stderr)
	c.flags(fs, true)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	start := time.Now()
	r := result{Impl: c.impl, N: c.n}
	if err := measure(c, &r, stderr); err != nil {
		r.Error = err.Error()
	}
	r.WallS = time.Since(start).Seconds()
	if err := json.NewEncoder(stdout).Encode(r); err != nil {
		fmt.Fprintln(stderr, "writing result:", err)
		return 1
	}
	return 0
}

// Deadlines: the n pending tasks are due between base and base+spread from
// the start, far beyond the child's life, so that none fires unasked.
const (
	base   = time.Hour
	spread = time.Hour
	// fireLead is how far out the fire rounds' tasks are due, and fireSpan
	// the span they are spread over.
	fireLead = 200 * time.Millisecond
	fireSpan = 100 * time.Millisecond
	// passLead is how far out the pass measurement moves one deadline:
	// beyond a second, so that our Reset leaves it to the owner's deferred
	// pass (inbox.go's deferMoves) rather than sending a request.
	passLead = 1100 * time.Millisecond
	// fullGCs is how many full collections the figures are the median of.
	fullGCs = 3
	// maxFireRounds bounds the fire rounds, each of which waits fireLead.
	maxFireRounds = 5
)

// phase runs f as one measured phase: it returns the process's CPU time
// over it, and profiles it when asked.
func phase(c childConfig, name string, log io.Writer, f func() error) (time.Duration, error) {
	fmt.Fprintf(log, "    %s %d: %s\n", c.impl, c.n, name)
	if c.profile == name && c.profOut != "" {
		pf, err := os.Create(c.profOut)
		if err != nil {
			return 0, err
		}
		if err := pprof.StartCPUProfile(pf); err != nil {
			pf.Close()
			return 0, err
		}
		defer func() {
			pprof.StopCPUProfile()
			pf.Close()
		}()
	}
	before := cpuTime()
	err := f()
	return cpuTime() - before, err
}

func measure(c childConfig, r *result, log io.Writer) error {
	n, k := c.n, min(c.n, c.batch)
	rng := rand.New(rand.NewPCG(c.seed, uint64(c.n)))
	runtime.GC()
	heap0, obj0 := heapLive()
	scan0 := readMetric("/gc/scan/heap:bytes")
	rss0, _ := rss()

	t, err := newTimers(c.impl, n+k)
	if err != nil {
		return err
	}
	defer t.close()

	// Fill.
	var fillWall time.Duration
	_, err = phase(c, "fill", log, func() error {
		t0 := time.Now()
		for i := range n {
			if err := t.add(i, base+time.Duration(rng.Int64N(int64(spread)))); err != nil {
				return err
			}
		}
		err := t.settle(n)
		fillWall = time.Since(t0)
		return err
	})
	if err != nil {
		return err
	}
	r.FillNs = float64(fillWall.Nanoseconds()) / float64(n)

	// Full collections, the median of fullGCs, then the memory they leave.
	var cpus, walls, pauses []float64
	if _, err := phase(c, "gc", log, func() error {
		for range fullGCs {
			var ms0, ms1 runtime.MemStats
			runtime.ReadMemStats(&ms0)
			gc0 := readMetric("/cpu/classes/gc/total:cpu-seconds")
			t0 := time.Now()
			runtime.GC()
			walls = append(walls, float64(time.Since(t0).Microseconds())/1e3)
			runtime.ReadMemStats(&ms1)
			cpus = append(cpus, (readMetric("/cpu/classes/gc/total:cpu-seconds")-gc0)*1e3)
			pauses = append(pauses, float64(ms1.PauseTotalNs-ms0.PauseTotalNs)/1e3)
		}
		return nil
	}); err != nil {
		return err
	}
	r.GCCPUMs, r.GCWallMs, r.GCPauseUs = median(cpus), median(walls), median(pauses)
	heap1, obj1 := heapLive()
	r.HeapB = per(heap1-heap0, n)
	r.Objects = per(obj1-obj0, n)
	r.ScanB = (readMetric("/gc/scan/heap:bytes") - scan0) / float64(n)
	if rss1, ok := rss(); ok {
		r.RSSB = per(rss1-rss0, n)
	}

	// Adds and cancels of k extra tasks at a time, with n pending.
	rounds := max(1, c.ops/k)
	var addCPU, cancelCPU time.Duration
	for range rounds {
		d, err := phase(c, "add", io.Discard, func() error {
			for j := range k {
				if err := t.add(n+j, base+time.Duration(rng.Int64N(int64(spread)))); err != nil {
					return err
				}
			}
			return t.settle(n + k)
		})
		if err != nil {
			return err
		}
		addCPU += d
		d, err = phase(c, "cancel", io.Discard, func() error {
			for j := range k {
				if !t.cancel(n + j) {
					return fmt.Errorf("cancel of extra task %d reported it not pending", j)
				}
			}
			return t.settle(n)
		})
		if err != nil {
			return err
		}
		cancelCPU += d
	}
	fmt.Fprintf(log, "    %s %d: add and cancel, %d rounds of %d\n", c.impl, n, rounds, k)
	r.Add = perOp(addCPU, rounds*k)
	r.Cancel = perOp(cancelCPU, rounds*k)

	// Reset to a later deadline, then to an earlier one a second or more
	// out, on random pending tasks. Each later reset lands beyond every
	// deadline so far and each earlier one before every earlier one, so
	// that a task picked twice still moves the way the phase says.
	ops := c.ops
	d, err := phase(c, "reset-later", log, func() error {
		for j := range ops {
			if !t.reset(rng.IntN(n), base+spread+time.Duration(j)*time.Microsecond) {
				return fmt.Errorf("reset later reported the task not pending")
			}
		}
		return t.settle(n)
	})
	if err != nil {
		return err
	}
	r.ResetLater = perOp(d, ops)
	d, err = phase(c, "reset-earlier", log, func() error {
		for j := range ops {
			if !t.reset(rng.IntN(n), base/2-time.Duration(j)*time.Microsecond) {
				return fmt.Errorf("reset earlier reported the task not pending")
			}
		}
		return t.settle(n)
	})
	if err != nil {
		return err
	}
	r.ResetEarlier = perOp(d, ops)

	// The deferred pass: one task moved earlier to passLead from now, which
	// the implementation catches up with, O(n), when it comes due; the
	// phase ends when the task has run, so it holds the pass and one fire.
	d, err = phase(c, "pass", log, func() error {
		done := expectFires(1)
		victim := rng.IntN(n)
		if !t.reset(victim, passLead) {
			return fmt.Errorf("reset for the pass reported the task not pending")
		}
		<-done
		// Put the task back, as another pending one.
		if err := t.add(victim, base+time.Duration(rng.Int64N(int64(spread)))); err != nil {
			return err
		}
		return t.settle(n)
	})
	if err != nil {
		return err
	}
	r.PassMs = float64(d.Microseconds()) / 1e3

	// Fires: k extra tasks due fireLead from now, spread over fireSpan,
	// with n pending. Only the wait for the last of them is measured.
	var fireCPU time.Duration
	fireRounds := max(1, min(maxFireRounds, c.ops/k/2))
	for range fireRounds {
		done := expectFires(k)
		for j := range k {
			if err := t.add(n+j, fireLead+time.Duration(j)*fireSpan/time.Duration(k)); err != nil {
				return err
			}
		}
		d, err := phase(c, "fire", io.Discard, func() error {
			if err := t.settle(n + k); err != nil {
				return err
			}
			select {
			case <-done:
			case <-time.After(time.Minute):
				return fmt.Errorf("fire round: %d of %d jobs ran within a minute", fires.n.Load(), k)
			}
			return t.settle(n)
		})
		if err != nil {
			return err
		}
		fireCPU += d
	}
	fmt.Fprintf(log, "    %s %d: fire, %d rounds of %d\n", c.impl, n, fireRounds, k)
	r.Fire = perOp(fireCPU, fireRounds*k)

	// GC under a steady gateway load: 1% of the keys beat each second,
	// each beat a later Reset and a buffer of garbage, as a packet read
	// allocates one.
	if _, err := phase(c, "steady", log, func() error { return steady(c, t, rng, r) }); err != nil {
		return err
	}
	if peak, ok := peakRSS(); ok {
		r.PeakRSSB = per(peak-rss0, n)
	}
	return nil
}

// steady runs the beats from one full collection's end until c.cycles more
// have ended, or c.window has passed, and takes the GC's share of the CPU
// over the whole cycles it saw.
func steady(c childConfig, t timers, rng *rand.Rand, r *result) error {
	const tick = 10 * time.Millisecond
	perTick := float64(c.n) / 100 * tick.Seconds()
	runtime.GC()
	rate := float64(c.n) / 100 * float64(c.garbage)
	if rate <= 0 {
		return nil
	}
	r.GCCycleS = (readMetric("/gc/heap/goal:bytes") - readMetric("/gc/heap/live:bytes")) / rate
	if r.GCCycleS > c.window.Seconds() {
		// Not one cycle would end within the window: the collector's share
		// of this load is nil at this size.
		return nil
	}
	startGC, startAll := readMetric("/cpu/classes/gc/total:cpu-seconds"), readMetric("/cpu/classes/total:cpu-seconds")
	cycles0 := readMetric("/gc/cycles/total:gc-cycles")
	endGC, endAll, seen := startGC, startAll, 0
	start := time.Now()
	next := start
	owed, j := 0.0, 0
	// The beats' buffers go round a small ring: each lives until its
	// place comes round again, as a packet's buffer lives for its read.
	ring := make([][]byte, 64)
	defer runtime.KeepAlive(ring)
	for time.Since(start) < c.window && seen < c.cycles {
		owed += perTick
		for ; owed >= 1; owed-- {
			j++
			if !t.reset(rng.IntN(c.n), base+spread+time.Hour+time.Duration(j)*time.Microsecond) {
				return fmt.Errorf("steady beat reported the task not pending")
			}
			ring[j%len(ring)] = make([]byte, c.garbage)
		}
		if cy := int(readMetric("/gc/cycles/total:gc-cycles") - cycles0); cy > seen {
			// The GC's CPU figures are brought up to date at each cycle's
			// end: read them at a boundary.
			seen = cy
			endGC, endAll = readMetric("/cpu/classes/gc/total:cpu-seconds"), readMetric("/cpu/classes/total:cpu-seconds")
		}
		next = next.Add(tick)
		time.Sleep(time.Until(next))
	}
	r.GCCycles = seen
	r.GCWindowS = time.Since(start).Seconds()
	if endAll > startAll {
		r.GCShare = 100 * (endGC - startGC) / (endAll - startAll)
	}
	return nil
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

func per(delta uint64, n int) float64 { return float64(int64(delta)) / float64(n) }

func perOp(d time.Duration, ops int) float64 { return float64(d.Nanoseconds()) / float64(ops) }

// cpuTime is the process's user plus system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// heapLive returns the heap's live bytes and objects; called right after a
// full collection.
func heapLive() (bytes, objects uint64) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc, ms.HeapObjects
}

// readMetric reads one runtime/metrics value as a float.
func readMetric(name string) float64 {
	s := []metrics.Sample{{Name: name}}
	metrics.Read(s)
	switch s[0].Value.Kind() {
	case metrics.KindUint64:
		return float64(s[0].Value.Uint64())
	case metrics.KindFloat64:
		return s[0].Value.Float64()
	}
	return 0
}
