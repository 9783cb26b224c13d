package loadtest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"time"
)

// The commands the parent writes to a child's standard input.
const (
	// CmdGo: every client is connected; the measured window starts.
	CmdGo = "go"
	// CmdReport: to a server, after the window: send your result.
	CmdReport = "report"
)

// The events of a child's messages.
const (
	EventReady     = "ready"     // a server listens at Message.Addr
	EventProgress  = "progress"  // a load process's Message.Progress so far
	EventConnected = "connected" // a load process has tried every connection
	EventResult    = "result"    // Message.Server or Message.Loader
	EventError     = "error"     // the child failed: Message.Error
)

// Message is one line from a child. S is the type of a server's result.
type Message[S any] struct {
	Event    string        `json:"event"`
	Addr     string        `json:"addr,omitempty"`     // ready
	Progress *ClientCounts `json:"progress,omitempty"` // progress, connected
	Server   *S            `json:"server,omitempty"`   // result, from a server
	Loader   *LoadResult   `json:"loader,omitempty"`   // result, from a load process
	Error    string        `json:"error,omitempty"`    // error
}

// A line from a child may be long: a load process's result carries the
// lateness of every silent client it ran. The scanner's buffer starts at
// firstLineBuffer and grows up to maxLine.
const (
	firstLineBuffer = 64 << 10
	maxLine         = 256 << 20
)

// Child is a running child process, seen from the parent. Its methods are
// for one goroutine at a time, except Progress, which any goroutine may
// call.
type Child[S any] struct {
	name  string
	cmd   *exec.Cmd
	stdin io.WriteCloser
	msgs  chan Message[S] // closed when the child's output ends
	done  chan error      // the child's exit, once

	mu     sync.Mutex
	latest *ClientCounts // the latest progress
}

// Start starts this program again as a child called name (in errors), with
// the command line -role role args... and ChildEnv set in its environment.
// The child's standard error goes to stderr. If ctx ends before the child
// has exited, the child is killed.
func Start[S any](ctx context.Context, name, role string, args []string, stderr io.Writer) (*Child[S], error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, exe, append([]string{"-" + RoleFlag, role}, args...)...)
	cmd.Env = append(os.Environ(), ChildEnv+"=1")
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	c := &Child[S]{name: name, cmd: cmd, stdin: stdin, msgs: make(chan Message[S], 16), done: make(chan error, 1)}
	go c.read(ctx, stdout)
	return c, nil
}

// read delivers the child's messages until its output ends, then waits for
// it to exit. It keeps only the latest progress message, which the parent
// polls. Once ctx is done nobody reads the messages, so it drops them, but
// it reads the output to its end all the same: a child blocked writing to
// a full pipe would never exit.
func (c *Child[S]) read(ctx context.Context, stdout io.Reader) {
	deliver := func(m Message[S]) {
		select {
		case c.msgs <- m:
		case <-ctx.Done():
		}
	}
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, firstLineBuffer), maxLine)
	for sc.Scan() {
		var m Message[S]
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			m = Message[S]{Event: EventError, Error: fmt.Sprintf("unreadable line %q: %v", sc.Text(), err)}
		}
		if m.Event == EventProgress {
			c.mu.Lock()
			c.latest = m.Progress
			c.mu.Unlock()
			continue
		}
		deliver(m)
	}
	if err := sc.Err(); err != nil {
		deliver(Message[S]{Event: EventError, Error: "reading its output: " + err.Error()})
		_, _ = io.Copy(io.Discard, stdout)
	}
	close(c.msgs)
	c.done <- c.cmd.Wait()
}

// Name returns the child's name.
func (c *Child[S]) Name() string { return c.name }

// Send writes the command cmd to the child.
func (c *Child[S]) Send(cmd string) error {
	if _, err := io.WriteString(c.stdin, cmd+"\n"); err != nil {
		return fmt.Errorf("%s: %w", c.name, err)
	}
	return nil
}

// Progress returns the counts of the child's latest progress message, or
// nil if it has sent none.
func (c *Child[S]) Progress() *ClientCounts {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.latest
}

// Expect waits for the child's next message other than progress, which
// must be of event. A child that ends first, reports an error or sends
// another event is an error, and so is the end of ctx.
func (c *Child[S]) Expect(ctx context.Context, event string) (Message[S], error) {
	select {
	case m, ok := <-c.msgs:
		switch {
		case !ok:
			return m, fmt.Errorf("%s ended before sending %q", c.name, event)
		case m.Event == EventError:
			return m, fmt.Errorf("%s: %s", c.name, m.Error)
		case m.Event != event:
			return m, fmt.Errorf("%s sent %q, want %q", c.name, m.Event, event)
		}
		return m, nil
	case <-ctx.Done():
		return Message[S]{}, ctx.Err()
	}
}

