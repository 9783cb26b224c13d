// Command bench compares go-schedule with the Go runtime's timers and with
// timing-wheel libraries on the workloads go-schedule is built for: adding
// far-future one-shots, re-arming heartbeat timeouts (with each device's
// own timeout, with a timeout drawn at every heartbeat, and as cancel+add),
// firing deadlines spread over a window or packed densely, a burst of
// deadlines due at one instant, parallel adds, idling with a million
// pending deadlines, exactly-once timeouts under heartbeats, and keyed
// heartbeats (a timeout per device key, each implementation keeping its
// own key index).
//
// It prints an estimate of its duration as it starts, and a progress line
// with the time left while it runs. The standard output ends with a short
// table of the figures users compare first, the go-schedule targets the
// run missed, and a one-line verdict: targets met, missed and not
// measured. With fewer than three repetitions (as with -quick) the
// verdicts are labelled indicative; a run smaller than a million tasks
// (-quick) leaves the memory targets set at a million out of its verdict
// and says so. Failed runs are listed on standard error, each with its
// implementation and whether it is go-schedule's, the baseline's or a
// peer's; a peer's failure is a finding and does not fail the command.
// Every table is written to results.md in the output directory, with
// results.json and a chart; both record the CPU model and the Go version.
//
// Run it from the bench directory:
//
//	go run .          # full run (about 35 minutes on 2 cores)
//	go run . -quick   # small run for CI (about 4 minutes)
//
// Both write to a new temporary directory, whose name they print, unless
// -out names one.
//
// Every (implementation, workload, repetition) runs in its own child
// process, so that memory figures do not mix; the parent re-executes its own
// binary as "bench child …", collects the JSON each child prints, and
// writes results.json, results.md and a chart. The child's flags are not
// the parent's: "go run . child -h" lists them.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/go-schedule/schedule/bench/loadtest"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == childCommand {
		childMain(os.Args[2:])
		return
	}
	var c config
	o, fs := parentFlags(&c, flag.NewFlagSet("bench", flag.ContinueOnError))
	fs.SetOutput(os.Stderr)
	err := loadtest.Parse(fs, os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		fmt.Fprintln(os.Stderr, "run 'go run . -h' (in bench/) for the flags")
		os.Exit(2)
	}
	c.applyDefaults(o.quick)
	if stallLimit <= 0 {
		stallLimit = 20 * time.Second
		if o.quick {
			stallLimit = 6 * time.Second
		}
	}
	sortWorkloads()
	if o.count <= 0 {
		o.count = 3
		if o.quick {
			o.count = 1
		}
	}
	dir := o.out
	if dir == "" {
		d, err := os.MkdirTemp("", "schedule-bench-")
		if err != nil {
			fatal(err)
		}
		dir = d
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		fatal(err)
	}
	if o.render != "" {
		rep, err := loadReport(o.render)
		if err != nil {
			fatal(err)
		}
		if err := rep.write(dir); err != nil {
			fatal(err)
		}
		fmt.Print(rep.console(dir))
		return
	}
	impls, err := selectNames(o.impl, implNames())
	if err != nil {
		fatal(err)
	}
	var wnames []string
	for _, w := range workloads {
		wnames = append(wnames, w.Name)
	}
	wsel, err := selectNames(expandGroups(o.workload), wnames)
	if err != nil {
		fatal(err)
	}

	rep := &report{
		Command: commandLine(),
		Date:    time.Now().UTC().Format(time.RFC3339),
		Machine: machineInfo(),
		Config:  c,
		Count:   o.count,
		Quick:   o.quick,
	}
	if err := runAll(rep, impls, wsel, c, o.count, o.quick, o.timeout); err != nil {
		fatal(err)
	}
	if err := rep.write(dir); err != nil {
		fatal(err)
	}
	fmt.Print(rep.console(dir))
	fmt.Fprint(os.Stderr, rep.failedRunsText())
	if bad := rep.ownFailures(); len(bad) > 0 {
		fmt.Fprintf(os.Stderr, "go-schedule itself failed:\n  %s\n", strings.Join(bad, "\n  "))
		os.Exit(2)
	}
}

