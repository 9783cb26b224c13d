package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-schedule/schedule/bench/loadtest"
)

// result is what the phases found for one system.
type result struct {
	System  string
	Skipped string // why the system was not measured, or ""

	// Scale.
	ScaleN        int
	AddRate       float64 // jobs a second, from the producer
	WorkerPerJob  float64 // bytes of the workers' resident sets per pending job
	EngineRSSJob  float64 // bytes of the engine's resident set per pending job
	StorePerJob   float64 // bytes of the engine's store per pending job
	QuietN1       int     // jobs pending in the first quiet window
	QuietIn1      int64   // messages the engine received over it
	QuietIn2      int64   // the same with ScaleN pending
	QuietPerJob   float64 // (QuietIn2 − QuietIn1) / (ScaleN − QuietN1)
	scaleMeasured bool

	// Stream.
	Stream         streamResult
	streamMeasured bool

	// Kill.
	Kill         outcome
	KillTakeover time.Duration // from the kill to the last late start
	KillLate     bool          // whether any job started late
	KillAddLate  time.Duration // how long after the first due time the adding ended, if it did
	killMeasured bool
	killAsked    bool // the engine was asked about the jobs with no end line

	// Ceiling.
	Steps    []streamResult
	Ceiling  int // the highest rate sustained, or 0
	ceilDone bool
}

// streamResult is one stream of jobs coming due at a steady rate.
type streamResult struct {
	Rate int
	outcome
	CPU         time.Duration // workers and engine over the stream
	EngineCPU   time.Duration // of CPU, the engine's
	Messages    int64         // the engine's messages over the stream
	ProducerLag time.Duration // the producer's largest lag behind its schedule
	Lead        time.Duration
}

// cpuPerJob returns the CPU per started job in microseconds: a fleet that
// falls behind has not spent the CPU of the jobs it has not started.
func (s streamResult) cpuPerJob() float64 {
	if s.Started == 0 {
		return 0
	}
	return float64(s.CPU.Microseconds()) / float64(s.Started)
}

// streamWait is how long a stream of duration d waits, after its last due
// time, for its jobs to start: at least 30 s, and d if longer.
func streamWait(d time.Duration) time.Duration { return max(30*time.Second, d) }

// p99 returns the p99 lateness, and false if nothing started.
func (s streamResult) p99() (time.Duration, bool) { return loadtest.Quantile(s.Lateness, 0.99) }

// sustained reports whether the stream kept p99 lateness within limit,
// lost nothing, and was fed on time.
func (s streamResult) sustained(limit time.Duration) bool {
	p, ok := s.p99()
	return ok && p <= limit && s.Lost == 0 && s.ProducerLag < s.Lead
}

// runLoad runs every phase for every system and returns the report.
func runLoad(ctx context.Context, c config, stderr io.Writer) (*report, error) {
	log := loadtest.Logger(&loadtest.LockedWriter{W: stderr}, "jobload")
	dir := c.Out
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "jobload-"); err != nil {
			return nil, err
		}
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	rep := &report{cfg: c, dir: dir}
	r := &runDir{dir: dir}
	log("outputs in %s", dir)

	var systems []system
	for _, s := range c.Systems {
		switch s {
		case "jobs":
			abs, err := filepath.Abs(c.JobsDir)
			if err != nil {
				return rep, err
			}
			log("building jobworker and jobctl in %s", abs)
			jw, jc, err := buildJobs(ctx, abs, filepath.Join(dir, "bin"))
			if err != nil {
				return rep, err
			}
			systems = append(systems, &jobsSystem{jobworker: jw, jobctl: jc, lease: c.Lease, pool: c.Pool,
				payload: strings.Repeat("p", c.Payload), loadBatch: c.LoadBatch})
		case "asynq":
			bin, ok := findRedis(c.RedisBin)
			if !ok {
				log("%s; the asynq side is skipped", redisInstall)
				rep.results = append(rep.results, &result{System: sysAsynq, Skipped: redisInstall})
				continue
			}
			systems = append(systems, &asynqSystem{redisBin: bin, opts: c.Asynq, payload: c.Payload})
		}
	}
	for _, s := range systems {
		res := &result{System: s.name()}
		rep.results = append(rep.results, res)
		ph := phaser{cfg: c, sys: s, r: r, res: res,
			log: func(f string, a ...any) { log("%s: "+f, append([]any{s.name()}, a...)...) }}
		for _, p := range c.Phases {
			if err := ctx.Err(); err != nil {
				return rep, err
			}
			if err := ph.run(ctx, p); err != nil {
				return rep, fmt.Errorf("%s, %s phase: %w", s.name(), p, err)
			}
		}
	}
	return rep, nil
}