// Finish closes the child's standard input, which tells it to exit, and
// waits for it to, discarding any message it sends meanwhile. It returns
// the CPU time, user and system, the child used in its life, and its peak
// resident set in bytes (0 where the system does not say). A child that
// exits with an error is an error, and so is the end of ctx.
func (c *Child[S]) Finish(ctx context.Context) (cpu time.Duration, peak int64, err error) {
	c.stdin.Close()
	for range c.msgs {
	}
	select {
	case err = <-c.done:
	case <-ctx.Done():
		return 0, 0, ctx.Err()
	}
	if err != nil {
		return 0, 0, fmt.Errorf("%s: %w", c.name, err)
	}
	ps := c.cmd.ProcessState
	return ps.UserTime() + ps.SystemTime(), PeakRSS(ps), nil
}

// Lifetime is what a run's processes used over their whole lives
// (connecting, the window, leaving), by role: the CPU time of them all,
// and the largest peak resident set among them (0 where the system does
// not tell).
type Lifetime struct {
	ServerCPU, LoaderCPU   time.Duration
	ServerPeak, LoaderPeak int64
}

// CPU formats the CPU times, servers' then load processes', to 10 ms.
func (l Lifetime) CPU() string {
	return l.ServerCPU.Round(10*time.Millisecond).String() + " / " + l.LoaderCPU.Round(10*time.Millisecond).String()
}

// Peak formats the peak resident sets, a server's then a load process's,
// with MiB.
func (l Lifetime) Peak() string { return MiB(l.ServerPeak) + " / " + MiB(l.LoaderPeak) }

// Group is a set of children that play the same part: a run's servers, or
// its load processes.
type Group[S any] []*Child[S]

// Send writes cmd to every child, in order, and stops at the first error.
func (g Group[S]) Send(cmd string) error {
	for _, c := range g {
		if err := c.Send(cmd); err != nil {
			return err
		}
	}
	return nil
}

// Expect waits for every child's next message, of event, one child after
// the other; see Child.Expect. The messages are in the children's order.
func (g Group[S]) Expect(ctx context.Context, event string) ([]Message[S], error) {
	return g.ask(ctx, "", event)
}

// Ask sends cmd to each child in turn and waits for its answer, a message
// of event, before it asks the next. The answers are in the children's
// order.
func (g Group[S]) Ask(ctx context.Context, cmd, event string) ([]Message[S], error) {
	return g.ask(ctx, cmd, event)
}

func (g Group[S]) ask(ctx context.Context, cmd, event string) ([]Message[S], error) {
	msgs := make([]Message[S], 0, len(g))
	for _, c := range g {
		if cmd != "" {
			if err := c.Send(cmd); err != nil {
				return nil, err
			}
		}
		m, err := c.Expect(ctx, event)
		if err != nil {
			return nil, err
		}
		msgs = append(msgs, m)
	}
	return msgs, nil
}

// tickEvery is how often Collect calls its tick while it waits: the
// parent's progress lines.
const tickEvery = time.Second

// Collect waits for every child's next message, of event, from all at once,
// calling tick every tickEvery meanwhile (tick may be nil). It returns the
// messages in the children's order, or the first error: see Child.Expect.
func (g Group[S]) Collect(ctx context.Context, event string, tick func()) ([]Message[S], error) {
	type got struct {
		i   int
		m   Message[S]
		err error
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch := make(chan got, len(g))
	for i, c := range g {
		go func() {
			m, err := c.Expect(ctx, event)
			ch <- got{i, m, err}
		}()
	}
	t := time.NewTicker(tickEvery)
	defer t.Stop()
	msgs := make([]Message[S], len(g))
	for left := len(g); left > 0; {
		select {
		case r := <-ch:
			if r.err != nil {
				return nil, r.err
			}
			msgs[r.i] = r.m
			left--
		case <-t.C:
			if tick != nil {
				tick()
			}
		}
	}
	return msgs, nil
}

// Progress returns the sum of the children's latest progress counts.
func (g Group[S]) Progress() ClientCounts {
	var sum ClientCounts
	for _, c := range g {
		if p := c.Progress(); p != nil {
			sum.Add(*p)
		}
	}
	return sum
}

// Finish finishes every child, in order (see Child.Finish), and returns the
// CPU time they used in all and the largest peak resident set among them.
// It stops at the first error.
func (g Group[S]) Finish(ctx context.Context) (cpu time.Duration, peak int64, err error) {
	for _, c := range g {
		ccpu, cpeak, err := c.Finish(ctx)
		if err != nil {
			return cpu, peak, err
		}
		cpu += ccpu
		peak = max(peak, cpeak)
	}
	return cpu, peak, nil
}
