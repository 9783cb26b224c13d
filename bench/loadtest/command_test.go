package loadtest

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestIsChildOnlyForRoleFirst(t *testing.T) {
	assert.True(t, IsChild([]string{"-role", "server"}))
	assert.True(t, IsChild([]string{"--role", "loader"}))
	assert.False(t, IsChild(nil))
	assert.False(t, IsChild([]string{"-clients", "10", "-role", "server"}))
	assert.False(t, IsChild([]string{"-roles"}))
}

func TestParseRefusesArgumentsAfterTheFlags(t *testing.T) {
	fs := NewFlagSet("x", io.Discard)
	n := fs.Int("n", 1, "a number")
	require.NoError(t, Parse(fs, []string{"-n", "2"}))
	assert.Equal(t, 2, *n)
	err := Parse(NewFlagSet("x", io.Discard), []string{"stray"})
	require.Error(t, err)
	assert.Equal(t, `unexpected argument "stray"`, err.Error())
	assert.ErrorIs(t, Parse(NewFlagSet("x", io.Discard), []string{"-h"}), flag.ErrHelp)
}

func TestNewFlagSetUsageNamesTheCommandItsFlagsAndExitStatuses(t *testing.T) {
	var out bytes.Buffer
	fs := NewFlagSet("thing", &out, "Does a thing,", "twice.")
	fs.Int("n", 3, "how many")
	fs.Usage()
	assert.Equal(t, "usage: thing [flags]\n\nDoes a thing,\ntwice.\n\nFlags:\n"+
		"  -n int\n    \thow many (default 3)\n\n"+
		"Exit status: 0 pass (a baseline's wrong count is reported, not failed); 1 a count of go-schedule's is wrong or the run failed; 2 invalid flags.\n", out.String())
}

// testCommand is a command whose parse and load do what the test says.
func testCommand(parseErr, loadErr error, failures []Failure, child Func) Func {
	parse := func(args []string, output io.Writer) (int, error) {
		fs := NewFlagSet("cmd", output)
		if err := Parse(fs, args); err != nil {
			return 0, err
		}
		return 7, parseErr
	}
	load := func(_ context.Context, c int, stdout, _ io.Writer) ([]Failure, error) {
		fmt.Fprintf(stdout, "loaded %d", c)
		return failures, loadErr
	}
	return Command("cmd", parse, load, child)
}

func TestCommandExitStatuses(t *testing.T) {
	for _, tt := range []struct {
		name       string
		args       []string
		parseErr   error
		loadErr    error
		failures   []Failure
		want       int
		wantStderr string
	}{
		{name: "pass", want: ExitPass, wantStderr: "cmd: PASS\n"},
		{name: "help", args: []string{"-h"}, want: ExitPass},
		{name: "bad flag", parseErr: errors.New("-n must be positive"), want: ExitUsage,
			wantStderr: "cmd: -n must be positive\nrun 'cmd -h' for the flags\n"},
		{name: "run failed", loadErr: errors.New("no servers"), want: ExitFail, wantStderr: "cmd: FAIL: the run failed: no servers\n"},
		{name: "wrong counts", failures: []Failure{{Count: "a 1"}, {Count: "b 2"}}, want: ExitFail, wantStderr: "cmd: FAIL: a 1; b 2\n"},
		{name: "a baseline's wrong count", failures: []Failure{{Server: "plain", Baseline: true, Count: "a 1"}}, want: ExitPass,
			wantStderr: "cmd: baseline wrong, not go-schedule's (the exit status ignores it): plain: a 1\ncmd: PASS\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			got := testCommand(tt.parseErr, tt.loadErr, tt.failures, nil)(t.Context(), tt.args, nil, &stdout, &stderr)
			assert.Equal(t, tt.want, got)
			if tt.wantStderr != "" {
				assert.Equal(t, tt.wantStderr, stderr.String())
			}
		})
	}
}

