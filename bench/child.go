package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime/debug"
	"runtime/pprof"
	"time"
)

// runResult is what one child process reports: one implementation, one
// workload, one repetition.
type runResult struct {
	Impl     string   `json:"impl"`
	Workload string   `json:"workload"`
	Run      int      `json:"run"`
	Metrics  metrics  `json:"metrics,omitempty"`
	Notes    []string `json:"notes,omitempty"`
	// Error is set when the run failed; Skipped when it was not attempted.
	Error   string `json:"error,omitempty"`
	Skipped string `json:"skipped,omitempty"`
	// WallSeconds is the child's whole lifetime as seen by the parent.
	WallSeconds float64 `json:"wall_s"`
	// Load1 is the machine's 1-minute load average when the child started
	// (Linux only), a hint of how much else was running.
	Load1 float64 `json:"load1,omitempty"`
}

// childCommand is the first argument of a child process: the parent runs
// its own binary as "bench child -impl … -workload … -run …" plus the
// sizes. The child's flags are a FlagSet of their own, so that the
// parent's -h lists only what a user sets.
const childCommand = "child"

// childMain parses a child's arguments, runs its measurement and exits at
// once: an implementation's goroutines may still be busy. Run by hand, as
// "go run . child -impl lazycancel -workload add -cpuprofile cpu.out", it
// profiles one measurement.
func childMain(args []string) {
	var c config
	fs := flag.NewFlagSet("bench "+childCommand, flag.ExitOnError)
	impl := fs.String("impl", "", "implementation to measure")
	wl := fs.String("workload", "", "workload to run")
	run := fs.Int("run", 1, "repetition number (seeds the workload's randomness)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the measurement to this file")
	quick := fs.Bool("quick", false, "CI sizes for the sizes not given")
	sizeFlags(fs, &c)
	fs.Parse(args)
	c.applyDefaults(*quick)
	if stallLimit <= 0 {
		stallLimit = 20 * time.Second
	}
	sortWorkloads()
	runChild(*impl, *wl, *run, c, *cpuProfile)
	os.Exit(0)
}

// runChild measures one implementation on one workload and writes the
// runResult as JSON to stdout. Failures are reported in the result, so the
// process exits 0 whenever it could write one.
func runChild(implName, workloadName string, run int, c config, cpuProfile string) {
	res := runResult{Impl: implName, Workload: workloadName, Run: run}
	startWatchdog(res)
	if cpuProfile != "" {
		f, err := os.Create(cpuProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "cpu profile:", err)
			os.Exit(1)
		}
		defer func() {
			pprof.StopCPUProfile()
			f.Close()
		}()
	}
	im, ok := registry[implName]
	w, wok := findWorkload(workloadName)
	switch {
	case !ok:
		res.Error = "unknown implementation " + implName
	case !wok:
		res.Error = "unknown workload " + workloadName
	default:
		func() {
			defer func() {
				if r := recover(); r != nil {
					res.Error = fmt.Sprintf("panic: %v\n%s", r, debug.Stack())
				}
			}()
			r := rand.New(rand.NewPCG(c.Seed, uint64(run)))
			m, notes, err := w.Run(im, c, r)
			res.Metrics, res.Notes = m, notes
			if err != nil {
				res.Error = err.Error()
			}
		}()
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(res); err != nil {
		fmt.Fprintln(os.Stderr, "writing result:", err)
		os.Exit(1)
	}
}
