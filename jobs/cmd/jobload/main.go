// Command jobload load-tests go-schedule's durable delayed jobs (the
// jobs module: jobworker processes on NATS JetStream, jobctl as the
// producer) and, side by side in the same table, asynq v0.26 on a real
// redis-server, in four phases:
//
//   - scale: -scale jobs pending (due in two hours) over -workers workers:
//     the memory per pending job in the workers (their resident sets, from
//     /proc) and in the engine (the NATS store directory's size, Redis's
//     used_memory), the producer's add rate, and the quiet check: the
//     messages the engine receives over -quiet with a tenth of the jobs
//     pending and with all of them, whose difference per pending job must
//     be 0;
//   - stream: -rate jobs a second coming due for -stream, each added -lead
//     before its due time: lateness p50, p99 and max (each first start's
//     time minus its due time), the CPU per job of the workers and the
//     engine together (from /proc/PID/stat of every one of their
//     processes), and the engine's messages per job;
//   - kill: -kill-jobs jobs pending, -kill-due of them (a tenth by
//     default) due over -kill-span and the others in two hours, and one
//     worker killed with SIGKILL a quarter of the way into the span; of
//     the jobs due in it: the time from the kill until the last recovered
//     job started (a job started again after its attempt was abandoned, or
//     first started more than 250 ms after its due time), jobs lost (no
//     done line, and, for jobworker, a record still in the engine: a
//     killed worker may record an attempt's end and die before it prints
//     the line), and jobs started again. Every 100th of them runs for a
//     second, so that each worker has attempts in flight when one is
//     killed: an asynq worker holds nothing else, while a jobworker also
//     holds the pending jobs it will fire;
//   - ceiling: the stream at each rate of -ceiling in turn, for -step each,
//     up to the first whose p99 lateness passes 100 ms: the highest rate
//     sustained.
//
// The go-schedule side is driven only through its commands' contract: it
// builds jobworker and jobctl from the jobs module (-jobs), starts
// -workers jobworker processes with -nats, and feeds jobctl load. Its
// engine is a NATS server with JetStream in a process of its own (this
// program started again), so that the engine's CPU is read apart from the
// workers' and the producer's, and counted with the workers', as Redis's
// is with asynq's workers. The asynq side is the same number of asynq
// worker processes (this program again, whose handler prints jobworker's
// start line) on a redis-server that this command starts on a loopback
// port, and an asynq.Client in this process as the producer. The asynq
// options are printed with the table.
//
// Every phase starts a fresh engine and fresh workers for each system.
// The raw outputs (every process's standard output, one JSON object a
// line, and its standard error) and the report go to -out, a new
// temporary directory by default, which the report names.
//
// Usage:
//
//	cd jobs/cmd/jobload && go run . [flags]
//
// The defaults are the sizes (1,000,000 pending; 10,000 a second
// for 60 s; 100,000 pending for the kill); -small sets a run of a few
// seconds for CI, and any size flag given beside it wins.
//
// The last line of standard error is the verdict, PASS or FAIL against the
// targets: lateness p99 ≤ 10 ms in the stream; CPU per job no more than
// asynq's and Redis's; at most 300 B per pending job in the workers at
// 100,000 pending or more, with 100-byte payloads; the killed worker's late
// jobs all started within 2×lease + 5 s of the kill, with none lost; no
// job lost in the stream; and, in the quiet check, engine messages that do
// not grow with the pending jobs (fewer than one more per hundred pending
// jobs, or within the window's jitter: a tenth of the first window's count
// plus 3). With -judge counts, only the counts (jobs lost, attempts started
// twice, the quiet messages) decide it; the figures of time, CPU and memory
// are shown and not judged. The exit status is 0 on PASS, 1 on
// FAIL or a failed run, 2 for invalid flags.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-schedule/schedule/bench/loadtest"
)

func main() { loadtest.Main(run) }

// The phases of a run, in the order they run.
const (
	phaseScale   = "scale"
	phaseStream  = "stream"
	phaseKill    = "kill"
	phaseCeiling = "ceiling"
)

var allPhases = []string{phaseScale, phaseStream, phaseKill, phaseCeiling}

