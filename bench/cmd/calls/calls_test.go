package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func runCalls(t *testing.T, args ...string) (code int, out, errOut string) {
	t.Helper()
	var o, e bytes.Buffer
	code = run(args, &o, &e)
	return code, o.String(), e.String()
}

func TestRatiosPairEachRepetitionWithTheRuntimesOfTheSameRepetition(t *testing.T) {
	_, out, _ := runCalls(t, "-in", "testdata/two.txt")
	// Reset lazy: 60/100 and 80/100; eager: 50/100 and 60/100.
	assert.Contains(t, out, "| `Reset` (the heartbeat) against `Timer.Reset` | 0.70 (0.60–0.80) | 0.55 (0.50–0.60) |")
	assert.Contains(t, out, "median (range) of 2 repetitions")
	assert.Contains(t, out, "cpu: Test CPU 9000")
}

func TestBenchmarksNotFoundAreReportedAsNotMeasured(t *testing.T) {
	_, out, _ := runCalls(t, "-in", "testdata/two.txt")
	assert.Contains(t, out, "| `CancelTask` against `Timer.Stop` | not measured | not measured |")
	assert.Contains(t, out, "not measured lazy  ≤ 1.25 heap entries per live task: –")
}

func TestAMissedTargetIsCountedInTheVerdictAndFailsTheCommand(t *testing.T) {
	code, out, _ := runCalls(t, "-in", "testdata/two.txt")
	// Lazy ScheduleOne: 300/200 and 100/200, median 1.0, met; eager
	// ScheduleOne allocates 2 in one repetition, the worst counts.
	assert.Contains(t, out, "MISSED       eager ≤ 1 allocation per ScheduleOne: 2")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	assert.Equal(t, "verdict: targets 7 met, 2 missed, 11 not measured", lines[len(lines)-1])
	assert.Equal(t, 1, code)
}

func TestAnUnknownFlagPrintsTheErrorThenAOneLineHint(t *testing.T) {
	code, out, errOut := runCalls(t, "-bogus")
	require.Equal(t, 2, code)
	assert.Empty(t, out)
	assert.Equal(t, "calls: flag provided but not defined: -bogus\nrun 'go run ./cmd/calls -h' for the flags\n", errOut)
}

func TestHelpPrintsTheUsageAndSucceeds(t *testing.T) {
	code, _, errOut := runCalls(t, "-h")
	assert.Equal(t, 0, code)
	assert.Contains(t, errOut, "usage: go run ./cmd/calls")
}

func TestAnAbsoluteLimitJudgesTheFigureNotTheRatio(t *testing.T) {
	_, out, _ := runCalls(t, "-in", "testdata/two.txt")
	assert.Contains(t, out, "| 0.44 | 0.60 |", "the table shows the ratio to the runtime's bytes")
	assert.Contains(t, out, "MISSED       eager ≤ 80 bytes per pending task: 90", "the target bounds the bytes")
}