func TestCommandRunsTheChildForRole(t *testing.T) {
	var got []string
	child := func(_ context.Context, args []string, _ io.Reader, _, _ io.Writer) int {
		got = args
		return 42
	}
	var stdout bytes.Buffer
	code := testCommand(nil, nil, nil, child)(t.Context(), []string{"-role", "loader", "-index", "1"}, nil, &stdout, io.Discard)
	assert.Equal(t, 42, code)
	assert.Equal(t, []string{"-role", "loader", "-index", "1"}, got)
	assert.Empty(t, stdout.String(), "the child, not the load")
}

func TestServerConfigArgsParseBackIntoIt(t *testing.T) {
	for _, c := range []ServerConfig{
		{Mode: "net", Workers: 8},
		{Mode: "go-schedule+deadline", Listen: "127.0.0.1:1883", Workers: 1, Profile: "dir/x-1.pprof"},
	} {
		var got ServerConfig
		fs := flag.NewFlagSet("child", flag.ContinueOnError)
		got.Register(fs)
		require.NoError(t, fs.Parse(c.Args()))
		want := c
		if want.Listen == "" {
			want.Listen = ListenAddr
		}
		assert.Equal(t, want, got)
	}
}

func TestLoadConfigArgsParseBackIntoIt(t *testing.T) {
	c := LoadConfig{Index: 3, Servers: []string{"127.0.0.1:1", "127.0.0.1:2"}, Live: 900, Silent: 100,
		Fall: 8 * time.Second, Grace: 1500 * time.Millisecond, Source: "127.9.8.4", Dialers: 16, Seed: 1 << 40}
	var got LoadConfig
	fs := flag.NewFlagSet("child", flag.ContinueOnError)
	got.Register(fs)
	require.NoError(t, fs.Parse(c.Args()))
	assert.Equal(t, c, got)
}

// roleRecorder is Roles whose server and loader record what they were
// given and return err.
func roleRecorder(err error) (*Roles[int], *ServerConfig, *LoadConfig, *int) {
	var sc ServerConfig
	var lc LoadConfig
	var extra int
	return &Roles[int]{
		Name:  "test child",
		Flags: func(fs *flag.FlagSet) { fs.IntVar(&extra, "extra", 0, "the command's own flag") },
		Server: func(_ context.Context, c ServerConfig, _ *Emitter[int], _ <-chan string) error {
			sc = c
			return err
		},
		Loader: func(_ context.Context, c LoadConfig, _ *Emitter[int], _ <-chan string) error {
			lc = c
			return err
		},
	}, &sc, &lc, &extra
}

func TestRunChildGivesEachRoleItsFlags(t *testing.T) {
	r, sc, lc, extra := roleRecorder(nil)
	var stdout bytes.Buffer
	code := RunChild(t.Context(), []string{"-role", RoleServer, "-mode", "tick", "-workers", "2", "-extra", "5"},
		strings.NewReader(""), &stdout, io.Discard, *r)
	assert.Equal(t, ExitPass, code)
	assert.Equal(t, ServerConfig{Mode: "tick", Listen: ListenAddr, Workers: 2}, *sc)
	assert.Equal(t, 5, *extra)
	assert.Empty(t, stdout.String())

	code = RunChild(t.Context(), []string{"-role", RoleLoader, "-index", "2", "-server", "a:1"},
		strings.NewReader(""), &stdout, io.Discard, *r)
	assert.Equal(t, ExitPass, code)
	assert.Equal(t, 2, lc.Index)
	assert.Equal(t, []string{"a:1"}, lc.Servers)
}

