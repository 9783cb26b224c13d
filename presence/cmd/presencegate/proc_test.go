package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-schedule/schedule/presence/embedded"
	"github.com/stretchr/testify/require"
)

// readyWithin bounds how long a test waits for a process's ready line.
const readyWithin = 20 * time.Second

// recordWithin bounds how long a test waits for a record that must come,
// written by a gateway process and printed by a presencewatch process:
// generous, as on a loaded machine the chain can take seconds, and a
// record that never comes still fails the test.
const recordWithin = 30 * time.Second

// proc is a command running as a process, its stdout read line by line.
type proc struct {
	cmd    *exec.Cmd
	mu     sync.Mutex
	lines  []string
	at     []time.Time // when each line came
	parsed int         // lines parsed into byDev
	byDev  map[string][]watchLine
	more   chan struct{} // closed and replaced on every line
	done   chan struct{} // closed when stdout ends
	stderr strings.Builder
	exited chan error
}

func start(t *testing.T, bin string, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(bin, args...), more: make(chan struct{}), done: make(chan struct{}), exited: make(chan error, 1)}
	out, err := p.cmd.StdoutPipe()
	require.NoError(t, err)
	p.cmd.Stderr = &lockedWriter{w: &p.stderr, mu: &p.mu}
	require.NoError(t, p.cmd.Start())
	go p.read(out)
	go func() { <-p.done; p.exited <- p.cmd.Wait() }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
		if t.Failed() {
			t.Logf("%s stderr:\n%s", bin, p.errText())
		}
	})
	return p
}

type lockedWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

func (p *proc) errText() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.String()
}

func (p *proc) read(r io.Reader) {
	defer close(p.done)
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		p.mu.Lock()
		p.lines = append(p.lines, sc.Text())
		p.at = append(p.at, time.Now())
		close(p.more)
		p.more = make(chan struct{})
		p.mu.Unlock()
	}
}

// waitLine waits for a line that contains s and returns it.
func (p *proc) waitLine(t *testing.T, s string, within time.Duration) string {
	t.Helper()
	deadline := time.After(within)
	for i := 0; ; {
		p.mu.Lock()
		for ; i < len(p.lines); i++ {
			if strings.Contains(p.lines[i], s) {
				l := p.lines[i]
				p.mu.Unlock()
				return l
			}
		}
		more := p.more
		p.mu.Unlock()
		select {
		case <-more:
		case <-p.done:
			t.Fatalf("the process ended without printing %q; stderr:\n%s", s, p.errText())
		case <-deadline:
			t.Fatalf("no line with %q within %v; stderr:\n%s", s, within, p.errText())
		}
	}
}

// runGate runs a presencegate and returns it and its device address.
func runGate(t *testing.T, args ...string) (*proc, string) {
	t.Helper()
	p := start(t, gateBin, args...)
	l := p.waitLine(t, "listening on ", readyWithin)
	return p, strings.TrimSpace(l[strings.Index(l, "listening on ")+len("listening on "):])
}

// exitCode waits for the process to exit and returns its status.
func (p *proc) exitCode(t *testing.T, within time.Duration) int {
	t.Helper()
	select {
	case err := <-p.exited:
		p.exited <- err
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		require.NoError(t, err)
		return 0
	case <-time.After(within):
		t.Fatalf("still running after %v", within)
		return -1
	}
}

func (p *proc) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(sig))
}

// engine starts an embedded NATS server in the test process.
func engine(t *testing.T) string {
	t.Helper()
	s, err := embedded.Start(embedded.Options{StoreDir: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	return s.ClientURL()
}

// tdev is a TCP device in a test.
type tdev struct {
	net.Conn
	r *bufio.Reader
}

// hello connects id to addr and returns the device once it got OK.
func hello(t *testing.T, addr, id string) *tdev {
	t.Helper()
	d := dialDevice(t, addr)
	_, err := d.Write([]byte("HELLO " + id + "\n"))
	require.NoError(t, err)
	require.Equal(t, "OK\n", d.line(t, 30*time.Second))
	return d
}

func dialDevice(t *testing.T, addr string) *tdev {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return &tdev{Conn: c, r: bufio.NewReader(c)}
}

func (d *tdev) line(t *testing.T, within time.Duration) string {
	t.Helper()
	require.NoError(t, d.SetReadDeadline(time.Now().Add(within)))
	l, err := d.r.ReadString('\n')
	require.NoError(t, err)
	return l
}

// closedWithin reports whether the gateway closes d within d.
func (d *tdev) closedWithin(within time.Duration) bool {
	_ = d.SetReadDeadline(time.Now().Add(within))
	var b [16]byte
	for {
		_, err := d.r.Read(b[:])
		if err == nil {
			continue
		}
		ne, ok := err.(net.Error)
		return !ok || !ne.Timeout()
	}
}

// watchLine is a device line of presencewatch.
type watchLine struct {
	Device   string    `json:"device"`
	State    string    `json:"state"`
	Node     string    `json:"node"`
	Reason   string    `json:"reason"`
	Rev      uint64    `json:"rev"`
	Replayed *int      `json:"replayed"`
	at       time.Time // when presencewatch printed it
}

// watcher runs presencewatch on url and waits for its replayed line.
func watcher(t *testing.T, url string) *proc {
	t.Helper()
	p := start(t, watchBin, "-nats", url)
	p.waitLine(t, `{"replayed":`, readyWithin)
	return p
}

// records returns the device lines printed so far for device.
func (p *proc) records(t *testing.T, device string) []watchLine {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.byDev == nil {
		p.byDev = make(map[string][]watchLine)
	}
	for ; p.parsed < len(p.lines); p.parsed++ {
		var w watchLine
		require.NoError(t, json.Unmarshal([]byte(p.lines[p.parsed]), &w), p.lines[p.parsed])
		if w.Replayed == nil {
			w.at = p.at[p.parsed]
			p.byDev[w.Device] = append(p.byDev[w.Device], w)
		}
	}
	return append([]watchLine(nil), p.byDev[device]...)
}

// waitRecords waits until device has n lines and returns them.
func (p *proc) waitRecords(t *testing.T, device string, n int, within time.Duration) []watchLine {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		recs := p.records(t, device)
		if len(recs) >= n {
			return recs
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d lines of %d within %v: %+v", device, len(recs), n, within, recs)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitState waits until device's last line has state.
func (p *proc) waitState(t *testing.T, device, state string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		recs := p.records(t, device)
		if len(recs) > 0 && recs[len(recs)-1].State == state {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not %s within %v: %+v", device, state, within, recs)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
