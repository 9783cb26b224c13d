package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/go-schedule/schedule/bench/loadtest"
)

// TestMain runs the command's code as a child (a server or a load process)
// when the run under test starts this test binary again; otherwise it runs
// the tests, and fails if one leaves a goroutine behind.
func TestMain(m *testing.M) {
	loadtest.RunIfChild(run)
	goleak.VerifyTestMain(m, goleak.IgnoreCurrent())
}

// TestLoadCI runs the whole load test at CI size, every server, each over
// two server processes and two load processes: every count must be exact,
// so the exit status is 0.
func TestLoadCI(t *testing.T) {
	conns := "600"
	if testing.Short() {
		conns = "200"
	}
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), []string{"-conns", conns, "-silent", "0.2", "-idle", "1s", "-beat", "100ms",
		"-fall", "1s", "-grace", "1500ms", "-server-procs", "2", "-loaders", "2", "-dialers", "16",
		"-servers", strings.Join(knownModes, ",")},
		nil, &stdout, &stderr)
	t.Logf("report:\n%s", stdout.String())
	require.Equal(t, loadtest.ExitPass, code, "exit status; standard error:\n%s", stderr.String())
	out := stdout.String()
	for _, want := range []string{"gnet + go-schedule", "gnet + OnTick heap", "net + read deadline",
		"fixed per read", "Reset per read", "time per read", "silent connections closed / expected", "server CPU per connection"} {
		assert.Contains(t, out, want)
	}
	assert.NotContains(t, out, "WRONG")
	assert.Contains(t, stderr.String(), "window", "progress on standard error")
}

// good is a result whose every count is right.
func good() modeResult {
	return modeResult{Mode: modeSchedule, Live: 90, Silent: 10, Result: loadtest.Result[serverResult]{
		Loaders: []loadtest.LoadResult{{
			ClientCounts: loadtest.ClientCounts{LiveConnected: 90, SilentConnected: 10, SilentClosed: 10},
			Lateness:     make([]int64, 10),
		}},
		Servers: []serverResult{{IdleClosed: 10, Usage: loadtest.Usage{Conns: 100, AvgConns: 95, CPU: time.Second, Window: 10 * time.Second}}},
	}}
}

func TestEachWrongCountFailsTheRun(t *testing.T) {
	require.Empty(t, (&report{cfg: config{Rounds: 1}, results: []modeResult{good()}}).failures())
	for name, spoil := range map[string]func(*modeResult){
		"a silent connection not closed": func(m *modeResult) { m.Loaders[0].SilentClosed = 9 },
		"the server counted one more":    func(m *modeResult) { m.Servers[0].IdleClosed = 11 },
		"a live connection closed":       func(m *modeResult) { m.Loaders[0].LiveLost = 1 },
		"a silent one closed too soon":   func(m *modeResult) { m.Loaders[0].SilentLostEarly = 1 },
		"closed early":                   func(m *modeResult) { m.Loaders[0].Early = 1 },
		"a connection failed":            func(m *modeResult) { m.Loaders[0].Failed = 1 },
	} {
		m := good()
		spoil(&m)
		f := (&report{cfg: config{Rounds: 1}, results: []modeResult{m}}).failures()
		if assert.Len(t, f, 1, name) {
			assert.False(t, f[0].Baseline, "%s: go-schedule's server is no baseline", name)
		}
	}
}

// A wrong count of a server that does not run on go-schedule is reported
// as the baseline's: it does not fail the run, and go-schedule's does.
func TestOnlyGoSchedulesWrongCountsFailTheRun(t *testing.T) {
	for _, mode := range knownModes {
		m := good()
		m.Mode = mode
		m.Loaders[0].LiveLost = 1
		f := (&report{cfg: config{Rounds: 1}, results: []modeResult{m}}).failures()
		require.Len(t, f, 1, mode)
		var w bytes.Buffer
		status := loadtest.Judge("idleload", f, &w)
		ours := mode == modeSchedule || mode == modeReset || mode == modeStamp
		if ours {
			assert.Equal(t, loadtest.ExitFail, status, mode)
			assert.Contains(t, w.String(), "FAIL", mode)
		} else {
			assert.Equal(t, loadtest.ExitPass, status, mode)
			assert.Contains(t, w.String(), "baseline", mode)
		}
	}
}

