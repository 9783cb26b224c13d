package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// TestMain runs a child's measurement when the parent under test starts
// this test binary again as its child; otherwise it runs the tests and
// fails the run if one leaves a goroutine behind.
func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(childMain(os.Args[1:], os.Stdout, os.Stderr))
	}
	goleak.VerifyTestMain(m, goleak.IgnoreCurrent())
}

// tiny are sizes and phase lengths that run every step in about a second.
func tiny(out string, more ...string) []string {
	return append([]string{"-sizes", "100,1000", "-ref", "100", "-ops", "400", "-batch", "100",
		"-gc-window", "100ms", "-out", out}, more...)
}

func readResults(t *testing.T, dir string) []result {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "curve.json"))
	require.NoError(t, err)
	var raw struct{ Results []result }
	require.NoError(t, json.Unmarshal(b, &raw))
	return raw.Results
}

// Every implementation runs at every size in a child of its own, measures
// every figure, and the table shows each step and a verdict.
func TestTinyCurveMeasuresEveryStep(t *testing.T) {
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := run(tiny(out, "-profile", "lazy:1000:fire"), &stdout, &stderr)
	require.Equal(t, 0, code, "exit status; stderr:\n%s", stderr.String())

	rs := readResults(t, out)
	require.Len(t, rs, 2*len(implNames))
	for _, r := range rs {
		assert.Empty(t, r.Error, "%s at %d", r.Impl, r.N)
		assert.Empty(t, r.Skipped, "%s at %d", r.Impl, r.N)
		for _, o := range ops {
			assert.Positive(t, o.get(r), "%s of %s at %d", o.name, r.Impl, r.N)
		}
		assert.Positive(t, r.HeapB, "heap bytes of %s at %d", r.Impl, r.N)
		assert.True(t, r.GCWindowS > 0 || r.GCCycleS > 0, "steady window of %s at %d: run, or the time a cycle would take given", r.Impl, r.N)
	}

	table := stdout.String()
	for _, impl := range implNames {
		assert.Contains(t, table, impl+"  10^2", "a row per implementation and size")
		assert.Contains(t, table, impl+"  10^3")
	}
	assert.Contains(t, table, "verdict: ")
	assert.Contains(t, table, "not measured, 10^8 not run")
	assert.Contains(t, table, "go1.")
	assert.NotContains(t, table, out, "the header leaves the output directory out")
	assert.Contains(t, stderr.String(), "[8/8 ", "progress names each step")

	prof, err := os.Stat(filepath.Join(out, "cpu-lazy-10^3-fire.pprof"))
	require.NoError(t, err, "the profile asked for")
	assert.Positive(t, prof.Size())
}

// A step whose estimate does not fit in MemAvailable is skipped, with the
// reason, and runs no child.
func TestStepThatDoesNotFitIsSkipped(t *testing.T) {
	if _, ok := memAvailable(); !ok {
		t.Skip("no /proc/meminfo here")
	}
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := run(tiny(out, "-impls", "runtime", "-reserve-gb", "1e6"), &stdout, &stderr)
	require.Equal(t, 0, code, "stderr:\n%s", stderr.String())
	for _, r := range readResults(t, out) {
		assert.Contains(t, r.Skipped, "MemAvailable")
		assert.Zero(t, r.WallS, "no child ran")
	}
	assert.Contains(t, stdout.String(), "skipped (below)")
	assert.Contains(t, stdout.String(), "skipped: needs about")
}

// A memory limit holds the estimate of a child's peak down to the limit,
// but not below the live set.
func TestMemoryLimitLowersTheEstimate(t *testing.T) {
	unlimited, _ := estimate("runtime", huge)
	t.Setenv("GOMEMLIMIT", "20GiB")
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(20 << 30))
	limited, _ := estimate("runtime", huge)
	assert.Less(t, limited, unlimited)
	assert.InDelta(t, float64(20<<30), limited, 1)
	debug.SetMemoryLimit(1 << 30)
	live, _ := estimate("runtime", huge)
	assert.InDelta(t, livePerTask["runtime"]*huge+fixedBytes, live, 1, "never below the live set")
}

