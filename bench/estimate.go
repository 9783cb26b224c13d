package main

import (
	"fmt"
	"time"
)

// childSeconds is the wall time of one child process per workload, in
// seconds, at the default sizes (full) and at -quick's, on a 2-core
// machine: the higher of the two full runs of 2026-11-25 in results/
// (an otherwise idle AMD EPYC VM), and a -quick run of 2026-11-26 on a
// machine loaded by other builds. Each child also starts a process and
// the Go runtime, which the figures include.
var childSeconds = map[string]struct{ full, quick float64 }{
	"add":                 {1.6, 0.3},
	"parallel":            {0.8, 0.2},
	"heartbeat-reset":     {5.8, 1.6},
	"heartbeat-mixed":     {5.9, 1.4},
	"heartbeat-earlier":   {5.0, 0.8},
	"heartbeat-canceladd": {4.9, 1.4},
	"fire":                {3.2, 1.6},
	"fire-dense":          {1.5, 0.7},
	"burst":               {8.5, 1.9},
	"idle":                {11.9, 2.5},
	"spike-cancel":        {6.6, 3.6},
	"spike-fire":          {49.5, 16.3},
	"correct-reset":       {5.3, 2.6},
	"correct-canceladd":   {2.4, 1.9},
	"keyed-uint64":        {8.1, 2.7},
	"keyed-string":        {9.4, 3.3},
}

// estimateBasis says where the estimate comes from, next to it.
const estimateBasis = "from earlier runs at the default or -quick sizes; a loaded machine takes longer, and go run compiles first"

// childEstimate is the expected wall time of one child of workload wl.
func childEstimate(wl string, quick bool) time.Duration {
	s := childSeconds[wl]
	sec := s.full
	if quick {
		sec = s.quick
	}
	return time.Duration(sec * float64(time.Second))
}

// roundEstimate prints an estimate as a person says it: seconds under a
// minute, then minutes.
func roundEstimate(d time.Duration) string {
	if d < 10*time.Second {
		return "a few seconds"
	}
	if d < time.Minute {
		return fmt.Sprintf("%d s", int(d.Round(10*time.Second).Seconds()))
	}
	return fmt.Sprintf("%d min", int(d.Round(time.Minute).Minutes()))
}
