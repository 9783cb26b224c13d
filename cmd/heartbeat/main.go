// Heartbeat simulates the workload go-schedule was built for: an IoT
// gateway that declares a device dead when no heartbeat arrives from it
// within its timeout. It is also the model of how to build one.
//
// The gateway's timeout logic is one
// [github.com/go-schedule/schedule/heartbeat.Monitor][int32], keyed by
// device index, on one Scheduler: every device's first heartbeat (its
// connection) and every later one is a
// [github.com/go-schedule/schedule/heartbeat.Monitor.Beat], which pushes that
// device's deadline out to now plus the timeout, and the Monitor's expired
// function is the "device declared dead" callback. Almost no deadline ever
// comes due. Heartbeats are spread evenly: each device beats once per
// period at its own random phase, and a few goroutines (one per CPU by
// default) walk the devices in heartbeat order and send them; there is no
// goroutine per device. A share of the devices, chosen at random, stops
// heartbeating at a random moment during the first -duration. Each of them
// must then be declared dead exactly once, at about its last heartbeat plus
// the timeout, and no live device ever.
//
// Live devices heartbeat for -duration. The run then goes on, the live
// devices still heartbeating, until the deadline of the last device to
// fall silent has passed, plus a grace period: up to -timeout plus -grace
// more (2.5s with the defaults), because a device that falls silent just
// before the end is only due a timeout later. Then the scheduler is shut
// down and a report is printed: the silent devices declared dead against
// those expected, the false timeouts (a live device declared dead, a
// device declared dead before its deadline, a live device's deadline that
// came due before its next heartbeat, or a failed Beat), the detection
// lateness (when the device was declared dead, minus its last heartbeat
// plus the timeout) at p50, p99 and max, the heartbeats per second and how
// late the simulation sent them, the heap memory per device, the number of
// devices the Monitor still watches, and the scheduler's Stats, with a
// short explanation of its terms. While it runs, a progress line on
// standard error shows the elapsed time, the heartbeats sent and their
// rate, how far the heartbeats are behind schedule, the devices declared
// dead so far and the devices watched.
//
// An interrupt (Ctrl-C, SIGINT) or SIGTERM stops the run early: the
// heartbeats stop, the scheduler is shut down, and the report covers the
// run up to then, marked as interrupted. It counts as expected only the
// silent devices whose deadline plus the grace period had passed. A second
// signal ends the program at once.
//
// Usage:
//
//	go run ./cmd/heartbeat [flags]
//
// The flags are:
//
//	-devices n       devices to simulate (default 100000)
//	-timeout d       a device is dead after d without a heartbeat (default 2s)
//	-heartbeat d     heartbeat period of a live device, shorter than the timeout (default 500ms)
//	-silent f        share of the devices that go silent, from 0 to 1 (default 0.1)
//	-duration d      how long devices heartbeat and may fall silent, at most 24h (default 10s)
//	-strategy s      cancel strategy: default (schedule.New, lazy cancel), lazy (lazycancel) or eager (eagercancel)
//	-workers n       size of the scheduler's worker pool (default GOMAXPROCS)
//	-drivers n       goroutines sending heartbeats (default GOMAXPROCS)
//	-grace d         wait after the last silent device's deadline, 0 or more (default 500ms)
//	-seed n          seed for the choice of silent devices and the timings (default 1)
//	-metrics addr    serve the Prometheus metrics of the scheduler and the Monitor at
//	                 http://addr/metrics while the run lasts (port 0: any free port; the
//	                 address is printed on standard error)
//
// The metrics are those the schedprom module exports (schedule_*), written
// by the program itself: the module it lives in depends on ants only.
//
// The exit status is
//
//	0  exactly the silent devices were declared dead, each once, and there was no false timeout
//	1  a check failed, or the simulation could not run
//	2  invalid flags or arguments
//	3  interrupted by SIGINT or SIGTERM; the partial report was printed
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

// Exit statuses.
const (
	exitPass        = 0
	exitFail        = 1
	exitUsage       = 2
	exitInterrupted = 3
)

