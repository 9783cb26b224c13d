package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// eagerAddReport is a run of the add workload by the runtime and
// eagercancel at addN tasks, where eager's bytes per task are above the
// target set at a million.
func eagerAddReport(addN int) *report {
	r := &report{
		Count: 3, Config: config{AddN: addN, KeyedKeys: addN},
		Runs: []runResult{
			{Impl: "runtime", Workload: "add", Run: 1, Metrics: metrics{"ns_add": 100, "ns_pair": 200, "bytes_task": 140}},
			{Impl: "eagercancel", Workload: "add", Run: 1, Metrics: metrics{"ns_add": 50, "ns_pair": 100, "bytes_task": 83.18, "allocs_add": 0, "allocs_pair": 0}},
		},
	}
	r.summarizeRuns()
	r.Targets = r.checkTargets()
	return r
}

func bytesTarget(t *testing.T, r *report) targetCheck {
	t.Helper()
	for _, tc := range r.Targets {
		if strings.HasPrefix(tc.Target, "≤ 80 bytes per pending task") {
			return tc
		}
	}
	require.FailNow(t, "no bytes-per-task target")
	return targetCheck{}
}

func TestBytesPerTaskIsLeftOutOfTheVerdictBelowTheSizeItWasSetAt(t *testing.T) {
	r := eagerAddReport(100_000)
	assert.Equal(t, "left out: set at 1000000, this run held 100000", bytesTarget(t, r).Verdict)
	assert.Contains(t, r.verdictLine(), "0 missed")
	assert.Contains(t, r.verdictLine(), "left out (memory per task or key, set at 1000000; this run is smaller)")
}

func TestBytesPerTaskIsJudgedAtTheSizeItWasSetAt(t *testing.T) {
	r := eagerAddReport(1_000_000)
	assert.Equal(t, "MISSED", bytesTarget(t, r).Verdict)
	assert.Contains(t, r.verdictLine(), "1 missed")
	assert.NotContains(t, r.verdictLine(), "left out")
}

func TestFailedRunsAreNamedWithWhoseTheyAre(t *testing.T) {
	r := &report{Runs: []runResult{
		{Impl: "antlabs", Workload: "heartbeat-reset", Run: 1, Error: "deadlocked\nstack"},
		{Impl: "antlabs", Workload: "heartbeat-reset", Run: 2, Error: "deadlocked"},
		{Impl: "lazycancel", Workload: "add", Run: 1},
	}}
	assert.Equal(t, "2 runs failed, none of them go-schedule's (results.md has each one's output):\n"+
		"  heartbeat-reset/antlabs run 1 (a peer): deadlocked\n"+
		"  heartbeat-reset/antlabs run 2 (a peer): deadlocked\n", r.failedRunsText())
}

func TestFailedRunsOfGoScheduleAreCountedAsItsOwn(t *testing.T) {
	r := &report{Runs: []runResult{
		{Impl: "eagercancel", Workload: "add", Run: 1, Error: "killed"},
		{Impl: "runtime", Workload: "spike-fire", Run: 1, Error: "out of memory"},
	}}
	out := r.failedRunsText()
	assert.True(t, strings.HasPrefix(out, "2 runs failed, 1 of them go-schedule's"), out)
	assert.Contains(t, out, "add/eagercancel run 1 (go-schedule): killed")
	assert.Contains(t, out, "spike-fire/runtime run 1 (the baseline): out of memory")
}

func TestNoFailedRunsPrintNothing(t *testing.T) {
	assert.Empty(t, (&report{Runs: []runResult{{Impl: "lazycancel", Workload: "add", Run: 1}}}).failedRunsText())
}
