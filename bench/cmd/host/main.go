// Command host measures what a host program pays when go-schedule does its
// timer work, against the same program doing the same work on the Go
// runtime's timers.
//
// A library is judged by its host: a scheduler that is cheap per operation
// can still hurt the program around it, by taking CPU, by waking threads,
// or by holding the only processor while the program's own goroutines wait.
// To see that, a host process serves a stand-in for real traffic while the
// timer work runs beside it. A separate sender process sends it a small UDP
// packet on a 500 µs ticker, each stamped with its send time; the host's
// reader goroutine reads them and records how late each was read. Over a
// measured window, after a warm-up, the host records its read lateness
// (p50, p99, p99.9), its process CPU time and its context switches (from
// getrusage, which on Linux covers every thread of the process), and the
// scheduler's Stats counters.
//
// Two work shapes run on each implementation:
//
//   - gateway: 100,000 keys, each reset every 2 s with a 3 s timeout, so that
//     none expires (50,000 resets a second), driven from one goroutine on a
//     10 ms ticker: the heartbeat timeouts of an IoT gateway. Each reset
//     sets the deadline its key's heartbeat would have, so that deadlines
//     are spread evenly in time, as devices' are, not bunched at the ticks.
//   - fire: 2,000 one-shots pending, each due at a uniformly random delay in
//     (0, 1 s] and scheduled again with a new random delay when it runs
//     (about 4,000 runs a second).
//
// The implementations are go-schedule's lazycancel and eagercancel, with a
// pool of 16 workers, and the runtime's timers (one time.AfterFunc per key
// or task, re-armed with Timer.Reset). Each runs at GOMAXPROCS 1 and 2, set
// through the environment of the host process. Repetitions are
// interleaved: each repetition runs the three implementations of every
// (GOMAXPROCS, shape) in an order rotated by repetition.
//
// The report gives, per (GOMAXPROCS, shape, implementation), the medians
// over repetitions, the ratio of each go-schedule median to the runtime's
// median (with the range of the ratios of single repetitions), and the
// verdicts against go-schedule's host targets: read lateness p99 and p99.9
// at most 1.1 times the runtime's, CPU at most 1.0 times, context switches
// at most 1.1 times. The markdown tables go to standard output and, with
// results.json, to the -out directory; progress goes to standard error.
//
// Run it from the bench directory, alone on the machine (figures from a
// busy machine say little):
//
//	go run ./cmd/host          # 3 repetitions of a 10 s window, about 7 minutes
//	go run ./cmd/host -quick   # 1 repetition of a 2 s window, for CI; verdicts indicative
//
// A cell fails when its work did not happen as the shape says (a gateway
// key expired, a reset missed, the fire count was more than 10% off the
// expected) or when a child crashed; the command then exits with status 1.
// Bad flags exit with status 2. The measurement needs Linux.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-schedule/schedule/bench/loadtest"
)

// Exit statuses.
const (
	exitCellFailed = 1
	exitBadFlags   = 2
)

// config is everything a run is parameterized by; the host child receives
// it whole.
type config struct {
	Count      int           `json:"count"`
	Window     time.Duration `json:"window_ns"`
	Warmup     time.Duration `json:"warmup_ns"`
	Interval   time.Duration `json:"interval_ns"`
	Workers    int           `json:"workers"`
	Keys       int           `json:"keys"`
	ResetEvery time.Duration `json:"reset_every_ns"`
	Timeout    time.Duration `json:"timeout_ns"`
	Tick       time.Duration `json:"tick_ns"`
	FireTasks  int           `json:"fire_tasks"`
	FireMax    time.Duration `json:"fire_max_ns"`
	Impls      []string      `json:"impls"`
	Shapes     []string      `json:"shapes"`
	Procs      []int         `json:"gomaxprocs"`
	Quick      bool          `json:"quick"`
	// CPUProfile is a directory where each host child writes a CPU profile
	// of its window; empty: none.
	CPUProfile string `json:"cpu_profile,omitempty"`
}

// Defaults of a full run, and of a -quick run where they differ.
const (
	defaultCount      = 3
	defaultWindow     = 10 * time.Second
	defaultWarmup     = 2 * time.Second
	quickCount        = 1
	quickWindow       = 2 * time.Second
	quickWarmup       = time.Second
	defaultOut        = "" // a new temporary directory
	defaultSendEvery  = 500 * time.Microsecond
	defaultWorkers    = 16
	defaultKeys       = 100_000
	defaultResetEvery = 2 * time.Second
	defaultTimeout    = 3 * time.Second
	defaultTick       = 10 * time.Millisecond
	defaultFireTasks  = 2_000
	defaultFireMax    = time.Second
	defaultImplList   = "lazycancel,eagercancel," + implRuntime
	defaultShapeList  = shapeGateway + "," + shapeFire
	defaultProcsList  = "1,2"
)

