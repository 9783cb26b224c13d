package main

import (
	"flag"
	"io"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreCurrent())
}

func parseTestFlags(args ...string) (config, childRole, error) {
	fs := flag.NewFlagSet("host", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	c, _, role, err := parseFlags(fs, args)
	return c, role, err
}

func TestPercentileTakesTheNearestRank(t *testing.T) {
	xs := make([]float64, 1000)
	for i := range xs {
		xs[i] = float64(i + 1)
	}
	assert.Equal(t, 500.0, percentile(xs, 50))
	assert.Equal(t, 990.0, percentile(xs, 99))
	assert.Equal(t, 999.0, percentile(xs, 99.9))
	assert.Equal(t, 1000.0, percentile(xs, 100))
}

func TestPercentileOfFewValuesIsTheLargestAboveTheRank(t *testing.T) {
	assert.Equal(t, 3.0, percentile([]float64{1, 2, 3}, 99.9))
	assert.Equal(t, 2.0, percentile([]float64{1, 2, 3}, 50))
	assert.Equal(t, 0.0, percentile(nil, 99))
}

func TestMedianOfAnEvenCountIsTheMeanOfTheMiddleTwo(t *testing.T) {
	xs := []float64{4, 1, 3, 2}
	assert.Equal(t, 2.5, median(xs))
	assert.Equal(t, []float64{4, 1, 3, 2}, xs, "median must not reorder its input")
}

func TestMedianOfAnOddCountIsTheMiddleValue(t *testing.T) {
	assert.Equal(t, 3.0, median([]float64{5, 3, 1}))
	assert.True(t, math.IsNaN(median(nil)))
}

func run(rep int, p99 float64) *hostResult {
	return &hostResult{cell: cell{Rep: rep}, LateP99: p99}
}

func TestCompareRunsPairsOnlyRepetitionsBothSidesCompleted(t *testing.T) {
	gs := []*hostResult{run(1, 20), run(2, 30), run(3, 99)}
	rt := []*hostResult{run(1, 10), run(2, 10)}
	q := compareRuns(gs, rt, 30, 10, metricGetter("late_p99_us"))
	assert.Equal(t, 3.0, q.Median)
	assert.Equal(t, 2.0, q.Min)
	assert.Equal(t, 3.0, q.Max)
	assert.Equal(t, 2, q.N)
}

func TestCompareRunsOverZeroIsNotANumber(t *testing.T) {
	q := compareRuns([]*hostResult{run(1, 5)}, []*hostResult{run(1, 0)}, 5, 0, metricGetter("late_p99_us"))
	assert.True(t, math.IsNaN(q.Median))
	assert.Equal(t, 0, q.N)
}

// summarized builds a report of one repetition of lazycancel and runtime
// on one shape with the given figures, and summarizes it.
func summarized(gs, rt hostResult) *report {
	c := config{Count: 1, Procs: []int{1}, Shapes: []string{shapeGateway}, Impls: []string{"lazycancel", implRuntime}}
	gs.cell = cell{Impl: "lazycancel", Shape: shapeGateway, Procs: 1, Rep: 1}
	rt.cell = cell{Impl: implRuntime, Shape: shapeGateway, Procs: 1, Rep: 1}
	r := &report{Config: c, Runs: []hostResult{gs, rt}}
	r.summarize()
	return r
}

func TestVerdictsCompareMedianRatiosWithTheLimits(t *testing.T) {
	r := summarized(
		hostResult{LateP99: 110, LateP999: 111, CPUMsPerS: 10.0, CtxSwPerS: 1000},
		hostResult{LateP99: 100, LateP999: 100, CPUMsPerS: 9.9, CtxSwPerS: 1000},
	)
	require.Len(t, r.Verdicts, len(targets))
	met := map[string]bool{}
	for _, v := range r.Verdicts {
		require.True(t, v.Measured, v.Target)
		met[v.Target] = v.Met
	}
	assert.Equal(t, map[string]bool{"host p99": true, "host p99.9": false, "CPU": false, "context switches": true}, met)
}

func TestFailedRunsAreLeftOutOfMediansAndListed(t *testing.T) {
	r := summarized(hostResult{LateP99: 50, Error: "host crashed"}, hostResult{LateP99: 100})
	require.Len(t, r.Failures, 1)
	assert.Contains(t, r.Failures[0], "host crashed")
	gs := r.cell(1, shapeGateway, "lazycancel")
	require.NotNil(t, gs)
	assert.Equal(t, 0, gs.N)
	for _, v := range r.Verdicts {
		assert.False(t, v.Measured, v.Target)
	}
}

func TestRotateStartsAtTheRepetitionsOffset(t *testing.T) {
	xs := []string{"a", "b", "c"}
	assert.Equal(t, []string{"a", "b", "c"}, rotate(xs, 0))
	assert.Equal(t, []string{"b", "c", "a"}, rotate(xs, 1))
	assert.Equal(t, []string{"a", "b", "c"}, rotate(xs, 3))
	assert.Equal(t, []string{"a", "b", "c"}, xs)
}

func TestPlanRunsEveryImplementationOfAGroupTogether(t *testing.T) {
	c := config{Count: 2, Procs: []int{1, 2}, Shapes: []string{shapeGateway, shapeFire}, Impls: []string{"x", "y", "z"}}
	cells := plan(c)
	require.Len(t, cells, 2*2*2*3)
	assert.Equal(t, cell{Impl: "x", Shape: shapeGateway, Procs: 1, Rep: 1}, cells[0])
	assert.Equal(t, cell{Impl: "z", Shape: shapeGateway, Procs: 1, Rep: 1}, cells[2])
	assert.Equal(t, cell{Impl: "x", Shape: shapeFire, Procs: 1, Rep: 1}, cells[3])
	second := cells[12:15]
	assert.Equal(t, []string{"y", "z", "x"}, []string{second[0].Impl, second[1].Impl, second[2].Impl})
}

func TestRecorderWindowCountsOnlyPacketsReadInsideIt(t *testing.T) {
	base := time.Unix(1000, 0)
	r := newRecorder(10)
	add := func(at time.Duration, seq uint64, late time.Duration) {
		i := r.n.Load()
		r.recv[i], r.seq[i], r.late[i] = base.Add(at).UnixNano(), seq, int64(late)
		r.n.Store(i + 1)
	}
	add(0, 1, time.Hour) // before the window
	add(time.Second, 2, 10*time.Microsecond)
	add(2*time.Second, 3, 30*time.Microsecond)
	// Sequence number 4 never arrived.
	add(3*time.Second, 5, 20*time.Microsecond)
	add(4*time.Second, 6, time.Hour) // at the window's end, outside it
	packets, lost, p50, p99, _, worst := r.window(base.Add(time.Second), base.Add(4*time.Second))
	assert.Equal(t, 3, packets)
	assert.Equal(t, 1, lost)
	assert.Equal(t, 20.0, p50)
	assert.Equal(t, 30.0, p99)
	assert.Equal(t, 30.0, worst)
}

func TestCheckFailsWorkBeyondTheTolerance(t *testing.T) {
	ok := hostResult{Packets: 1, Unit: "runs", WorkPerS: 3700, ExpectedPerS: 4000}
	require.NoError(t, check(&ok, newRecorder(0)))
	short := ok
	short.WorkPerS = 3500
	assert.Error(t, check(&short, newRecorder(0)))
}

func TestCheckFailsAGatewayKeyThatExpired(t *testing.T) {
	res := hostResult{Packets: 1, Unit: "resets", WorkPerS: 50000, ExpectedPerS: 50000, Expired: 1}
	assert.ErrorContains(t, check(&res, newRecorder(0)), "expired")
}

func TestQuickShortensTheRunUnlessSizesAreGiven(t *testing.T) {
	c, _, err := parseTestFlags("-quick")
	require.NoError(t, err)
	assert.Equal(t, quickCount, c.Count)
	assert.Equal(t, quickWindow, c.Window)
	assert.Equal(t, quickWarmup, c.Warmup)
	c, _, err = parseTestFlags("-quick", "-window", "5s")
	require.NoError(t, err)
	assert.Equal(t, 5*time.Second, c.Window)
}

func TestSelectionsKeepTheOrderGiven(t *testing.T) {
	c, _, err := parseTestFlags("-impl", "runtime,lazycancel", "-shape", "fire", "-gomaxprocs", "2,1")
	require.NoError(t, err)
	assert.Equal(t, []string{"runtime", "lazycancel"}, c.Impls)
	assert.Equal(t, []string{"fire"}, c.Shapes)
	assert.Equal(t, []int{2, 1}, c.Procs)
}

func TestBadFlagsAreRejected(t *testing.T) {
	for _, args := range [][]string{
		{"-count", "-1"},
		{"-window", "-1s"},
		{"-warmup", "-1s"},
		{"-interval", "0s"},
		{"-workers", "0"},
		{"-keys", "0"},
		{"-timeout", "2s"},
		{"-fire-tasks", "0"},
		{"-fire-max", "0s"},
		{"-impl", "wheel"},
		{"-impl", "runtime,runtime"},
		{"-shape", ""},
		{"-gomaxprocs", "0"},
		{"-gomaxprocs", "1,x"},
		{"-role", "other"},
		{"-window", "soon"},
		{"stray"},
	} {
		_, _, err := parseTestFlags(args...)
		assert.Error(t, err, "%v", args)
	}
}

func TestCommandLineLeavesOutTheOutputDirectory(t *testing.T) {
	assert.Equal(t, "go run ./cmd/host -quick -count 2",
		commandLine([]string{"-out", "/tmp/x", "-quick", "-out=/y", "-count", "2"}))
}

func TestOutputGoesOutsideTheWorkTreeUnlessAsked(t *testing.T) {
	fs := flag.NewFlagSet("host", flag.ContinueOnError)
	_, out, _, err := parseFlags(fs, []string{"-quick"})
	require.NoError(t, err)
	assert.Empty(t, out, "no -out: main writes to a new temporary directory")
}

func TestAnUnknownFlagPrintsNoUsage(t *testing.T) {
	fs := flag.NewFlagSet("host", flag.ContinueOnError)
	var out strings.Builder
	fs.SetOutput(&out)
	_, _, _, err := parseFlags(fs, []string{"-nosuch"})
	require.EqualError(t, err, "flag provided but not defined: -nosuch")
	assert.Empty(t, out.String(), "main prints the error first, then a one-line hint")
}

func TestHelpListsNoInternalFlags(t *testing.T) {
	fs := flag.NewFlagSet("host", flag.ContinueOnError)
	var out strings.Builder
	fs.SetOutput(&out)
	_, _, _, err := parseFlags(fs, []string{"-h"})
	require.ErrorIs(t, err, flag.ErrHelp)
	assert.Contains(t, out.String(), "-quick")
	assert.Contains(t, out.String(), "(default 3s)", "defaults are printed as flag prints them")
	for _, internal := range []string{"-role", "-spec", "-addr", "internal:"} {
		assert.NotContains(t, out.String(), internal)
	}
}
