package loadtest

import (
	"context"
	"flag"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The roles of testChild besides RoleServer and RoleLoader, each a way for
// a child to behave or misbehave.
const (
	roleEcho    = "echo"    // ready with -n; on report, a result with -n; progress 1, 2, 3 first
	roleGarbage = "garbage" // a line that is not JSON
	roleFail    = "fail"    // an error message, and exit status 1
	roleQuit    = "quit"    // exits at once, without a word
	roleWrong   = "wrong"   // connected where ready is due
	roleSleep   = "sleep"   // sleeps for an hour
)

// testChild is what this test binary runs when a test starts it as a
// child: args are -role ROLE, and for roleEcho -n N.
func testChild(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) < 2 {
		return 99
	}
	switch args[1] {
	case RoleServer, RoleLoader:
		return runTestRoles(ctx, args, stdin, stdout, stderr)
	}
	out := NewEmitter[testResult](stdout)
	switch args[1] {
	case roleEcho:
		n, _ := strconv.Atoi(args[len(args)-1])
		for i := range 3 {
			out.Emit(Message[testResult]{Event: EventProgress, Progress: &ClientCounts{LiveConnected: int64(n*10 + i + 1)}})
		}
		out.Emit(Message[testResult]{Event: EventReady, Addr: fmt.Sprint("addr-", n)})
		for cmd := range Commands(stdin) {
			if cmd == CmdReport {
				out.Emit(Message[testResult]{Event: EventResult, Server: &testResult{N: n}})
			}
		}
	case roleGarbage:
		fmt.Fprintln(stdout, "this is not JSON")
	case roleFail:
		return out.Finish(fmt.Errorf("the child failed"))
	case roleQuit:
	case roleWrong:
		out.Emit(Message[testResult]{Event: EventConnected})
	case roleSleep:
		time.Sleep(time.Hour)
	}
	return ExitPass
}

// runTestRoles runs a server that counts no connections and a load process
// whose clients connect and close at once, without a network, and note
// what the parent told them.
func runTestRoles(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var extra string
	return RunChild(ctx, args, stdin, stdout, stderr, Roles[testResult]{
		Name:  "test child",
		Flags: func(fs *flag.FlagSet) { fs.StringVar(&extra, "extra", "", "an argument of the command's own") },
		Server: func(ctx context.Context, c ServerConfig, out *Emitter[testResult], cmds <-chan string) error {
			return Serve(ctx, out, cmds, Server[testResult]{
				Addr: "addr-" + c.Mode,
				Open: func() int64 { return 5 },
				End:  func(u Usage) testResult { return testResult{Usage: u, Mode: c.Mode, N: c.Workers} },
			})
		},
		Loader: func(ctx context.Context, c LoadConfig, out *Emitter[testResult], cmds <-chan string) error {
			l, err := NewLoader(c, 0)
			if err != nil {
				return err
			}
			l.Note("index %d, source %s, servers %s, seed %d, extra %s", c.Index, c.Source, strings.Join(c.Servers, " "), c.Seed, extra)
			return RunLoader(ctx, l, out, cmds, func(k int) {
				if k < c.Live {
					l.LiveConnected.Add(1)
					return
				}
				l.SilentConnected.Add(1)
				l.Closed(0)
			})
		},
	})
}

// start starts the test child of role, and fails the test if it cannot.
func start(t *testing.T, ctx context.Context, role string, args ...string) *Child[testResult] {
	t.Helper()
	c, err := Start[testResult](ctx, role+" child", role, args, io.Discard)
	require.NoError(t, err)
	return c
}

func TestChildAnswersExpectAndFinishes(t *testing.T) {
	c := start(t, t.Context(), roleEcho, "-n", "4")
	assert.Equal(t, "echo child", c.Name())
	m, err := c.Expect(t.Context(), EventReady)
	require.NoError(t, err)
	assert.Equal(t, "addr-4", m.Addr)
	require.NoError(t, c.Send(CmdReport))
	m, err = c.Expect(t.Context(), EventResult)
	require.NoError(t, err)
	require.NotNil(t, m.Server)
	assert.Equal(t, 4, m.Server.N)
	_, peak, err := c.Finish(t.Context())
	require.NoError(t, err)
	if runtime.GOOS == "linux" {
		assert.Positive(t, peak)
	}
}

func TestChildProgressIsTheLatest(t *testing.T) {
	c := start(t, t.Context(), roleEcho, "-n", "4")
	_, err := c.Expect(t.Context(), EventReady) // after the progress
	require.NoError(t, err)
	require.NotNil(t, c.Progress())
	assert.Equal(t, int64(43), c.Progress().LiveConnected)
	_, _, err = c.Finish(t.Context())
	require.NoError(t, err)
}