// parentOptions are the parent's flags other than the sizes.
type parentOptions struct {
	quick               bool
	count               int
	out, impl, workload string
	timeout             time.Duration
	render              string
}

// parentFlags defines the flags a user sets on fs: the parent's own and
// the sizes. The child's (childMain) are not among them.
func parentFlags(c *config, fs *flag.FlagSet) (*parentOptions, *flag.FlagSet) {
	o := &parentOptions{}
	fs.BoolVar(&o.quick, "quick", false, "small sizes and one repetition, for CI (about 4 minutes on 2 cores); verdicts are then indicative")
	fs.IntVar(&o.count, "count", 0, "repetitions of every measurement (default 3, 1 with -quick)")
	fs.StringVar(&o.out, "out", "", "output directory (default: a new temporary directory)")
	fs.StringVar(&o.impl, "impl", "", "comma-separated implementations to run (default all)")
	fs.StringVar(&o.workload, "workload", "", "comma-separated workloads to run (default all; keyed selects keyed-uint64 and keyed-string)")
	fs.DurationVar(&o.timeout, "timeout", 3*time.Minute, "limit for one child process (stalls are caught sooner by the child's watchdog)")
	fs.StringVar(&o.render, "render", "", "re-render results.md and the chart from this results.json, without measuring")
	sizeFlags(fs, c)
	fs.Usage = func() {
		w := fs.Output()
		fmt.Fprintln(w, "usage: go run . [flags]   (in bench/)")
		fmt.Fprintln(w)
		fmt.Fprintln(w, "Compares go-schedule with the Go runtime's timers and timing-wheel libraries, each")
		fmt.Fprintln(w, "measurement in a process of its own. Prints a short table and a verdict line; writes")
		fmt.Fprintln(w, "every table to -out. A full run takes about 35 minutes on 2 cores, -quick about 4.")
		fmt.Fprintln(w)
		fmt.Fprintln(w, "Flags:")
		fs.PrintDefaults()
		fmt.Fprintln(w)
		fmt.Fprintln(w, "To profile one measurement: go run . child -impl lazycancel -workload add -cpuprofile cpu.out")
	}
	return o, fs
}

// sizeFlags defines the flags that set the workloads' sizes on fs, which
// the parent and each child share: the parent hands its sizes down with
// them (childArgs).
func sizeFlags(fs *flag.FlagSet, c *config) {
	fs.IntVar(&c.Workers, "workers", 64, "pool size for implementations with a worker pool")
	fs.IntVar(&c.AddN, "add", 0, "add: timers (default 1000000, 100000 with -quick)")
	fs.IntVar(&c.Devices, "devices", 0, "heartbeat: devices (default 1000000, 100000 with -quick)")
	fs.IntVar(&c.Heartbeats, "heartbeats", 0, "heartbeat: heartbeats (default 2000000, 200000 with -quick)")
	fs.IntVar(&c.FireN, "fire", 0, "fire: deadlines (default 200000, 20000 with -quick)")
	fs.DurationVar(&c.FireWindow, "fire-window", 0, "fire: window the deadlines spread over (default 2s, 1s with -quick)")
	fs.DurationVar(&c.FireDense, "fire-dense-window", 0, "fire-dense: window the same number of deadlines is packed into (default 200ms, 20ms with -quick)")
	fs.IntVar(&c.BurstN, "burst", 0, "burst: deadlines due at the same instant (default 1000000, 100000 with -quick)")
	fs.IntVar(&c.ParallelN, "parallel", 0, "parallel: timers (default 1000000, 100000 with -quick)")
	fs.IntVar(&c.SpikeN, "spike", 0, "spike: timers in the spike (default 10000000, 200000 with -quick)")
	fs.IntVar(&c.IdleN, "idle-n", 0, "idle: pending deadlines (default 1000000, 100000 with -quick)")
	fs.DurationVar(&c.Idle, "idle", 0, "idle: measured idle period (default 10s, 1s with -quick)")
	fs.IntVar(&c.CorrectDevices, "correct-devices", 0, "correctness: devices (default 10000, 2000 with -quick)")
	fs.DurationVar(&c.CorrectFor, "correct-for", 0, "correctness: heartbeat period (default 1s, 500ms with -quick)")
	fs.IntVar(&c.KeyedKeys, "keyed-keys", 0, "keyed: watched keys (default 1000000, 100000 with -quick)")
	fs.IntVar(&c.KeyedBeats, "keyed-beats", 0, "keyed: Beats on random watched keys (default 2000000, 200000 with -quick)")
	fs.DurationVar(&c.KeyedTimeout, "keyed-timeout", 0, "keyed: short timeout of the exactness check, at least two wheel ticks (default 3s, 1s with -quick)")
	fs.Uint64Var(&c.Seed, "seed", 1, "random seed")
	fs.DurationVar(&stallLimit, "stall", 0, "report a child as stuck after this long without progress (default 20s, 6s with -quick)")
}

