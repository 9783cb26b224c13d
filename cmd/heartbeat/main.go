// Heartbeat simulates the workload go-schedule was built for: an IoT
// gateway that declares a device dead when no heartbeat arrives from it
// within its timeout.
//
// Every device gets a timeout task (Scheduler.ScheduleOne) when it
// connects, and every heartbeat pushes that deadline out again
// (Scheduler.Reset), so almost no timeout ever fires. Heartbeats are spread
// evenly: each device beats once per period at its own random phase, and a
// few goroutines (one per CPU by default) walk the devices in heartbeat
// order and send them; there is no goroutine per device. A share of the
// devices, chosen at random, stops heartbeating at a random moment during
// the run. Each of them must then be declared dead exactly once, at about
// its last heartbeat plus the timeout, and no live device ever.
//
// The run lasts -duration, and then until the deadline of the last device
// to fall silent has passed, plus a grace period, with the live devices
// still heartbeating. Then the scheduler is shut down and a report is
// printed: the silent devices detected against those expected, the false
// timeouts (a live device declared dead, a timeout that ran before its
// deadline, or a heartbeat whose Reset failed), the detection lateness
// (when the timeout ran, minus last heartbeat plus timeout) at p50, p99 and
// max, the heartbeats per second and how late the simulation sent them,
// the heap memory per device, and the scheduler's Stats. While it runs, a
// progress line on standard error shows the elapsed time, the heartbeats
// sent and their rate, how far the heartbeats are behind schedule, the
// timeouts so far and the pending tasks.
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
//	-duration d      how long devices heartbeat and may fall silent (default 10s)
//	-strategy s      cancel strategy: default (schedule.New), lazy (lazycancel) or eager (eagercancel)
//	-workers n       size of the scheduler's worker pool (default GOMAXPROCS)
//	-drivers n       goroutines sending heartbeats (default GOMAXPROCS)
//	-grace d         wait after the last silent device's deadline (default 500ms)
//	-seed n          seed for the choice of silent devices and the timings (default 1)
//
// The exit status is 0 when exactly the silent devices were detected, each
// once, and there was no false timeout; 1 when not; 2 for invalid flags.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is main with its arguments and outputs made explicit; it returns the
// exit status.
func run(args []string, stdout, stderr io.Writer) int {
	cfg, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "heartbeat:", err)
		fmt.Fprintln(stderr, "run 'heartbeat -h' for the flags")
		return 2
	}
	cfg.Progress = stderr
	cfg.Interactive = isTerminal(stderr)
	cfg.MeasureMemory = true

	fmt.Fprintf(stdout, "heartbeat: %s devices, timeout %v, heartbeat every %v, %g%% silent, run %v, seed %d\n",
		commas(uint64(cfg.Devices)), cfg.Timeout, cfg.Heartbeat, 100*cfg.Silent, cfg.Duration, cfg.Seed)
	res, err := Run(cfg)
	if err != nil {
		fmt.Fprintln(stderr, "heartbeat:", err)
		return 1
	}
	writeReport(stdout, res)
	if !res.OK() {
		fmt.Fprintln(stderr, "heartbeat: FAIL:", strings.Join(failures(res), "; "))
		if overloaded(res) {
			fmt.Fprintf(stderr, "heartbeat: the heartbeats fell up to %v behind schedule: this machine was overloaded, and the failure may be the simulation's, not the scheduler's\n",
				round(res.HeartbeatLag))
		}
		return 1
	}
	return 0
}