// Names of the baseline implementation, the shapes and the child roles.
const (
	implRuntime   = "runtime"
	shapeGateway  = "gateway"
	shapeFire     = "fire"
	roleHost      = "host"
	roleSender    = "sender"
	envGOMAXPROCS = "GOMAXPROCS"
	listSeparator = ","
)

// cellTimeoutMargin is how long a cell may take beyond its warm-up and
// window (set-up, start and exit of the children) before it is killed.
const cellTimeoutMargin = time.Minute

// indicativeBelowRep is the number of repetitions below which verdicts
// are labelled indicative: one run on a shared machine can move a ratio
// by tens of percent.
const indicativeBelowRep = 3

var (
	allImpls  = strings.Split(defaultImplList, listSeparator)
	allShapes = strings.Split(defaultShapeList, listSeparator)
)

func main() {
	fs := flag.NewFlagSet("host", flag.ContinueOnError)
	fs.SetOutput(os.Stderr)
	c, out, role, err := parseFlags(fs, os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "host:", err)
		fmt.Fprintln(os.Stderr, "run 'go run ./cmd/host -h' (in bench/) for the flags")
		os.Exit(exitBadFlags)
	}
	switch role.name {
	case roleHost:
		runHost(role.spec)
		return
	case roleSender:
		runSender(role.addr, role.interval)
		return
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := runAll(ctx, c)
	if err != nil {
		fmt.Fprintln(os.Stderr, "host:", err)
		os.Exit(exitCellFailed)
	}
	if out == "" {
		if out, err = os.MkdirTemp("", "schedule-host-"); err != nil {
			fmt.Fprintln(os.Stderr, "host:", err)
			os.Exit(exitCellFailed)
		}
	}
	if err := rep.write(out); err != nil {
		fmt.Fprintln(os.Stderr, "host:", err)
		os.Exit(exitCellFailed)
	}
	fmt.Print(rep.markdown())
	fmt.Fprintf(os.Stderr, "results in %s\n", out)
	if len(rep.Failures) > 0 {
		fmt.Fprintf(os.Stderr, "%d cells failed:\n  %s\n", len(rep.Failures), strings.Join(rep.Failures, "\n  "))
		os.Exit(exitCellFailed)
	}
}

// childRole is set in a re-executed child: which role it plays and what it
// needs for it.
type childRole struct {
	name     string
	spec     string
	addr     string
	interval time.Duration
}

// parseFlags parses and checks the command line. The returned error is
// for the user, who sees it first, with a one-line hint; the usage goes to
// fs's output for -h (flag.ErrHelp) only.
func parseFlags(fs *flag.FlagSet, args []string) (config, string, childRole, error) {
	var c config
	var role childRole
	var impls, shapes, procs string
	fs.BoolVar(&c.Quick, "quick", false, fmt.Sprintf("one repetition of a %v window after a %v warm-up, for CI; verdicts are then indicative", quickWindow, quickWarmup))
	fs.IntVar(&c.Count, "count", 0, fmt.Sprintf("repetitions of every cell (default %d, %d with -quick)", defaultCount, quickCount))
	fs.DurationVar(&c.Window, "window", 0, fmt.Sprintf("measured window of every cell (default %v, %v with -quick)", defaultWindow, quickWindow))
	fs.DurationVar(&c.Warmup, "warmup", 0, fmt.Sprintf("warm-up after set-up, before the window (default %v, %v with -quick)", defaultWarmup, quickWarmup))
	fs.DurationVar(&c.Interval, "interval", defaultSendEvery, "period of the sender's ticker")
	fs.IntVar(&c.Workers, "workers", defaultWorkers, "go-schedule pool size")
	fs.StringVar(&c.CPUProfile, "cpuprofile", "", "directory where every host child writes a CPU profile of its window (GOMAXPROCS-shape-impl-rep.pprof)")
	fs.IntVar(&c.Keys, "keys", defaultKeys, "gateway: keys")
	fs.DurationVar(&c.ResetEvery, "reset-every", defaultResetEvery, "gateway: each key is reset once per this period")
	fs.DurationVar(&c.Timeout, "timeout", defaultTimeout, "gateway: timeout set by every reset (longer than -reset-every, so that no key expires)")
	fs.DurationVar(&c.Tick, "tick", defaultTick, "gateway: period of the resetting goroutine's ticker")
	fs.IntVar(&c.FireTasks, "fire-tasks", defaultFireTasks, "fire: one-shots pending")
	fs.DurationVar(&c.FireMax, "fire-max", defaultFireMax, "fire: delays are uniform in (0, fire-max]")
	fs.StringVar(&impls, "impl", defaultImplList, "comma-separated implementations")
	fs.StringVar(&shapes, "shape", defaultShapeList, "comma-separated work shapes")
	fs.StringVar(&procs, "gomaxprocs", defaultProcsList, "comma-separated GOMAXPROCS values of the host")
	out := fs.String("out", defaultOut, "directory for results.json and results.md (default: a new temporary directory)")
	fs.StringVar(&role.name, "role", "", "internal: run as a child ("+roleHost+" or "+roleSender+")")
	fs.StringVar(&role.spec, "spec", "", "internal: the host child's cell, as JSON")
	fs.StringVar(&role.addr, "addr", "", "internal: the sender's destination")
	fs.Usage = func() { printUsage(fs) }
	err := loadtest.Parse(fs, args)
	if err != nil {
		return c, "", role, err
	}
	role.interval = c.Interval
	switch role.name {
	case "":
	case roleHost, roleSender:
		return c, *out, role, nil
	default:
		return c, "", role, fmt.Errorf("unknown -role %q", role.name)
	}
	c.applyDefaults()
	if c.Impls, err = pickNames(impls, allImpls); err != nil {
		return c, "", role, fmt.Errorf("-impl: %w", err)
	}
	if c.Shapes, err = pickNames(shapes, allShapes); err != nil {
		return c, "", role, fmt.Errorf("-shape: %w", err)
	}
	if c.Procs, err = parseProcs(procs); err != nil {
		return c, "", role, fmt.Errorf("-gomaxprocs: %w", err)
	}
	return c, *out, role, c.validate()
}