const exitStatuses = `Exit status:
  0  pass: exactly the silent devices were declared dead, each once, and no false timeout
  1  fail: a check failed, or the simulation could not run
  2  invalid flags or arguments
  3  interrupted (SIGINT, Ctrl-C, or SIGTERM): the report covers the run up to then;
     a second signal ends the program at once
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// After the first signal, restore the default handling, so that a
	// second one ends the program even if the wrap-up hangs.
	context.AfterFunc(ctx, stop)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run is main with its context, arguments and outputs made explicit; it
// returns the exit status. The end of ctx interrupts the simulation.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitPass
	}
	if err != nil {
		fmt.Fprintln(stderr, "heartbeat:", err)
		fmt.Fprintln(stderr, "run 'heartbeat -h' for the flags")
		return exitUsage
	}
	cfg.Progress = stderr
	cfg.Interactive = isTerminal(stderr)
	cfg.MeasureMemory = true

	if cfg.MetricsAddr != "" {
		ms, err := listenMetrics(cfg.MetricsAddr)
		if err != nil {
			fmt.Fprintln(stderr, "heartbeat: metrics:", err)
			return exitFail
		}
		defer ms.close()
		cfg.Started = ms.watch
		fmt.Fprintln(stderr, "heartbeat: metrics at", ms.url())
	}

	writeHeader(stdout, cfg)
	res, err := Run(ctx, cfg)
	if err != nil {
		fmt.Fprintln(stderr, "heartbeat:", err)
		return exitFail
	}
	writeReport(stdout, res)
	if res.Interrupted {
		fmt.Fprintf(stderr, "heartbeat: interrupted %s: the report covers the run up to then\n", interruptedWhen(res))
		if f := failures(res); len(f) > 0 {
			fmt.Fprintln(stderr, "heartbeat: failures so far:", strings.Join(f, "; "))
		}
		return exitInterrupted
	}
	if !res.OK() {
		fmt.Fprintln(stderr, "heartbeat: FAIL:", strings.Join(failures(res), "; "))
		if overloaded(res) {
			fmt.Fprintf(stderr, "heartbeat: the heartbeats fell up to %v behind schedule: this machine was overloaded, and the failure may be the simulation's, not the scheduler's\n",
				round(res.HeartbeatLag))
		}
		return exitFail
	}
	return exitPass
}

// parseFlags parses the command line into a valid Config.
func parseFlags(args []string, output io.Writer) (Config, error) {
	cfg := DefaultConfig()
	fs := flag.NewFlagSet("heartbeat", flag.ContinueOnError)
	fs.SetOutput(output)
	fs.Usage = func() {
		w := fs.Output()
		fmt.Fprintln(w, "usage: heartbeat [flags]")
		fmt.Fprintln(w)
		fmt.Fprintln(w, "Simulates an IoT gateway: devices heartbeat into a heartbeat.Monitor on a go-schedule")
		fmt.Fprintln(w, "Scheduler, a share of them falls silent, and the run checks that exactly those are")
		fmt.Fprintln(w, "declared dead, each once and none before its deadline (last heartbeat + timeout).")
		fmt.Fprintln(w)
		fmt.Fprintln(w, "Flags:")
		fs.PrintDefaults()
		fmt.Fprintln(w)
		fmt.Fprint(w, exitStatuses)
	}
	fs.IntVar(&cfg.Devices, "devices", cfg.Devices, "devices to simulate")
	fs.DurationVar(&cfg.Timeout, "timeout", cfg.Timeout, "a device is dead after this long without a heartbeat")
	fs.DurationVar(&cfg.Heartbeat, "heartbeat", cfg.Heartbeat, "heartbeat `period` of a live device; shorter than -timeout")
	fs.Float64Var(&cfg.Silent, "silent", cfg.Silent, "`share` of the devices that go silent, from 0 to 1")
	fs.DurationVar(&cfg.Duration, "duration", cfg.Duration, "how long devices heartbeat and may fall silent, at most 24h; the run then lasts up to\n-timeout + -grace longer, for the deadlines of the last devices to fall silent")
	fs.StringVar(&cfg.Strategy, "strategy", cfg.Strategy, "cancel strategy: default (schedule.New, which cancels lazily), lazy or eager")
	fs.IntVar(&cfg.Workers, "workers", cfg.Workers, "size of the scheduler's worker pool")
	fs.IntVar(&cfg.Drivers, "drivers", cfg.Drivers, "goroutines sending heartbeats")
	fs.DurationVar(&cfg.Grace, "grace", cfg.Grace, "wait after the last silent device's deadline before counting; 0 counts at that deadline,\nonce the expiries already due have run")
	fs.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "seed for the choice of silent devices and the timings")
	fs.StringVar(&cfg.MetricsAddr, "metrics", "", "serve Prometheus metrics at http://`addr`/metrics while the run lasts (host:port; port 0 picks one)")
	// The flag package would print a bad flag's error followed by the whole
	// usage, burying the error; run prints the error alone with a one-line
	// hint instead, and the usage only for -h.
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(output)
			fs.Usage()
		}
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	return cfg, cfg.Validate()
}

// writeHeader describes the run about to start, including how long it
// will last and why.
func writeHeader(w io.Writer, c Config) {
	fmt.Fprintf(w, "heartbeat: %s devices, timeout %v, heartbeat every %v, %g%% fall silent, seed %d\n",
		commas(uint64(c.Devices)), c.Timeout, c.Heartbeat, 100*c.Silent, c.Seed)
	fmt.Fprintf(w, "heartbeat: heartbeats for %v, then up to %v more (timeout %v + grace %v) for the last silent devices' deadlines\n",
		c.Duration, c.Timeout+c.Grace, c.Timeout, c.Grace)
}

// failures lists what makes res a failed run; for an interrupted run, the
// failures seen so far.
func failures(res *Result) []string {
	var f []string
	if res.Detected != res.Expected {
		f = append(f, fmt.Sprintf("detected %d silent devices, expected %d", res.Detected, res.Expected))
	}
	if res.FalseTimeouts > 0 {
		f = append(f, fmt.Sprintf("%d false timeouts", res.FalseTimeouts))
	}
	if res.DuplicateTimeouts > 0 {
		f = append(f, fmt.Sprintf("%d devices declared dead more than once", res.DuplicateTimeouts))
	}
	if live := res.Config.Devices - res.Planned; !res.Interrupted && res.WatchedEnd != live {
		f = append(f, fmt.Sprintf("the Monitor watched %d devices at the end, want the %d live ones", res.WatchedEnd, live))
	}
	if res.ShutdownErr != nil {
		f = append(f, fmt.Sprintf("shutdown: %v", res.ShutdownErr))
	}
	return f
}

// interruptedWhen says at which point of the run res was interrupted.
func interruptedWhen(r *Result) string {
	if r.Registered < r.Config.Devices {
		return fmt.Sprintf("while the devices connected (%s of %s)", commas(uint64(r.Registered)), commas(uint64(r.Config.Devices)))
	}
	if !r.HeartbeatsStarted {
		return "before the heartbeats started"
	}
	return fmt.Sprintf("after %v of heartbeats", round(r.InterruptedAt))
}

func writeReport(w io.Writer, r *Result) {
	c := r.Config
	st := r.Stats
	p := func(label, format string, a ...any) {
		fmt.Fprintf(w, "%-20s"+format+"\n", append([]any{label}, a...)...)
	}
	strategy := c.Strategy
	switch c.Strategy {
	case "default":
		strategy = "default (schedule.New, which cancels lazily)"
	case "lazy":
		strategy = "lazy (lazycancel)"
	case "eager":
		strategy = "eager (eagercancel)"
	}
	p("strategy", "%s", strategy)
	p("workers", "%d (the scheduler's pool, which runs the expired callbacks)", c.Workers)
	p("GOMAXPROCS", "%d", r.GOMAXPROCS)
	p("heartbeat drivers", "%d (goroutines sending the heartbeats)", c.Drivers)
	if r.Registered < c.Devices {
		p("registration", "%s of %s devices watched in %v, then interrupted",
			commas(uint64(r.Registered)), commas(uint64(c.Devices)), round(r.Registration))
	} else {
		p("registration", "%s devices watched in %v (a first Monitor.Beat each)",
			commas(uint64(c.Devices)), round(r.Registration))
	}
	if r.Interrupted && !r.HeartbeatsStarted {
		p("result", "INTERRUPTED %s: nothing to check", interruptedWhen(r))
		return
	}
	if r.Interrupted {
		p("silent devices", "%s detected, %s expected (those past deadline + grace when interrupted)",
			commas(uint64(r.Detected)), commas(uint64(r.Expected)))
		p("", "%s planned, %s fallen silent, %s not yet past deadline + grace (%s of them detected)",
			commas(uint64(r.Planned)), commas(uint64(r.Fallen)), commas(uint64(r.Fallen-r.Expected)),
			commas(uint64(r.DetectedInGrace)))
	} else {
		p("silent devices", "%s detected, %s expected", commas(uint64(r.Detected)), commas(uint64(r.Expected)))
	}
	p("false timeouts", "%d (%d live devices declared dead, %d devices declared dead before their deadline,",
		r.FalseTimeouts, r.LiveTimeouts, r.EarlyTimeouts)
	p("", "%d deadlines of live devices come due before their next heartbeat, %d failed Beats)",
		r.Overtaken, r.FailedBeats)
	p("repeated timeouts", "%d (devices declared dead more than once)", r.DuplicateTimeouts)
	p("detection lateness", "p50 %v  p99 %v  max %v", round(r.LatenessP50), round(r.LatenessP99), round(r.LatenessMax))
	p("", "(declared dead minus deadline; deadline = last heartbeat + timeout)")
	p("heartbeats", "%s in %v: %s/s, sent up to %v late", commas(r.Heartbeats), round(r.Elapsed),
		commas(uint64(r.PerSecond)), round(r.HeartbeatLag))
	switch {
	case c.MeasureMemory && r.Interrupted:
		p("memory per device", "%.0f B of heap with every device watched (scheduler + Monitor)", r.MemRegistered)
	case c.MeasureMemory:
		p("memory per device", "%.0f B of heap with every device watched, %.0f B at the end (scheduler + Monitor)",
			r.MemRegistered, r.MemEnd)
	}
	p("watched at the end", "%s devices (Monitor.Len), %s of them live", commas(uint64(r.WatchedEnd)),
		commas(uint64(c.Devices-r.Fallen)))
	p("scheduler stats", "pending %s, heap entries %s, tombstones %s, fired %s, cancelled %s,",
		commas(uint64(st.Pending)), commas(uint64(st.HeapEntries)), commas(uint64(st.Tombstones)),
		commas(st.Started), commas(st.Cancelled))
	p("", "skipped %d, panics %d, waiting %d, running %d, max lateness %v",
		st.Skipped, st.Panics, st.Waiting, st.Running, round(st.MaxLateness))
	p("terms", "pending: timeout tasks not yet due, one per watched device")
	p("", "heap entries: deadlines in the scheduler's min-heap, pending tasks plus tombstones")
	p("", "tombstones: stale heap entries that a lazy cancel (or a deadline moved earlier) leaves")
	p("", "  behind, dropped when they reach the top; eager cancel removes entries at once and")
	p("", "  leaves none. A Beat only moves a deadline later, so this run makes none")
	p("", "fired: timeout jobs started; cancelled: tasks stopped by CancelTask (Monitor.Forget)")
	p("", "max lateness: longest wait from a task's deadline to the start of its job")
	if overloaded(r) {
		p("warning", "heartbeats were sent up to %v late (live devices time out at %v late):",
			round(r.HeartbeatLag), c.Timeout-c.Heartbeat)
		p("", "this machine did not keep up with the planned load")
	}
	for _, m := range r.Missing {
		p("not detected", "%v", m)
	}
	switch {
	case r.Interrupted && len(failures(r)) > 0:
		p("result", "INTERRUPTED %s, and already FAILED: %s", interruptedWhen(r), strings.Join(failures(r), "; "))
	case r.Interrupted:
		p("result", "INTERRUPTED %s: no failure so far, but no verdict", interruptedWhen(r))
	case r.OK():
		p("result", "PASS")
	default:
		p("result", "FAIL: %s", strings.Join(failures(r), "; "))
	}
}

// overloaded reports whether the simulation sent heartbeats so late that
// its results say more about the machine than about the scheduler: a
// quarter of the slack a live device has between two heartbeats.
func overloaded(r *Result) bool {
	return r.HeartbeatLag > (r.Config.Timeout-r.Config.Heartbeat)/4
}

// round shortens a duration for display.
func round(d time.Duration) time.Duration {
	switch {
	case d >= time.Second:
		return d.Round(time.Millisecond)
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond)
	}
	return d.Round(time.Microsecond)
}

// isTerminal reports whether w is a character device, such as a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