// parseFlags parses the command line into a valid Config.
func parseFlags(args []string, output io.Writer) (Config, error) {
	cfg := DefaultConfig()
	fs := flag.NewFlagSet("heartbeat", flag.ContinueOnError)
	fs.SetOutput(output)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: heartbeat [flags]")
		fmt.Fprintln(fs.Output(), "Simulates devices heartbeating through a go-schedule Scheduler and checks that exactly the silent ones time out.")
		fs.PrintDefaults()
	}
	fs.IntVar(&cfg.Devices, "devices", cfg.Devices, "devices to simulate")
	fs.DurationVar(&cfg.Timeout, "timeout", cfg.Timeout, "a device is dead after this long without a heartbeat")
	fs.DurationVar(&cfg.Heartbeat, "heartbeat", cfg.Heartbeat, "heartbeat `period` of a live device; shorter than -timeout")
	fs.Float64Var(&cfg.Silent, "silent", cfg.Silent, "`share` of the devices that go silent, from 0 to 1")
	fs.DurationVar(&cfg.Duration, "duration", cfg.Duration, "how long devices heartbeat and may fall silent")
	fs.StringVar(&cfg.Strategy, "strategy", cfg.Strategy, "cancel strategy: default, lazy or eager")
	fs.IntVar(&cfg.Workers, "workers", cfg.Workers, "size of the scheduler's worker pool")
	fs.IntVar(&cfg.Drivers, "drivers", cfg.Drivers, "goroutines sending heartbeats")
	fs.DurationVar(&cfg.Grace, "grace", cfg.Grace, "wait after the last silent device's deadline before counting")
	fs.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "seed for the choice of silent devices and the timings")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	return cfg, cfg.Validate()
}

// failures lists what makes res a failed run.
func failures(res *Result) []string {
	var f []string
	if res.Detected != res.Expected {
		f = append(f, fmt.Sprintf("detected %d silent devices, expected %d", res.Detected, res.Expected))
	}
	if res.FalseTimeouts > 0 {
		f = append(f, fmt.Sprintf("%d false timeouts", res.FalseTimeouts))
	}
	if res.DuplicateTimeouts > 0 {
		f = append(f, fmt.Sprintf("%d timeouts ran more than once", res.DuplicateTimeouts))
	}
	if res.ShutdownErr != nil {
		f = append(f, fmt.Sprintf("shutdown: %v", res.ShutdownErr))
	}
	return f
}

func writeReport(w io.Writer, r *Result) {
	c := r.Config
	st := r.Stats
	p := func(label, format string, a ...any) {
		fmt.Fprintf(w, "%-20s"+format+"\n", append([]any{label}, a...)...)
	}
	p("strategy", "%s", c.Strategy)
	p("workers", "%d", c.Workers)
	p("GOMAXPROCS", "%d", r.GOMAXPROCS)
	p("heartbeat drivers", "%d", c.Drivers)
	p("registration", "%s timeouts scheduled in %v", commas(uint64(c.Devices)), round(r.Registration))
	p("silent devices", "%s detected, %s expected", commas(uint64(r.Detected)), commas(uint64(r.Expected)))
	p("false timeouts", "%d (%d of live devices, %d early, %d failed Resets)",
		r.FalseTimeouts, r.LiveTimeouts, r.EarlyTimeouts, r.FailedResets)
	p("repeated timeouts", "%d", r.DuplicateTimeouts)
	p("detection lateness", "p50 %v  p99 %v  max %v", round(r.LatenessP50), round(r.LatenessP99), round(r.LatenessMax))
	p("heartbeats", "%s in %v: %s/s, sent up to %v late", commas(r.Heartbeats), round(r.Elapsed),
		commas(uint64(r.PerSecond)), round(r.HeartbeatLag))
	if c.MeasureMemory {
		p("memory per device", "%.0f B with every device pending, %.0f B at the end (%s pending)",
			r.MemRegistered, r.MemEnd, commas(uint64(st.Pending)))
	}
	p("scheduler stats", "pending %s, heap entries %s, tombstones %s, fired %s, cancelled %s,",
		commas(uint64(st.Pending)), commas(uint64(st.HeapEntries)), commas(uint64(st.Tombstones)),
		commas(st.Fired), commas(st.Cancelled))
	p("", "skipped %d, panics %d, waiting %d, running %d, max lateness %v",
		st.Skipped, st.Panics, st.Waiting, st.Running, round(st.MaxLateness))
	if overloaded(r) {
		p("warning", "heartbeats were sent up to %v late (live devices time out at %v late):",
			round(r.HeartbeatLag), c.Timeout-c.Heartbeat)
		p("", "this machine did not keep up with the planned load")
	}
	for _, m := range r.Missing {
		p("not detected", "%v", m)
	}
	if r.OK() {
		p("result", "PASS")
	} else {
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