func TestReportShowsEveryRow(t *testing.T) {
	var out bytes.Buffer
	r := &report{cfg: config{Rounds: 2, Modes: []string{modeSchedule}}}
	for round := range 2 {
		m := good()
		m.Round = round
		r.results = append(r.results, m)
	}
	r.write(&out)
	for _, row := range []string{
		"silent connections closed / expected", "live connections closed", "connections closed early",
		"detection lateness p50", "detection lateness p99", "detection lateness max",
		"server memory per connection (RSS)", "server CPU per connection", "server goroutines per connection",
		"server-side lateness p50 / p99 / max",
		"round 2", "medians over 2 rounds",
	} {
		assert.Contains(t, out.String(), row)
	}
	assert.Contains(t, out.String(), "1052.63 µs/s", "1 s of CPU over 10 s and 95 connections")
}

func TestEachRoundStartsOneServerFurtherOn(t *testing.T) {
	modes := []string{modeSchedule, modeReset, modeTick}
	assert.Equal(t, modes, roundOrder(modes, 0))
	assert.Equal(t, []string{modeReset, modeTick, modeSchedule}, roundOrder(modes, 1))
	assert.Equal(t, []string{modeTick, modeSchedule, modeReset}, roundOrder(modes, 2))
	assert.Equal(t, modes, roundOrder(modes, 3))
	assert.Equal(t, []string{modeSchedule, modeReset, modeTick}, modes, "left as it was")
}

func TestRoundTablesKeepTheColumnsAndNameTheOrder(t *testing.T) {
	modes := []string{modeSchedule, modeTick}
	r := &report{cfg: config{Rounds: 2, Modes: modes}}
	for round := range 2 {
		for _, mode := range roundOrder(modes, round) {
			m := good()
			m.Mode, m.Round = mode, round
			r.results = append(r.results, m)
		}
	}
	var out bytes.Buffer
	r.write(&out)
	text := out.String()
	assert.Contains(t, text, "round 1, run in the order schedule, tick\n")
	assert.Contains(t, text, "round 2, run in the order tick, schedule\n")
	second := text[strings.Index(text, "round 2"):]
	assert.Less(t, strings.Index(second, label(modeSchedule)), strings.Index(second, label(modeTick)),
		"the columns of round 2 in the order of -servers")
}

func TestFlags(t *testing.T) {
	var out bytes.Buffer
	c, err := parseFlags([]string{"-conns", "100000"}, &out)
	require.NoError(t, err)
	assert.Equal(t, 7, c.ServerProcs)
	assert.Equal(t, 7, c.Loaders)
	assert.Equal(t, 10000, c.silentCount())
	assert.Equal(t, allModes, c.Modes)
	assert.Equal(t, time.Second, c.Beat, "idle/5")
	assert.Equal(t, 10*time.Second, c.Fall, "2 × idle")

	c, err = parseFlags([]string{"-servers", "net,schedule,tickfix,reset,stamp"}, &out)
	require.NoError(t, err)
	assert.Equal(t, []string{modeNet, modeSchedule, modeTickFix, modeReset, modeStamp}, c.Modes)

	for _, bad := range [][]string{
		{"-conns", "0"}, {"-silent", "2"}, {"-idle", "0"}, {"-beat", "5s"}, {"-servers", "wheel"},
		{"-servers", "net,net"}, {"-rounds", "0"}, {"-conns", "100000", "-server-procs", "2"}, {"stray"},
	} {
		_, err := parseFlags(bad, &out)
		assert.Error(t, err, "%q", bad)
	}
	if lim, ok := loadtest.OpenFileLimit(); ok && lim < 30000+loadtest.FileMargin {
		_, err := parseFlags([]string{"-per-process", "30000"}, &out)
		assert.Error(t, err, "a limit of %d open files", lim)
	}
}

func TestBadFlagsExitWithStatusTwo(t *testing.T) {
	var stdout, stderr bytes.Buffer
	assert.Equal(t, loadtest.ExitUsage, run(context.Background(), []string{"-idle", "-1s"}, nil, &stdout, &stderr))
	assert.True(t, strings.Contains(stderr.String(), "-idle"), stderr.String())
}