// phaser runs the phases of one system.
type phaser struct {
	cfg config
	sys system
	r   *runDir
	res *result
	log func(format string, args ...any)
}

func (ph *phaser) run(ctx context.Context, phase string) error {
	col := newCollector()
	ph.log("%s: starting the engine and %d workers", phase, ph.cfg.Workers)
	f, err := ph.sys.up(ctx, ph.r, phase, ph.cfg.Workers, col)
	if err != nil {
		return err
	}
	defer f.down()
	switch phase {
	case phaseScale:
		return ph.scale(ctx, f)
	case phaseStream:
		s, err := ph.stream(ctx, f, col, "s", ph.cfg.Rate, ph.cfg.Stream)
		ph.res.Stream, ph.res.streamMeasured = s, err == nil
		return err
	case phaseKill:
		return ph.kill(ctx, f, col)
	case phaseCeiling:
		return ph.ceiling(ctx, f, col)
	}
	return nil
}

// slowJob is how long a slow job's attempt runs, and slowEvery which of
// the kill phase's jobs are slow (every slowEvery-th): they make each
// worker hold attempts in flight when one is killed, which is all that an
// asynq worker holds, and what jobworker's contract lets start again.
const (
	slowJob   = time.Second
	slowEvery = 100
)

// bulk adds jobs from to to named prefix-i, job i due at due(i) and slow
// if slow(i), as fast as the producer takes them, and returns the time it
// took.
func (ph *phaser) bulk(ctx context.Context, f *fleet, prefix string, from, to int, due func(i int) time.Time, slow func(i int) bool) (time.Duration, error) {
	start := time.Now()
	p, err := f.newProducer(ctx, 0)
	if err != nil {
		return 0, err
	}
	last := start
	for i := from; i < to; i++ {
		if err := ctx.Err(); err != nil {
			_, _, _ = p.close()
			return 0, err
		}
		if err := p.add(key(prefix, i), due(i), time.Time{}, slow(i)); err != nil {
			_, _, _ = p.close()
			return 0, err
		}
		if time.Since(last) > 5*time.Second {
			ph.log("adding: %s of %s handed to the producer", loadtest.Commas(int64(i-from)), loadtest.Commas(int64(to-from)))
			last = time.Now()
		}
	}
	added, _, err := p.close()
	if err != nil {
		return 0, err
	}
	if added != to-from {
		return 0, fmt.Errorf("the producer added %d jobs of %d", added, to-from)
	}
	return time.Since(start), nil
}

// maxBatchEvery is the longest a stream's producer holds the jobs it is
// handed before it sends them (a quarter of -lead, at most this).
const maxBatchEvery = 500 * time.Millisecond

// key names job i of a phase.
func key(prefix string, i int) string { return fmt.Sprintf("%s-%07d", prefix, i) }

// settle waits until the workers' resident sets have stopped growing (by
// less than 1% over 3 s), or for the config's settle wait at most, and
// returns their sum.
func (ph *phaser) settle(f *fleet) int64 {
	const every, still = 500 * time.Millisecond, 3 * time.Second
	ws := group(f.workers)
	deadline := time.Now().Add(ph.cfg.settleWait)
	ref, since := ws.rss(), time.Now()
	for time.Now().Before(deadline) {
		time.Sleep(every)
		now := ws.rss()
		if float64(now) > float64(ref)*1.01 {
			ref, since = now, time.Now()
			continue
		}
		if time.Since(since) >= still {
			return now
		}
	}
	return ws.rss()
}

// quiet returns the messages the engine receives over the quiet window.
func (ph *phaser) quiet(f *fleet) (int64, error) {
	in0, _, err := f.eng.counts()
	if err != nil {
		return 0, err
	}
	time.Sleep(ph.cfg.Quiet)
	in1, _, err := f.eng.counts()
	return in1 - in0, err
}

