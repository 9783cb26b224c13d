package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime/debug"
	"runtime/pprof"
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