func TestExpectFailsOnWhatIsNotTheEventDue(t *testing.T) {
	for role, want := range map[string]string{
		roleGarbage: `garbage child: unreadable line "this is not JSON"`,
		roleFail:    "fail child: the child failed",
		roleQuit:    `quit child ended before sending "ready"`,
		roleWrong:   `wrong child sent "connected", want "ready"`,
	} {
		c := start(t, t.Context(), role)
		_, err := c.Expect(t.Context(), EventReady)
		require.Error(t, err, role)
		assert.Contains(t, err.Error(), want)
		_, _, _ = c.Finish(t.Context())
	}
}

func TestFinishFailsForAFailedChild(t *testing.T) {
	c := start(t, t.Context(), roleFail)
	_, _, err := c.Finish(t.Context())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "fail child: exit status 1")
}

func TestEndingTheContextKillsTheChild(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	c := start(t, ctx, roleSleep)
	cancel()
	_, _, err := c.Finish(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "killed")
}

func TestGroupKeepsTheChildrensOrder(t *testing.T) {
	g := Group[testResult]{start(t, t.Context(), roleEcho, "-n", "1"), start(t, t.Context(), roleEcho, "-n", "2"),
		start(t, t.Context(), roleEcho, "-n", "3")}
	ready, err := g.Collect(t.Context(), EventReady, nil)
	require.NoError(t, err)
	require.Len(t, ready, 3)
	for i, m := range ready {
		assert.Equal(t, fmt.Sprint("addr-", i+1), m.Addr)
	}
	assert.Equal(t, int64(13+23+33), g.Progress().LiveConnected, "the latest of each, summed")
	results, err := g.Ask(t.Context(), CmdReport, EventResult)
	require.NoError(t, err)
	for i, m := range results {
		assert.Equal(t, i+1, m.Server.N)
	}
	_, peak, err := g.Finish(t.Context())
	require.NoError(t, err)
	if runtime.GOOS == "linux" {
		assert.Positive(t, peak)
	}
}

func TestGroupCollectFailsForAnyChild(t *testing.T) {
	g := Group[testResult]{start(t, t.Context(), roleEcho, "-n", "1"), start(t, t.Context(), roleFail)}
	_, err := g.Collect(t.Context(), EventReady, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the child failed")
	_, _, err = g.Finish(t.Context())
	assert.Error(t, err, "the failed child's exit")
}

func TestMeasureRunsServersAndLoadProcessesThroughTheWindow(t *testing.T) {
	var log strings.Builder
	res, err := Measure(t.Context(), Measurement[testResult]{
		Servers:    2,
		ServerName: "test server",
		ServerArgs: func(i int) []string { return ServerConfig{Mode: fmt.Sprint("m", i), Workers: 10 + i}.Args() },
		Loaders:    3,
		Load:       LoadConfig{Live: 10, Silent: 5, Dialers: 2, Seed: 9},
		Net:        Loopback{7, 8},
		LoaderArgs: []string{"-extra", "yes"},
		Stderr:     &LockedWriter{W: &log},
		Tag:        "test",
		LiveName:   "live clients",
		Connecting: func(ClientCounts, time.Duration) string { return "connecting" },
		InWindow:   func(ClientCounts, time.Duration) string { return "in the window" },
	})
	require.NoError(t, err)

	require.Len(t, res.Servers, 2)
	for i, s := range res.Servers {
		assert.Equal(t, fmt.Sprint("m", i), s.Mode)
		assert.Equal(t, 10+i, s.N)
		assert.Equal(t, int64(5), s.Conns)
	}
	require.Len(t, res.Loaders, 3)
	var sum ClientCounts
	for i, l := range res.Loaders {
		sum.Add(l.ClientCounts)
		assert.Equal(t, l.SilentConnected, l.SilentClosed)
		assert.Len(t, l.Lateness, int(l.SilentClosed))
		require.Len(t, l.Errors, 1)
		assert.Equal(t, fmt.Sprintf("index %d, source 127.7.8.%d, servers addr-m0 addr-m1, seed 9, extra yes", i, i+1), l.Errors[0])
	}
	assert.Equal(t, ClientCounts{LiveConnected: 10, SilentConnected: 5, SilentClosed: 5}, sum)
	assert.Equal(t, []int64{4, 3, 3}, []int64{res.Loaders[0].LiveConnected, res.Loaders[1].LiveConnected, res.Loaders[2].LiveConnected})
	if runtime.GOOS == "linux" {
		assert.Positive(t, res.ServerPeak)
		assert.Positive(t, res.LoaderPeak)
	}
	for _, want := range []string{"[test] 2 test server processes, 3 load processes: connecting 10 live clients and 5 that will fall silent\n",
		"[test] all connected in ", "[test] closing\n", "[test] done in "} {
		assert.Contains(t, log.String(), want)
	}
}

func TestMeasureFailsWithAFailingServer(t *testing.T) {
	_, err := Measure(t.Context(), Measurement[testResult]{
		Servers:    1,
		ServerName: "test server",
		ServerArgs: func(int) []string { return []string{"-nosuch"} },
		Stderr:     io.Discard,
	})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `test server 0 ended before sending "ready"`)
}