func (ph *phaser) scale(ctx context.Context, f *fleet) error {
	c, res := ph.cfg, ph.res
	n1 := c.Scale / 10
	rss0 := ph.settle(f)
	engRSS0 := procRSS(f.eng.proc().pid())
	store0, err := f.eng.store()
	if err != nil {
		return err
	}
	due := time.Now().Add(2 * time.Hour)
	at := func(int) time.Time { return due }
	fast := func(int) bool { return false }
	ph.log("scale: adding %s jobs", loadtest.Commas(int64(n1)))
	d1, err := ph.bulk(ctx, f, "q", 0, n1, at, fast)
	if err != nil {
		return err
	}
	ph.settle(f)
	ph.log("scale: quiet window of %v with %s pending", c.Quiet, loadtest.Commas(int64(n1)))
	if res.QuietIn1, err = ph.quiet(f); err != nil {
		return err
	}
	ph.log("scale: adding %s more jobs", loadtest.Commas(int64(c.Scale-n1)))
	d2, err := ph.bulk(ctx, f, "q", n1, c.Scale, at, fast)
	if err != nil {
		return err
	}
	res.AddRate = float64(c.Scale) / (d1 + d2).Seconds()
	ph.log("scale: %s added at %.0f a second; waiting for the workers' memory to settle", loadtest.Commas(int64(c.Scale)), res.AddRate)
	rss1 := ph.settle(f)
	engRSS1 := procRSS(f.eng.proc().pid())
	store1, err := f.eng.store()
	if err != nil {
		return err
	}
	ph.log("scale: quiet window of %v with %s pending", c.Quiet, loadtest.Commas(int64(c.Scale)))
	if res.QuietIn2, err = ph.quiet(f); err != nil {
		return err
	}
	res.ScaleN, res.QuietN1 = c.Scale, n1
	res.WorkerPerJob = float64(rss1-rss0) / float64(c.Scale)
	res.EngineRSSJob = float64(engRSS1-engRSS0) / float64(c.Scale)
	res.StorePerJob = float64(store1-store0) / float64(c.Scale)
	res.QuietPerJob = float64(max(0, res.QuietIn2-res.QuietIn1)) / float64(c.Scale-n1)
	res.scaleMeasured = true
	return nil
}

// stream feeds n = rate × d jobs named prefix-i, job i due at t0 + i/rate,
// each handed to the producer lead before its due time, and waits for
// them to start.
func (ph *phaser) stream(ctx context.Context, f *fleet, col *collector, prefix string, rate int, d time.Duration) (streamResult, error) {
	c := ph.cfg
	n := int(int64(rate) * int64(d) / int64(time.Second))
	s := streamResult{Rate: rate, Lead: c.Lead}
	spacing := time.Second / time.Duration(rate)
	p, err := f.newProducer(ctx, min(c.Lead/4, maxBatchEvery))
	if err != nil {
		return s, err
	}
	_, all0, err := f.eng.counts()
	if err != nil {
		return s, err
	}
	cpu0, eng0 := f.cpu(), procCPU(f.eng.proc().pid())
	// The collector may hold an earlier step's jobs.
	base := col.startedCount()
	t0 := time.Now().Add(c.Lead + 200*time.Millisecond)
	dueOf := func(i int) time.Time { return t0.Add(time.Duration(i) * spacing) }
	ph.log("stream: %s jobs, %d a second for %v, each added %v ahead", loadtest.Commas(int64(n)), rate, d, c.Lead)
	tick := time.NewTicker(5 * time.Millisecond)
	lastLog := time.Now()
	for i := 0; i < n; {
		select {
		case <-ctx.Done():
			_, _, _ = p.close()
			return s, ctx.Err()
		case <-tick.C:
		}
		now := time.Now()
		for ; i < n && !dueOf(i).Add(-c.Lead).After(now); i++ {
			if err := p.add(key(prefix, i), dueOf(i), dueOf(i).Add(-c.Lead), false); err != nil {
				tick.Stop()
				_, _, _ = p.close()
				return s, err
			}
		}
		if err := p.flush(); err != nil {
			tick.Stop()
			_, _, _ = p.close()
			return s, err
		}
		if time.Since(lastLog) >= 5*time.Second {
			ph.log("stream: %s added, %s started", loadtest.Commas(int64(i)), loadtest.Commas(int64(col.startedCount()-base)))
			lastLog = time.Now()
		}
	}
	tick.Stop()
	added, lag, err := p.close()
	s.ProducerLag = lag
	if err != nil {
		return s, err
	}
	if added != n {
		return s, fmt.Errorf("the producer added %d jobs of %d", added, n)
	}
	col.waitFor(ctx, dueOf(n-1).Add(streamWait(d)), func() bool { return col.startedCount() >= base+n })
	if err := ctx.Err(); err != nil {
		return s, err
	}
	s.CPU, s.EngineCPU = f.cpu()-cpu0, procCPU(f.eng.proc().pid())-eng0
	_, all1, err := f.eng.counts()
	if err != nil {
		return s, err
	}
	s.Messages = all1 - all0
	s.outcome = col.outcome(n, func(i int) string { return key(prefix, i) })
	p99, _ := s.p99()
	ph.log("stream: %d a second: %s of %s started, p99 lateness %v, producer lag %v", rate,
		loadtest.Commas(int64(s.Started)), loadtest.Commas(int64(n)), p99, lag.Round(time.Millisecond))
	return s, nil
}

