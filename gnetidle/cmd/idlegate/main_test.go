package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// childEnv makes the test binary run the command itself, so that the tests
// drive it as a process, through its standard output and signals.
const childEnv = "IDLEGATE_TEST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		main()
	}
	goleak.VerifyTestMain(m, goleak.IgnoreCurrent())
}

// gateway is idlegate running as a child process.
type gateway struct {
	cmd    *exec.Cmd
	addr   string
	out    chan string // standard output, line by line; closed at its end
	stderr lockedBuffer
}

// lockedBuffer is a buffer that os/exec writes to while tests read it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

var listening = regexp.MustCompile(`listening on (127\.0\.0\.1:\d+)`)

// startGateway runs idlegate with args and waits for its listening line.
func startGateway(t *testing.T, args ...string) *gateway {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	g := &gateway{cmd: exec.Command(exe, args...), out: make(chan string, 100)}
	g.cmd.Env = append(os.Environ(), childEnv+"=1")
	g.cmd.Stderr = &g.stderr
	stdout, err := g.cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, g.cmd.Start())
	t.Cleanup(func() {
		if g.cmd.ProcessState == nil {
			_ = g.cmd.Process.Kill()
			_ = g.cmd.Wait()
		}
	})
	go func() {
		defer close(g.out)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			g.out <- sc.Text()
		}
	}()
	timeout := time.After(time.Minute)
	for {
		select {
		case line, ok := <-g.out:
			if !ok {
				t.Fatalf("no listening line; standard error:\n%s", g.stderr.String())
			}
			if m := listening.FindStringSubmatch(line); m != nil {
				g.addr = m[1]
				return g
			}
		case <-timeout:
			t.Fatalf("no listening line within a minute")
		}
	}
}

// stop signals the gateway and returns the rest of its standard output
// and its exit status.
func (g *gateway) stop(t *testing.T, sig os.Signal) (string, int) {
	t.Helper()
	require.NoError(t, g.cmd.Process.Signal(sig))
	var rest strings.Builder
	for line := range g.out {
		rest.WriteString(line + "\n")
	}
	err := g.cmd.Wait()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return rest.String(), exit.ExitCode()
	}
	require.NoError(t, err)
	return rest.String(), 0
}

// waitClosed reads from c until the gateway closes it, and returns when it
// did, or false after within.
func waitClosed(c net.Conn, within time.Duration) (time.Time, bool) {
	_ = c.SetReadDeadline(time.Now().Add(within))
	_, err := c.Read(make([]byte, 1))
	return time.Now(), errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)
}

// TestContract drives the gateway as the issue fixes it: a silent
// connection and one that stopped sending are closed once silent for
// -idle, one that keeps sending is not, and SIGTERM brings the report and
// status 0.
func TestContract(t *testing.T) {
	const idle = time.Second
	g := startGateway(t, "-addr", "127.0.0.1:0", "-idle", idle.String(), "-progress", "0")

	// Read before the dial: the gateway may see the connection before the
	// dial returns, so a time read after it can be later than the
	// gateway's own start of the idle period.
	connected := time.Now()
	silent, err := net.Dial("tcp", g.addr)
	require.NoError(t, err)
	defer silent.Close()

	stopper, err := net.Dial("tcp", g.addr)
	require.NoError(t, err)
	defer stopper.Close()
	var last time.Time
	for range 3 {
		last = time.Now()
		_, err := stopper.Write([]byte("beat"))
		require.NoError(t, err)
		time.Sleep(idle / 10)
	}

	talker, err := net.Dial("tcp", g.addr)
	require.NoError(t, err)
	defer talker.Close()
	done, talked := make(chan struct{}), make(chan error, 1)
	go func() {
		t := time.NewTicker(idle / 10)
		defer t.Stop()
		for {
			select {
			case <-done:
				talked <- nil
				return
			case <-t.C:
				if _, err := talker.Write([]byte{'x'}); err != nil {
					talked <- err
					return
				}
			}
		}
	}()

	at, closed := waitClosed(silent, 30*idle)
	require.True(t, closed, "the silent connection is closed")
	assert.GreaterOrEqual(t, at.Sub(connected), idle, "not before -idle after the connection")
	at, closed = waitClosed(stopper, 30*idle)
	require.True(t, closed, "the connection that stopped sending is closed")
	assert.GreaterOrEqual(t, at.Sub(last), idle, "not before -idle after its last byte")
	_, closed = waitClosed(talker, 3*idle)
	assert.False(t, closed, "the connection that keeps sending stays open")

	close(done)
	assert.NoError(t, <-talked, "the talker could write all along")
	report, code := g.stop(t, syscall.SIGTERM) // well within -idle of its last byte
	assert.Equal(t, 0, code, "exit status; standard error:\n%s", g.stderr.String())
	for _, want := range []string{
		"connections accepted:   3",
		"closed for idleness:    2",
		"closed at the stop:     1",
		"scheduler: ",
	} {
		assert.Contains(t, report, want)
	}
	t.Logf("report:\n%s", report)
}

func TestInterruptStopsWithTheReport(t *testing.T) {
	g := startGateway(t, "-addr", "127.0.0.1:0", "-idle", "1m", "-progress", "0")
	c, err := net.Dial("tcp", g.addr)
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Write([]byte("hello"))
	require.NoError(t, err)
	time.Sleep(100 * time.Millisecond) // let the gateway read it

	report, code := g.stop(t, os.Interrupt)
	assert.Equal(t, 0, code)
	assert.Contains(t, report, "connections accepted:   1")
	assert.Contains(t, report, "bytes received:         5")
	_, closed := waitClosed(c, 10*time.Second)
	assert.True(t, closed, "the stop closes the connection")
}

func TestAnUnknownFlagPrintsTheErrorThenAOneLineHint(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"-nonsense"}, &stdout, &stderr)
	assert.Equal(t, exitUsage, code)
	assert.Equal(t, "idlegate: flag provided but not defined: -nonsense\nrun 'idlegate -h' for the flags\n", stderr.String())
}

func TestBadFlagsExitWithStatusTwo(t *testing.T) {
	for _, args := range [][]string{
		{"-idle", "0"},
		{"-idle", "soon"},
		{"-addr", "localhost"},
		{"-addr", "127.0.0.1:99999"},
		{"-workers", "0"},
		{"-loops", "-1"},
		{"-nonsense"},
		{"stray"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), args, &stdout, &stderr)
		assert.Equal(t, exitUsage, code, "%q", args)
		assert.NotEmpty(t, stderr.String(), "%q: a message", args)
		assert.Empty(t, stdout.String(), "%q", args)
	}
}

func TestListeningFailureExitsWithStatusOne(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer taken.Close()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"-addr", taken.Addr().String()}, &stdout, &stderr)
	assert.Equal(t, exitFail, code)
	assert.NotContains(t, stdout.String(), "listening on")
}