func TestRunChildTellsTheParentOfAnError(t *testing.T) {
	r, _, _, _ := roleRecorder(errors.New("no luck"))
	var stdout bytes.Buffer
	code := RunChild(t.Context(), []string{"-role", RoleServer}, strings.NewReader(""), &stdout, io.Discard, *r)
	assert.Equal(t, ExitFail, code)
	assert.Equal(t, `{"event":"error","error":"no luck"}`+"\n", stdout.String())

	stdout.Reset()
	code = RunChild(t.Context(), []string{"-role", "juggler"}, strings.NewReader(""), &stdout, io.Discard, *r)
	assert.Equal(t, ExitFail, code)
	assert.Equal(t, `{"event":"error","error":"unknown role \"juggler\""}`+"\n", stdout.String())
}

func TestRunChildIsQuietWhenCanceled(t *testing.T) {
	r, _, _, _ := roleRecorder(fmt.Errorf("stopping: %w", context.Canceled))
	var stdout bytes.Buffer
	code := RunChild(t.Context(), []string{"-role", RoleLoader}, strings.NewReader(""), &stdout, io.Discard, *r)
	assert.Equal(t, ExitPass, code)
	assert.Empty(t, stdout.String())
}

func TestRunChildRefusesUnknownFlags(t *testing.T) {
	r, _, _, _ := roleRecorder(nil)
	var stdout, stderr bytes.Buffer
	code := RunChild(t.Context(), []string{"-role", RoleServer, "-nosuch"}, strings.NewReader(""), &stdout, &stderr, *r)
	assert.Equal(t, ExitUsage, code)
	assert.Empty(t, stdout.String())
	assert.Contains(t, stderr.String(), "-nosuch")
}

func TestJudgeFailsOnlyForGoSchedulesCounts(t *testing.T) {
	ours := Failure{Server: "go-schedule hook", Count: "wills published 9 / 10"}
	base := Failure{Server: "mochi deadline", Baseline: true, Count: "live clients wrongly disconnected 3"}
	for _, tt := range []struct {
		name     string
		failures []Failure
		want     int
		stderr   string
	}{
		{name: "none", want: ExitPass, stderr: "cmd: PASS\n"},
		{name: "baseline only", failures: []Failure{base}, want: ExitPass,
			stderr: "cmd: baseline wrong, not go-schedule's (the exit status ignores it): mochi deadline: live clients wrongly disconnected 3\ncmd: PASS\n"},
		{name: "ours only", failures: []Failure{ours}, want: ExitFail,
			stderr: "cmd: FAIL: go-schedule hook: wills published 9 / 10\n"},
		{name: "both", failures: []Failure{base, ours}, want: ExitFail,
			stderr: "cmd: baseline wrong, not go-schedule's (the exit status ignores it): mochi deadline: live clients wrongly disconnected 3\n" +
				"cmd: FAIL: go-schedule hook: wills published 9 / 10\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var w bytes.Buffer
			assert.Equal(t, tt.want, Judge("cmd", tt.failures, &w))
			assert.Equal(t, tt.stderr, w.String())
		})
	}
}

func flagCommand() Func {
	parse := func(args []string, output io.Writer) (int, error) {
		fs := NewFlagSet("cmd", output, "A test command.")
		n := fs.Int("n", 1, "a number")
		err := Parse(fs, args)
		return *n, err
	}
	load := func(context.Context, int, io.Writer, io.Writer) ([]Failure, error) { return nil, nil }
	return Command("cmd", parse, load, nil)
}

func TestAnUnknownFlagIsReportedFirstWithAOneLineHint(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := flagCommand()(t.Context(), []string{"-nosuch"}, nil, &stdout, &stderr)
	assert.Equal(t, ExitUsage, code)
	assert.Equal(t, "cmd: flag provided but not defined: -nosuch\nrun 'cmd -h' for the flags\n", stderr.String())
}

func TestHelpPrintsTheUsage(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := flagCommand()(t.Context(), []string{"-h"}, nil, &stdout, &stderr)
	assert.Equal(t, ExitPass, code)
	assert.True(t, strings.HasPrefix(stderr.String(), "usage: cmd [flags]\n"), stderr.String())
	assert.Contains(t, stderr.String(), "-n int")
}