// killedWorker is the worker the kill phase kills.
const killedWorker = 0

func (ph *phaser) kill(ctx context.Context, f *fleet, col *collector) error {
	c, res := ph.cfg, ph.res
	n := c.KillDue
	if far := c.KillJobs - n; far > 0 {
		// The rest of the pending jobs, due long after the phase: the
		// killed worker holds its share of them too.
		later := time.Now().Add(2 * time.Hour)
		ph.log("kill: adding %s jobs due in 2 h", loadtest.Commas(int64(far)))
		if _, err := ph.bulk(ctx, f, "kf", 0, far, func(int) time.Time { return later }, func(int) bool { return false }); err != nil {
			return err
		}
	}
	first := time.Now().Add(c.KillLoad)
	spacing := c.KillSpan / time.Duration(n)
	dueOf := func(i int) time.Time { return first.Add(time.Duration(i) * spacing) }
	ph.log("kill: adding %s jobs due over %v from %v on", loadtest.Commas(int64(n)), c.KillSpan, c.KillLoad)
	slow := func(i int) bool { return i%slowEvery == 0 }
	if _, err := ph.bulk(ctx, f, "k", 0, n, dueOf, slow); err != nil {
		return err
	}
	if late := time.Since(first); late > 0 {
		res.KillAddLate = late
		ph.log("kill: the jobs were added %v after the first was due (raise -kill-load)", late.Round(time.Millisecond))
	}
	killAt := first.Add(c.KillSpan / 4)
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Until(killAt)):
	}
	killed := time.Now()
	killWorker(f, killedWorker)
	ph.log("kill: worker %d killed with SIGKILL, %s of %s jobs started so far", killedWorker, loadtest.Commas(int64(col.startedCount())), loadtest.Commas(int64(n)))
	wait := c.killBound() + 10*time.Second
	if ph.sys.name() == sysAsynq {
		wait = c.PeerWait
	}
	deadline := dueOf(n - 1).Add(wait)
	for !col.waitFor(ctx, earliest(deadline, time.Now().Add(10*time.Second)), func() bool { return col.finishedCount() >= n }) {
		if !time.Now().Before(deadline) || ctx.Err() != nil {
			break
		}
		ph.log("kill: %s of %s done, waiting up to %v more", loadtest.Commas(int64(col.finishedCount())), loadtest.Commas(int64(n)), time.Until(deadline).Round(time.Second))
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	keys := func(i int) string { return key("k", i) }
	res.Kill = col.outcome(n, keys)
	if f.ended != nil {
		res.killAsked = true
		// An attempt of the killed worker that recorded its end in the
		// engine and was killed before it printed it: the end line is
		// lost, the job is not.
		for _, k := range col.unfinishedOn(n, keys, nodeName(killedWorker)) {
			gone, err := f.ended(ctx, k)
			if err != nil {
				return err
			}
			if gone {
				res.Kill.Unfinished--
				res.Kill.EndedUnseen++
			}
		}
	}
	if last, ok := col.lastRecovery(n, keys, lateStart); ok {
		res.KillTakeover, res.KillLate = time.UnixMilli(last).Sub(killed), true
	}
	res.killMeasured = true
	ph.log("kill: %s lost, %s ended with the end line lost in the kill, %s jobs started again, last recovered job started %v after the kill",
		loadtest.Commas(int64(res.Kill.Unfinished)), loadtest.Commas(int64(res.Kill.EndedUnseen)),
		loadtest.Commas(int64(res.Kill.Repeated)), res.KillTakeover.Round(time.Millisecond))
	return nil
}

func (ph *phaser) ceiling(ctx context.Context, f *fleet, col *collector) error {
	res := ph.res
	for i, rate := range ph.cfg.Ceiling {
		s, err := ph.stream(ctx, f, col, fmt.Sprintf("c%d", i), rate, ph.cfg.Step)
		if err != nil {
			return err
		}
		res.Steps = append(res.Steps, s)
		if !s.sustained(ceilingP99) {
			break
		}
		res.Ceiling = rate
	}
	res.ceilDone = true
	return nil
}

// earliest returns the earlier of a and b.
func earliest(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
