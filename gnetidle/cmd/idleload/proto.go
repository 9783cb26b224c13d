package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"time"
)

// A run is a parent process and its children: server processes and load
// processes, each this same program started with -role. The parent writes
// commands, one a line, to a child's standard input; a child answers with
// messages, one JSON object a line, on its standard output. Standard error
// is passed through. The end of its standard input tells a child to exit.
const (
	cmdGo     = "go"     // every client is connected: the measured window starts
	cmdReport = "report" // servers: send your result
)

// childEnv is set in a child's environment, so that a test binary that runs
// this program's code knows to act as the child.
const childEnv = "IDLELOAD_CHILD"

// message is one line from a child.
type message struct {
	Event string `json:"event"` // ready, connected, progress, result, error

	Addr     string        `json:"addr,omitempty"` // ready, from a server
	Progress *clientCounts `json:"progress,omitempty"`
	Server   *serverResult `json:"server,omitempty"`
	Loader   *loaderResult `json:"loader,omitempty"`
	Error    string        `json:"error,omitempty"`
}

// child is a running child process, seen from the parent.
type child struct {
	name  string
	cmd   *exec.Cmd
	stdin io.WriteCloser
	msgs  chan message // closed when the child's output ends
	done  chan error   // the child's exit status, once

	mu   sync.Mutex
	last *clientCounts // the latest progress
}

// startChild starts this program again with args.
func startChild(ctx context.Context, name string, args []string, stderr io.Writer) (*child, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Env = append(os.Environ(), childEnv+"=1")
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
	c := &child{name: name, cmd: cmd, stdin: stdin, msgs: make(chan message, 16), done: make(chan error, 1)}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 256<<20) // a result carries every lateness
		for sc.Scan() {
			var m message
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				m = message{Event: "error", Error: fmt.Sprintf("unreadable line %q: %v", sc.Text(), err)}
			}
			if m.Event == "progress" {
				c.mu.Lock()
				c.last = m.Progress
				c.mu.Unlock()
				continue
			}
			c.msgs <- m
		}
		close(c.msgs)
		c.done <- cmd.Wait()
	}()
	return c, nil
}

// send writes a command to the child.
func (c *child) send(cmd string) error {
	if _, err := io.WriteString(c.stdin, cmd+"\n"); err != nil {
		return fmt.Errorf("%s: %w", c.name, err)
	}
	return nil
}

// progress returns the child's latest progress, or nil.
func (c *child) progress() *clientCounts {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last
}

// expect waits for the child's next message, which must be event.
func (c *child) expect(ctx context.Context, event string) (message, error) {
	select {
	case m, ok := <-c.msgs:
		switch {
		case !ok:
			return m, fmt.Errorf("%s ended before sending %q", c.name, event)
		case m.Event == "error":
			return m, fmt.Errorf("%s: %s", c.name, m.Error)
		case m.Event != event:
			return m, fmt.Errorf("%s sent %q, want %q", c.name, m.Event, event)
		}
		return m, nil
	case <-ctx.Done():
		return message{}, ctx.Err()
	}
}

// finish closes the child's standard input and waits for it to exit. It
// returns the CPU time the child used and its peak resident set (0 where
// the system does not say).
func (c *child) finish(ctx context.Context) (cpu time.Duration, peak int64, err error) {
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
	return ps.UserTime() + ps.SystemTime(), peakRSS(ps), nil
}

// kill ends the child now.
func (c *child) kill() {
	_ = c.cmd.Process.Kill()
	c.stdin.Close()
}

// collect returns the next message, of event, of every child, in their
// order, calling tick every second while it waits.
func collect(ctx context.Context, chs []*child, event string, tick func()) ([]message, error) {
	type got struct {
		i   int
		m   message
		err error
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch := make(chan got, len(chs))
	for i, c := range chs {
		go func() {
			m, err := c.expect(ctx, event)
			ch <- got{i, m, err}
		}()
	}
	t := time.NewTicker(time.Second)
	defer t.Stop()
	msgs := make([]message, len(chs))
	for left := len(chs); left > 0; {
		select {
		case g := <-ch:
			if g.err != nil {
				return nil, g.err
			}
			msgs[g.i] = g.m
			left--
		case <-t.C:
			tick()
		}
	}
	return msgs, nil
}

// emitter writes a child's messages to its standard output.
type emitter struct {
	mu  sync.Mutex
	enc *json.Encoder
}

func newEmitter(w io.Writer) *emitter {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return &emitter{enc: enc}
}

func (e *emitter) emit(m message) {
	e.mu.Lock()
	defer e.mu.Unlock()
	_ = e.enc.Encode(m)
}

// commands delivers the parent's commands, and is closed at the end of
// standard input.
func commands(r io.Reader) <-chan string {
	ch := make(chan string)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			ch <- sc.Text()
		}
	}()
	return ch
}

// runChild runs a server or a load process; args start with -role.
func runChild(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var sc serverConfig
	var lc loaderConfig
	fs := flag.NewFlagSet("idleload child", flag.ContinueOnError)
	fs.SetOutput(stderr)
	role := fs.String("role", "", "server or loader")
	fs.StringVar(&sc.Mode, "mode", "", "server: "+modeSchedule+", "+modeTick+", "+modeNet+" or "+modeTickFix)
	fs.StringVar(&sc.Listen, "listen", "127.0.0.1:0", "server: address to listen on")
	fs.IntVar(&sc.Workers, "workers", 4, "server: go-schedule's pool size")
	fs.IntVar(&sc.Loops, "loops", 0, "server: gnet event loops (0: one per CPU)")
	fs.StringVar(&sc.Profile, "cpuprofile", "", "server: file for a CPU profile of the window")
	fs.IntVar(&lc.Index, "index", 0, "loader: index of this load process")
	fs.Func("server", "loader: a server address (repeated)", func(s string) error {
		lc.Servers = append(lc.Servers, s)
		return nil
	})
	fs.IntVar(&lc.Live, "live", 0, "loader: clients that keep sending")
	fs.IntVar(&lc.Silent, "silent", 0, "loader: clients that fall silent")
	fs.DurationVar(&lc.Beat, "beat", time.Second, "loader: interval between a client's heartbeats")
	fs.DurationVar(&lc.Fall, "fall", 0, "loader: window in which silent clients fall silent")
	fs.DurationVar(&lc.Grace, "grace", 0, "loader: wait after the last deadline")
	fs.StringVar(&lc.Source, "source", "", "loader: source address to dial from")
	fs.IntVar(&lc.Dialers, "dialers", 64, "loader: connections opened at once")
	fs.Uint64Var(&lc.Seed, "seed", 1, "loader: seed")
	var idle time.Duration
	fs.DurationVar(&idle, "idle", 0, "the idle timeout")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	sc.Idle, lc.Idle = idle, idle
	out := newEmitter(stdout)
	cmds := commands(stdin)
	var err error
	switch *role {
	case "server":
		err = runServer(ctx, sc, out, cmds, stderr)
	case "loader":
		err = runLoader(ctx, lc, out, cmds)
	default:
		err = fmt.Errorf("unknown role %q", *role)
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		out.emit(message{Event: "error", Error: err.Error()})
		return exitFail
	}
	return exitPass
}