// applyDefaults fills the sizes left at zero, from -quick.
func (c *config) applyDefaults() {
	count, window, warmup := defaultCount, defaultWindow, defaultWarmup
	if c.Quick {
		count, window, warmup = quickCount, quickWindow, quickWarmup
	}
	if c.Count == 0 {
		c.Count = count
	}
	if c.Window == 0 {
		c.Window = window
	}
	if c.Warmup == 0 {
		c.Warmup = warmup
	}
}

// validate rejects sizes the measurement cannot run with.
func (c *config) validate() error {
	switch {
	case c.Count < 1:
		return fmt.Errorf("-count %d: need at least 1", c.Count)
	case c.Window <= 0:
		return fmt.Errorf("-window %v: need a positive window", c.Window)
	case c.Warmup < 0:
		return fmt.Errorf("-warmup %v: need zero or more", c.Warmup)
	case c.Interval <= 0:
		return fmt.Errorf("-interval %v: need a positive period", c.Interval)
	case c.Workers < 1:
		return fmt.Errorf("-workers %d: need at least 1", c.Workers)
	case c.Keys < 1:
		return fmt.Errorf("-keys %d: need at least 1", c.Keys)
	case c.ResetEvery <= 0:
		return fmt.Errorf("-reset-every %v: need a positive period", c.ResetEvery)
	case c.Tick <= 0:
		return fmt.Errorf("-tick %v: need a positive period", c.Tick)
	case c.Timeout <= c.ResetEvery+c.Tick:
		// A key is reset at most one tick late, so a timeout that does not
		// cover a period and a tick could expire with the work on time.
		return fmt.Errorf("-timeout %v: must exceed -reset-every plus -tick (%v), or keys expire by design", c.Timeout, c.ResetEvery+c.Tick)
	case c.FireTasks < 1:
		return fmt.Errorf("-fire-tasks %d: need at least 1", c.FireTasks)
	case c.FireMax <= 0:
		return fmt.Errorf("-fire-max %v: need a positive delay", c.FireMax)
	}
	return nil
}

// pickNames returns the names of a comma-separated list, each checked
// against known and in the order given; duplicates are an error.
func pickNames(list string, known []string) ([]string, error) {
	var out []string
	for _, n := range strings.Split(list, listSeparator) {
		n = strings.TrimSpace(n)
		if !slices.Contains(known, n) {
			return nil, fmt.Errorf("unknown name %q (have: %s)", n, strings.Join(known, ", "))
		}
		if slices.Contains(out, n) {
			return nil, fmt.Errorf("%q given twice", n)
		}
		out = append(out, n)
	}
	return out, nil
}

// parseProcs parses a comma-separated list of distinct positive GOMAXPROCS
// values.
func parseProcs(list string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(list, listSeparator) {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q is not a positive number", f)
		}
		if slices.Contains(out, n) {
			return nil, fmt.Errorf("%d given twice", n)
		}
		out = append(out, n)
	}
	return out, nil
}

// internalFlags are the flags with which the command runs its own children;
// -h does not list them.
var internalFlags = map[string]bool{"role": true, "spec": true, "addr": true}

// printUsage lists the flags a user sets, leaving out internalFlags.
func printUsage(fs *flag.FlagSet) {
	shown := flag.NewFlagSet(fs.Name(), flag.ContinueOnError)
	shown.SetOutput(fs.Output())
	fs.VisitAll(func(f *flag.Flag) {
		if !internalFlags[f.Name] {
			shown.Var(f.Value, f.Name, f.Usage)
			shown.Lookup(f.Name).DefValue = f.DefValue
		}
	})
	fmt.Fprintln(fs.Output(), "usage: go run ./cmd/host [flags]   (in bench/)")
	fmt.Fprintln(fs.Output())
	shown.PrintDefaults()
}