// applyDefaults fills every size left at zero.
func (c *config) applyDefaults(quick bool) {
	pick := func(p *int, full, small int) {
		if *p <= 0 {
			*p = full
			if quick {
				*p = small
			}
		}
	}
	pickD := func(p *time.Duration, full, small time.Duration) {
		if *p <= 0 {
			*p = full
			if quick {
				*p = small
			}
		}
	}
	pick(&c.AddN, 1_000_000, 100_000)
	pick(&c.Devices, 1_000_000, 100_000)
	pick(&c.Heartbeats, 2_000_000, 200_000)
	pick(&c.FireN, 200_000, 20_000)
	pickD(&c.FireWindow, 2*time.Second, time.Second)
	pickD(&c.FireDense, 200*time.Millisecond, 20*time.Millisecond)
	pick(&c.BurstN, 1_000_000, 100_000)
	pick(&c.ParallelN, 1_000_000, 100_000)
	pick(&c.IdleN, 1_000_000, 100_000)
	pick(&c.SpikeN, 10_000_000, 200_000)
	pickD(&c.Idle, 10*time.Second, time.Second)
	pick(&c.CorrectDevices, 10_000, 2_000)
	pickD(&c.CorrectFor, time.Second, 500*time.Millisecond)
	pick(&c.KeyedKeys, 1_000_000, 100_000)
	pick(&c.KeyedBeats, 2_000_000, 200_000)
	pickD(&c.KeyedTimeout, 3*time.Second, time.Second)
}

// childArgs are the arguments that make a child run one measurement with
// the parent's sizes.
func childArgs(im, wl string, run int, c config) []string {
	return []string{
		childCommand, "-impl", im, "-workload", wl, "-run", strconv.Itoa(run),
		"-workers", strconv.Itoa(c.Workers),
		"-add", strconv.Itoa(c.AddN),
		"-devices", strconv.Itoa(c.Devices),
		"-heartbeats", strconv.Itoa(c.Heartbeats),
		"-fire", strconv.Itoa(c.FireN),
		"-fire-window", c.FireWindow.String(),
		"-fire-dense-window", c.FireDense.String(),
		"-burst", strconv.Itoa(c.BurstN),
		"-parallel", strconv.Itoa(c.ParallelN),
		"-idle-n", strconv.Itoa(c.IdleN),
		"-spike", strconv.Itoa(c.SpikeN),
		"-idle", c.Idle.String(),
		"-correct-devices", strconv.Itoa(c.CorrectDevices),
		"-correct-for", c.CorrectFor.String(),
		"-keyed-keys", strconv.Itoa(c.KeyedKeys),
		"-keyed-beats", strconv.Itoa(c.KeyedBeats),
		"-keyed-timeout", c.KeyedTimeout.String(),
		"-seed", strconv.FormatUint(c.Seed, 10),
		"-stall", stallLimit.String(),
	}
}