// config is a run's.
type config struct {
	JobsDir    string // the jobs module
	Out        string
	Systems    []string
	Phases     []string
	Workers    int
	Lease      time.Duration
	Pool       int // jobworker -workers
	Payload    int
	Scale      int
	Quiet      time.Duration
	Rate       int
	Stream     time.Duration
	Lead       time.Duration
	KillJobs   int
	KillDue    int // of KillJobs, those due over KillSpan
	KillSpan   time.Duration
	KillLoad   time.Duration
	PeerWait   time.Duration
	Ceiling    []int
	Step       time.Duration
	RedisBin   string
	LoadBatch  int  // lines per jobctl load process, 0: no limit
	CountsOnly bool // -judge counts
	Asynq      asynqOptions
	settleWait time.Duration
}

// The targets of the issue, which the verdict checks.
const (
	// targetP99 is the stream's largest p99 lateness.
	targetP99 = 10 * time.Millisecond
	// ceilingP99 is the p99 lateness a rate must keep to count as
	// sustained in the ceiling phase.
	ceilingP99 = 100 * time.Millisecond
	// targetWorkerBytes is the most a worker may hold per pending job.
	targetWorkerBytes = 300
	// memoryJudgedFrom is the least scale at which the memory per job is
	// judged: below it, a process's own baseline and the garbage
	// collector's slack weigh more than the jobs.
	memoryJudgedFrom = 100_000
	// quietPerJobs: the quiet check passes when the engine received fewer
	// than one message per this many pending jobs more with all of them
	// pending than with a tenth, or no more than the window's own jitter
	// (see quietJitter). A design that sent the engine anything per pending
	// job would send at least one message per job in the window, a hundred
	// times this bound; the bound leaves room for lease refreshes falling
	// on the window's edges differently, which at CI's size (5,000 jobs, a
	// 2 s window) move the count by more than one per thousand jobs.
	quietPerJobs = 100
	// lateStart is how late after its due time a first start counts as
	// late in the kill phase: a job that the killed worker held until
	// another took it over. It lies above a healthy fleet's lateness at
	// the rates of the kill phase and below the shortest takeover, a
	// lease of 1 s; the last takeover it misses started within lateStart
	// of the takeover's end.
	lateStart = 250 * time.Millisecond
)

// quietJitter is how many more messages a quiet window may see than
// the one before it with the same work: leases and heartbeats do not fall
// on the window's edges the same way twice. It is a tenth of the first
// window's count, plus 3.
func quietJitter(first int64) int64 { return first/10 + 3 }

// quietOK reports whether the engine's messages did not grow with the
// pending jobs: from first, over a quiet window with n1 pending, to
// second, with n2.
func quietOK(first, second int64, n1, n2 int) bool {
	grew := second - first
	return grew <= quietJitter(first) || float64(grew)*quietPerJobs < float64(n2-n1)
}

// killBound is the bound on a takeover: 2×lease + 5 s.
func (c config) killBound() time.Duration { return 2*c.Lease + 5*time.Second }

func (c config) has(phase string) bool { return slices.Contains(c.Phases, phase) }