// The parent's help lists what a user sets, not the flags only a child
// takes.
func TestHelpListsNoChildOnlyFlags(t *testing.T) {
	var stderr bytes.Buffer
	_, err := parseFlags([]string{"-h"}, &stderr)
	require.ErrorIs(t, err, flag.ErrHelp)
	help := stderr.String()
	for _, want := range []string{"-sizes", "-impls", "-huge", "-profile", "-gc-window", "-out"} {
		assert.Contains(t, help, want)
	}
	for _, childOnly := range []string{"  -impl ", "  -n ", "-profile-phase", "-profile-out"} {
		assert.NotContains(t, help, childOnly)
	}
}

func TestFlagsRefuseBadValues(t *testing.T) {
	for _, bad := range [][]string{
		{"-sizes", "0"}, {"-sizes", "2.5"}, {"-sizes", "many"}, {"-impls", "wheel"},
		{"-profile", "lazy:1e3"}, {"-ops", "0"}, {"-gc-window", "0s"}, {"stray"},
	} {
		var stderr bytes.Buffer
		_, err := parseFlags(bad, &stderr)
		assert.Error(t, err, strings.Join(bad, " "))
	}
}

func TestSizesReadAsWritten(t *testing.T) {
	for in, want := range map[string]int{"1000": 1000, "1e7": 10_000_000, "10^8": huge, " 250 ": 250} {
		n, err := parseSize(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, n, in)
	}
	assert.Equal(t, "10^6", sizeName(1_000_000))
	assert.Equal(t, "250", sizeName(250))
}

// The verdict checks what ran against the bounds and names the
// rest as not measured.
func TestVerdictChecksTargetsAndNamesTheUnmeasured(t *testing.T) {
	c := config{sizes: []int{1_000_000, gcShareSize, huge}, impls: []string{"runtime", "lazy"}, ref: 1_000_000}
	flat := func(impl string, n int, scale, heap, share float64) result {
		return result{Impl: impl, N: n, Add: 100 * scale, ResetLater: 50 * scale, ResetEarlier: 50 * scale,
			Cancel: 40 * scale, Fire: 500 * scale, HeapB: heap, GCShare: share, GCCycles: 2, WallS: 10}
	}
	rs := []result{
		flat("runtime", 1_000_000, 1, 150, 2), flat("runtime", gcShareSize, 1.2, 150, 2),
		{Impl: "runtime", N: huge, Skipped: "needs about 40 GB"},
		flat("lazy", 1_000_000, 1, 64, 1), flat("lazy", gcShareSize, 1.1, 64, 0.5), flat("lazy", huge, 2.5, 64, 0.5),
	}
	lines := verdict(c, rs, time.Minute)
	text := strings.Join(lines, "\n")
	assert.Contains(t, text, "FAIL  lazy add at 10^8: ×2.50 of 10^6")
	assert.Contains(t, text, "pass  lazy fire at 10^8: ×2.50 of 10^6 (target ≤ 3×)")
	assert.Contains(t, text, "pass  lazy memory at 10^8: 64 B")
	assert.Contains(t, text, "pass  lazy memory ≤ 0.5× the runtime's at every size both ran: worst ×0.43, at 10^6; ×0.43 at 10^7")
	assert.Contains(t, text, "pass  lazy GC CPU share at 10^7: 0.50% against the runtime's 2.00%, ×0.25")
	assert.Contains(t, text, "pass  sizes up to 10^7 ran in 40s")
	assert.Contains(t, text, "--    eager", "eager did not run: its targets are named, not checked")
	assert.True(t, strings.HasPrefix(lines[0], "verdict: 5 met, 4 missed, 3 not measured"), lines[0])
}
