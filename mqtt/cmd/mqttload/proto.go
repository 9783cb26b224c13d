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

// The processes of a run talk in lines. The parent writes commands to a
// child's standard input; a child writes messages, one JSON object a line,
// to its standard output. Standard error is passed through.
const (
	cmdGo     = "go"     // every client is connected: start the measured window
	cmdReport = "report" // brokers: send your result
	// The end of standard input tells a child to finish and exit.
)

// childEnv is set in a child's environment; a test binary that runs the
// command's code checks it to act as the child.
const childEnv = "MQTTLOAD_CHILD"

// message is one line from a child.
type message struct {
	Event string `json:"event"` // ready, connected, progress, result, error

	Addr     string        `json:"addr,omitempty"` // ready (broker)
	Progress *loaderCounts `json:"progress,omitempty"`
	Broker   *brokerResult `json:"broker,omitempty"`
	Loader   *loaderResult `json:"loader,omitempty"`
	Error    string        `json:"error,omitempty"`
}

// child is a running broker or load process, seen from the parent.
type child struct {
	name  string
	cmd   *exec.Cmd
	stdin io.WriteCloser
	msgs  chan message // closed when the child's output ends
	done  chan error   // the child's exit, once
	mu    sync.Mutex
	last  *message // the latest progress message
}

// startChild re-executes this program with args, as a child.
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
		return nil, err
	}
	c := &child{name: name, cmd: cmd, stdin: stdin, msgs: make(chan message, 16), done: make(chan error, 1)}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 64<<20)
		for sc.Scan() {
			var m message
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				m = message{Event: "error", Error: fmt.Sprintf("unreadable line %q: %v", sc.Text(), err)}
			}
			if m.Event == "progress" {
				c.mu.Lock()
				c.last = &m
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

// send writes a command line to the child.
func (c *child) send(cmd string) error {
	_, err := io.WriteString(c.stdin, cmd+"\n")
	return err
}

// progress returns the child's latest progress message, if any.
func (c *child) progress() *loaderCounts {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.last == nil {
		return nil
	}
	return c.last.Progress
}

// expect waits for the child's next message, which must be of the event
// given. A child that ends first, or reports an error, is an error.
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

// finish closes the child's standard input, which tells it to exit, and
// waits for it to. It returns the CPU time the child used in its life, and
// its peak resident set (0 where the system does not tell).
func (c *child) finish() (cpu time.Duration, peak int64, err error) {
	c.stdin.Close()
	for range c.msgs {
	}
	if err := <-c.done; err != nil {
		return 0, 0, fmt.Errorf("%s: %w", c.name, err)
	}
	ps := c.cmd.ProcessState
	return ps.UserTime() + ps.SystemTime(), peakRSS(ps), nil
}

// kill ends the child at once.
func (c *child) kill() {
	_ = c.cmd.Process.Kill()
	c.stdin.Close()
}

// emitter writes a child's messages to its standard output.
type emitter struct {
	mu  sync.Mutex
	enc *json.Encoder
}

func newEmitter(w io.Writer) *emitter {
	e := json.NewEncoder(w)
	e.SetEscapeHTML(false)
	return &emitter{enc: e}
}

func (e *emitter) emit(m message) {
	e.mu.Lock()
	defer e.mu.Unlock()
	_ = e.enc.Encode(m)
}

// commands delivers the parent's command lines; it is closed at the end of
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

// runChild runs a broker or a load process: args start with -role.
func runChild(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var bc brokerConfig
	var lc loaderConfig
	fs := flag.NewFlagSet("mqttload child", flag.ContinueOnError)
	fs.SetOutput(stderr)
	role := fs.String("role", "", "broker or loader")
	fs.StringVar(&bc.Mode, "mode", "", "broker: keep-alive, go-schedule or mochi")
	fs.IntVar(&bc.Workers, "workers", 4, "broker: go-schedule pool size")
	fs.StringVar(&bc.Listen, "listen", "127.0.0.1:0", "broker: address to listen on")
	fs.StringVar(&bc.CPUProfile, "cpuprofile", "", "broker: file to write a CPU profile of the window to")
	fs.IntVar(&lc.Index, "index", 0, "loader: index of this load process")
	fs.Func("broker", "loader: a broker address (repeated)", func(s string) error {
		lc.Brokers = append(lc.Brokers, s)
		return nil
	})
	fs.IntVar(&lc.Live, "live", 0, "loader: paho clients")
	fs.IntVar(&lc.Silent, "silent", 0, "loader: clients that fall silent")
	fs.IntVar(&lc.KeepAlive, "keepalive", 4, "loader: Keep Alive in seconds")
	fs.DurationVar(&lc.Fall, "fall", 0, "loader: window in which silent clients fall silent")
	fs.DurationVar(&lc.Grace, "grace", 0, "loader: wait after the last deadline")
	fs.StringVar(&lc.Source, "source", "", "loader: source address to dial from")
	fs.IntVar(&lc.Dialers, "dialers", 64, "loader: connections opened at once")
	fs.Uint64Var(&lc.Seed, "seed", 1, "loader: seed")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	out := newEmitter(stdout)
	cmds := commands(os.Stdin)
	var err error
	switch *role {
	case "broker":
		err = runBroker(ctx, bc, out, cmds)
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