func parseFlags(args []string, output io.Writer) (config, error) {
	c := config{JobsDir: filepath.Join("..", ".."), Workers: 3, Lease: 5 * time.Second, Pool: 16, Payload: 100,
		Scale: 1_000_000, Quiet: 10 * time.Second, Rate: 10_000, Stream: 60 * time.Second, Lead: 3 * time.Second,
		KillJobs: 100_000, KillSpan: 40 * time.Second, KillLoad: 30 * time.Second, PeerWait: 4 * time.Minute,
		Ceiling: []int{1000, 2000, 5000, 10_000, 20_000, 40_000}, Step: 10 * time.Second,
		Asynq: asynqOptions{Concurrency: 64, CheckInterval: 100 * time.Millisecond}, settleWait: time.Minute}
	fs := loadtest.NewFlagSet("jobload", output,
		"Load-tests go-schedule's durable delayed jobs (jobworker and jobctl on NATS JetStream)",
		"against asynq v0.26 on redis-server: scale, stream, kill and ceiling, one table.")
	systems, phases, ceiling := "jobs,asynq", strings.Join(allPhases, ","), joinInts(c.Ceiling)
	small, judge := false, "all"
	fs.StringVar(&c.JobsDir, "jobs", c.JobsDir, "`dir`ectory of the jobs module, where jobworker and jobctl are built")
	fs.StringVar(&c.Out, "out", "", "`dir`ectory for the raw outputs and the report (default: a new temporary directory)")
	fs.StringVar(&systems, "systems", systems, "systems to measure: jobs, asynq, or both")
	fs.StringVar(&phases, "phases", phases, "phases to run, in this order: scale, stream, kill, ceiling")
	fs.BoolVar(&small, "small", false, "CI sizes: a few seconds and a few thousand jobs a phase (size flags given too win)")
	fs.IntVar(&c.Workers, "workers", c.Workers, "worker processes of each system")
	fs.DurationVar(&c.Lease, "lease", c.Lease, "jobworker -lease, whole seconds")
	fs.IntVar(&c.Pool, "pool", c.Pool, "jobworker -workers: attempts each worker runs at once")
	fs.IntVar(&c.Payload, "payload", c.Payload, "payload `bytes` of every job")
	fs.IntVar(&c.Scale, "scale", c.Scale, "jobs pending in the scale phase")
	fs.DurationVar(&c.Quiet, "quiet", c.Quiet, "the quiet window of the scale phase")
	fs.IntVar(&c.Rate, "rate", c.Rate, "jobs a second coming due in the stream phase")
	fs.DurationVar(&c.Stream, "stream", c.Stream, "duration of the stream phase")
	fs.DurationVar(&c.Lead, "lead", c.Lead, "how long before its due time each streamed job is added")
	fs.IntVar(&c.KillJobs, "kill-jobs", c.KillJobs, "jobs pending when a worker is killed")
	fs.IntVar(&c.KillDue, "kill-due", 0, "of -kill-jobs, how many come due over -kill-span, the others in 2 h (default a tenth)")
	fs.DurationVar(&c.KillSpan, "kill-span", c.KillSpan, "the span over which the kill phase's jobs come due")
	fs.DurationVar(&c.KillLoad, "kill-load", c.KillLoad, "time allowed for adding the kill phase's jobs before the first is due")
	fs.DurationVar(&c.PeerWait, "peer-kill-wait", c.PeerWait, "how long after the last due time asynq gets to recover the killed worker's tasks")
	fs.StringVar(&ceiling, "ceiling", ceiling, "rates the ceiling phase steps through, comma-separated, increasing")
	fs.DurationVar(&c.Step, "step", c.Step, "duration of each ceiling step")
	fs.IntVar(&c.LoadBatch, "load-batch", 0, "lines per jobctl load process at most, 0 for no limit (a bulk load is then one process)")
	fs.StringVar(&c.RedisBin, "redis-server", "", "path of redis-server (default: the one on PATH)")
	fs.IntVar(&c.Asynq.Concurrency, "asynq-concurrency", c.Asynq.Concurrency, "asynq Config.Concurrency of each asynq worker")
	fs.DurationVar(&c.Asynq.CheckInterval, "asynq-check", c.Asynq.CheckInterval, "asynq DelayedTaskCheckInterval and TaskCheckInterval")
	fs.StringVar(&judge, "judge", judge, "targets that decide the exit status: all, or counts (jobs lost, attempts\nstarted twice, quiet messages), for a loaded CI machine where time, CPU and\nmemory figures are shown but not judged")
	if err := loadtest.Parse(fs, args); err != nil {
		return c, err
	}
	if judge != "all" && judge != "counts" {
		return c, fmt.Errorf("-judge %q: want all or counts", judge)
	}
	c.CountsOnly = judge == "counts"
	if small {
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		smallSizes := map[string]string{"lease": "1s", "scale": "5000", "quiet": "2s", "rate": "500", "stream": "3s",
			"lead": "1s", "kill-jobs": "5000", "kill-span": "6s", "kill-load": "5s", "peer-kill-wait": "150s",
			"ceiling": "500,1000", "step": "2s"}
		for name, v := range smallSizes {
			if !set[name] {
				if err := fs.Set(name, v); err != nil {
					return c, err
				}
			}
		}
		c.settleWait = 10 * time.Second
		ceiling = fs.Lookup("ceiling").Value.String()
	}
	c.Systems = nil
	for _, s := range strings.Split(systems, ",") {
		if (s != "jobs" && s != "asynq") || slices.Contains(c.Systems, s) {
			return c, fmt.Errorf("-systems %q: want jobs, asynq or jobs,asynq", systems)
		}
		c.Systems = append(c.Systems, s)
	}
	c.Phases = nil
	for _, p := range strings.Split(phases, ",") {
		if !slices.Contains(allPhases, p) || slices.Contains(c.Phases, p) {
			return c, fmt.Errorf("-phases %q: want some of %s", phases, strings.Join(allPhases, ","))
		}
		c.Phases = append(c.Phases, p)
	}
	if c.KillDue == 0 {
		c.KillDue = max(1, c.KillJobs/10)
	}
	c.Ceiling = nil
	for _, s := range strings.Split(ceiling, ",") {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 || (len(c.Ceiling) > 0 && n <= c.Ceiling[len(c.Ceiling)-1]) {
			return c, fmt.Errorf("-ceiling %q: want increasing positive rates, comma-separated", ceiling)
		}
		c.Ceiling = append(c.Ceiling, n)
	}
	switch {
	case c.Workers < 2:
		return c, errors.New("-workers must be at least 2: the kill phase needs a worker left")
	case c.Lease < time.Second || c.Lease%time.Second != 0:
		return c, errors.New("-lease must be whole seconds, at least 1s")
	case c.Pool < 1 || c.Payload < 1 || c.LoadBatch < 0:
		return c, errors.New("-pool and -payload must be positive, -load-batch not negative")
	case c.Scale < 10 || c.Rate < 1 || c.KillJobs < 1:
		return c, errors.New("-scale must be at least 10, -rate and -kill-jobs positive")
	case c.KillDue < 0 || c.KillDue > c.KillJobs:
		return c, errors.New("-kill-due must be from 1 to -kill-jobs")
	case c.Quiet <= 0 || c.Stream <= 0 || c.Lead <= 0 || c.KillSpan <= 0 || c.KillLoad <= 0 || c.Step <= 0 || c.PeerWait <= 0:
		return c, errors.New("the durations must be positive")
	case c.Asynq.Concurrency < 1 || c.Asynq.CheckInterval <= 0:
		return c, errors.New("-asynq-concurrency and -asynq-check must be positive")
	}
	return c, nil
}

func joinInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

// run is main with its context, arguments and streams made explicit; it
// returns the exit status. A process started with -role is the NATS engine
// or an asynq worker of a run.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if loadtest.IsChild(args) {
		return runChild(ctx, args, stdin, stdout, stderr)
	}
	c, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return loadtest.ExitPass
	}
	if err != nil {
		fmt.Fprintf(stderr, "jobload: %v\nrun 'jobload -h' for the flags\n", err)
		return loadtest.ExitUsage
	}
	rep, err := runLoad(ctx, c, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "jobload: the run failed: %v\n", err)
		if rep != nil && rep.dir != "" {
			fmt.Fprintf(stderr, "jobload: raw outputs in %s\n", rep.dir)
		}
		return loadtest.ExitFail
	}
	return rep.write(stdout, stderr)
}

// runChild runs a child of a run: the NATS engine or an asynq worker.
func runChild(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	role := args[1:]
	if len(role) == 0 {
		fmt.Fprintln(stderr, "jobload: -role needs a role")
		return loadtest.ExitUsage
	}
	var err error
	switch role[0] {
	case roleNATS:
		fs := flag.NewFlagSet(roleNATS, flag.ContinueOnError)
		fs.SetOutput(stderr)
		store := fs.String("store", "", "store directory")
		if err := fs.Parse(role[1:]); err != nil {
			return loadtest.ExitUsage
		}
		err = runNATS(stdin, stdout, *store)
	case roleAsynq:
		f, perr := parseAsynqWorker(role[1:], stderr)
		if perr != nil {
			return loadtest.ExitUsage
		}
		err = runAsynqWorker(ctx, f, stdin, stdout)
	default:
		fmt.Fprintf(stderr, "jobload: unknown role %q\n", role[0])
		return loadtest.ExitUsage
	}
	if err != nil {
		fmt.Fprintf(stderr, "jobload %s: %v\n", role[0], err)
		return loadtest.ExitFail
	}
	return loadtest.ExitPass
}