// runAll runs every selected measurement, repetitions interleaved so that
// a noisy stretch of time does not hit one implementation only.
func runAll(rep *report, impls, wls []string, c config, count int, quick bool, timeout time.Duration) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	type job struct {
		impl, wl string
		run      int
	}
	var jobs []job
	for run := 1; run <= count; run++ {
		for _, wl := range wls {
			w, _ := findWorkload(wl)
			for _, im := range impls {
				if w.Skip != nil && w.Skip(registry[im]) != "" {
					if run == 1 {
						rep.Runs = append(rep.Runs, runResult{Impl: im, Workload: wl, Run: run, Skipped: w.Skip(registry[im])})
					}
					continue
				}
				jobs = append(jobs, job{im, wl, run})
			}
		}
	}
	var est time.Duration
	for _, j := range jobs {
		est += childEstimate(j.wl, quick)
	}
	fmt.Fprintf(os.Stderr, "bench: %d measurements, each in a process of its own; expect about %s on 2 cores (%s)\n",
		len(jobs), roundEstimate(est), estimateBasis)
	p := newProgress(os.Stderr, len(jobs))
	for _, j := range jobs {
		p.step(fmt.Sprintf("run %d/%d  %-20s %s", j.run, count, j.wl, j.impl))
		res := runOne(exe, j.impl, j.wl, j.run, c, timeout)
		rep.Runs = append(rep.Runs, res)
		outcome := ""
		switch {
		case res.Error != "":
			outcome = fmt.Sprintf("%s/%s run %d failed: %s", j.wl, j.impl, j.run, firstLine(res.Error))
		case len(res.Notes) > 0:
			outcome = fmt.Sprintf("%s/%s run %d: %s", j.wl, j.impl, j.run, strings.Join(res.Notes, "; "))
		}
		p.finish(outcome)
	}
	p.end()
	return nil
}

// runOne runs one child and returns its result, turning a crash, a timeout
// or unreadable output into a failed result.
func runOne(exe, im, wl string, run int, c config, timeout time.Duration) runResult {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, childArgs(im, wl, run, c)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	load := loadAvg()
	start := time.Now()
	outb, err := cmd.Output()
	wall := time.Since(start).Seconds()
	res := runResult{Impl: im, Workload: wl, Run: run, WallSeconds: wall, Load1: load}
	if ctx.Err() != nil {
		res.Error = fmt.Sprintf("did not finish within %v", timeout)
		return res
	}
	if jerr := json.Unmarshal(outb, &res); jerr != nil {
		res.Error = fmt.Sprintf("child failed (%v): %s", err, tail(stderr.String(), 400))
		return res
	}
	res.WallSeconds, res.Load1 = wall, load
	return res
}

// loadAvg returns the 1-minute load average, or 0 where it is unknown.
func loadAvg() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f, _ := strconv.ParseFloat(strings.Fields(string(b) + " 0")[0], 64)
	return f
}

// selectNames returns the comma-separated names in list (all when list is
// empty), in the order of all.
func selectNames(list string, all []string) ([]string, error) {
	if list == "" {
		return all, nil
	}
	want := map[string]bool{}
	for _, n := range strings.Split(list, ",") {
		want[strings.TrimSpace(n)] = true
	}
	var out []string
	for _, n := range all {
		if want[n] {
			out = append(out, n)
			delete(want, n)
		}
	}
	for n := range want {
		return nil, fmt.Errorf("unknown name %q (have: %s)", n, strings.Join(all, ", "))
	}
	return out, nil
}

// expandGroups replaces the group name "keyed" in a comma-separated list of
// workloads by the keyed workloads.
func expandGroups(list string) string {
	if list == "" {
		return list
	}
	var out []string
	for _, n := range strings.Split(list, ",") {
		if strings.TrimSpace(n) == keyedGroup {
			out = append(out, keyedWorkloads...)
			continue
		}
		out = append(out, n)
	}
	return strings.Join(out, ",")
}

// machineInfo describes the machine for the report.
func machineInfo() machine {
	m := machine{
		CPU: "unknown", Cores: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0),
		Go: runtime.Version(), OS: runtime.GOOS + "/" + runtime.GOARCH,
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	return m
}

// commandLine is the command as a user would type it from the bench
// directory.
func commandLine() string {
	args := []string{"go", "run", "."}
	skip := false
	for _, a := range os.Args[1:] {
		switch {
		case skip:
			skip = false
		case a == "-out" || a == "--out":
			skip = true
		case strings.HasPrefix(a, "-out=") || strings.HasPrefix(a, "--out="):
		default:
			args = append(args, a)
		}
	}
	return strings.Join(args, " ")
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "bench:", err)
	os.Exit(1)
}
