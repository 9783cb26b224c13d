package main

import (
	"bytes"
	"flag"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// Tests of what a person reads: the flags -h lists, the console's table
// and its verdict line.

func TestHelpListsNoChildFlags(t *testing.T) {
	var c config
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	var out bytes.Buffer
	fs.SetOutput(&out)
	parentFlags(&c, fs)
	require.ErrorIs(t, fs.Parse([]string{"-h"}), flag.ErrHelp)
	help := out.String()
	for _, want := range []string{"-quick", "-count", "-impl", "-workload", "-devices", "go run . child"} {
		assert.Contains(t, help, want)
	}
	// PrintDefaults lists a flag as "  -name type".
	for _, internal := range []string{"-child-impl", "-child-run", "-child-workload", "  -run ", "  -cpuprofile "} {
		assert.NotContains(t, help, internal, "the child's flags are its own")
	}
}

// A child gets the parent's sizes through the same flags as the parent.
func TestChildArgsCarryTheSizes(t *testing.T) {
	c := config{Workers: 8, AddN: 123, Devices: 45, Idle: 7e9, Seed: 9}
	args := childArgs("lazycancel", "add", 2, c)
	require.Equal(t, childCommand, args[0])
	var got config
	fs := flag.NewFlagSet("child", flag.ContinueOnError)
	impl, wl, run := fs.String("impl", "", ""), fs.String("workload", "", ""), fs.Int("run", 0, "")
	sizeFlags(fs, &got)
	require.NoError(t, fs.Parse(args[1:]))
	assert.Equal(t, "lazycancel", *impl)
	assert.Equal(t, "add", *wl)
	assert.Equal(t, 2, *run)
	assert.Equal(t, c.Workers, got.Workers)
	assert.Equal(t, c.AddN, got.AddN)
	assert.Equal(t, c.Devices, got.Devices)
	assert.Equal(t, c.Idle, got.Idle)
	assert.Equal(t, c.Seed, got.Seed)
}

// sampleReport is a one-repetition run of the add workload by the runtime
// and lazycancel, where lazycancel's add+cancel misses its target.
func sampleReport() *report {
	r := &report{
		Command: "go run . -quick", Date: "2026-11-26T00:00:00Z", Count: 1, Quick: true,
		Machine: machine{CPU: "Test CPU", Cores: 2, GOMAXPROCS: 2, Go: "go1.26.8", OS: "linux/amd64"},
		Runs: []runResult{
			{Impl: "runtime", Workload: "add", Run: 1, Metrics: metrics{"ns_add": 100, "ns_pair": 200, "bytes_task": 140}},
			{Impl: "lazycancel", Workload: "add", Run: 1, Metrics: metrics{"ns_add": 50, "ns_pair": 300, "bytes_task": 70, "allocs_add": 0, "allocs_pair": 0}},
			{Impl: "runtime", Workload: "fire", Run: 1, Metrics: metrics{"late_p99_ms": 1}},
			{Impl: "russellluo", Workload: "fire", Run: 1, Metrics: metrics{"late_p99_ms": -3}},
		},
	}
	r.summarizeRuns()
	r.Targets = r.checkTargets()
	return r
}

func TestConsoleEndsWithTheVerdict(t *testing.T) {
	r := sampleReport()
	out := r.console("/tmp/out")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var met, missed, unmeasured int
	for _, tc := range r.Targets {
		switch {
		case strings.HasPrefix(tc.Verdict, "met"):
			met++
		case strings.HasPrefix(tc.Verdict, "MISSED"):
			missed++
		default:
			unmeasured++
		}
	}
	require.Equal(t, 1, missed, "the sample misses add+cancel only")
	assert.Equal(t, r.verdictLine(), lines[len(lines)-1])
	assert.Contains(t, lines[len(lines)-1], "verdict: go-schedule targets")
	assert.Contains(t, lines[len(lines)-1], "(indicative: 1 repetition at CI sizes)")
	assert.Contains(t, out, "machine: Test CPU, 2 cores, GOMAXPROCS 2, go1.26.8", "the CPU model and the Go version")
	assert.Contains(t, out, "ScheduleOne+CancelTask ns ≤ AfterFunc+Stop (cancel right after add): 300 (×1.500)", "the missed target is listed")
	assert.Contains(t, out, "/tmp/out/results.md", "where the full tables are")
	assert.Greater(t, unmeasured, 0, "the sample measures only two workloads")
	assert.Equal(t, met+missed+unmeasured, len(r.Targets))
}

func TestShortHeadlineCellsAreReadable(t *testing.T) {
	r := sampleReport()
	table := r.shortHeadline()
	assert.Contains(t, table, "50 (×0.50)", "a figure with its ratio")
	assert.Contains(t, table, "early", "a negative lateness is early, not a number")
	assert.NotContains(t, table, "-3")
	for _, line := range strings.Split(strings.TrimSpace(table), "\n") {
		assert.LessOrEqual(t, len(strings.Fields(line)), 20, "a row a person reads in one look: %q", line)
	}
}

func TestEstimateCoversEveryWorkload(t *testing.T) {
	for _, w := range workloads {
		assert.Positive(t, childEstimate(w.Name, false), "full %s", w.Name)
		assert.Positive(t, childEstimate(w.Name, true), "quick %s", w.Name)
	}
	assert.Equal(t, "40 s", roundEstimate(38e9))
	assert.Equal(t, "4 min", roundEstimate(220e9))
}

// TestMain fails the run if a test leaves a goroutine behind. Importing
// ants starts its package-level default pool before any test runs;
// IgnoreCurrent ignores exactly those goroutines.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreCurrent())
}
