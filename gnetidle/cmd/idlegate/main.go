// Command idlegate is a TCP heartbeat gateway on gnet: any bytes a device
// sends count as a heartbeat, and a device that sends nothing for -idle is
// disconnected, counted from its last byte, or from its connection when it
// sent none. A device that keeps sending is never disconnected by the
// gateway. Idleness is detected with package gnetidle, wrapped round the
// gateway's handler: one go-schedule task per connection.
//
// Usage, from the module's directory (gnetidle/):
//
//	go run ./cmd/idlegate -addr 127.0.0.1:7070 -idle 30s
//
// The flags are:
//
//	-addr host:port  address to listen on (default 127.0.0.1:7070; port 0 picks one)
//	-idle d          how long a connection may stay silent (default 30s)
//	-loops n         gnet event loops (default: one per CPU)
//	-workers n       go-schedule's pool size (default 4)
//	-progress d      interval between progress lines; 0 for none (default 10s)
//
// Once it accepts connections it prints a line containing "listening on
// host:port" on standard output, then a progress line every -progress. On
// SIGINT or SIGTERM it stops accepting, closes every connection, prints its
// report (connections accepted, closed for idleness, closed by the peer,
// closed at the stop, bytes received, and the scheduler's statistics) and
// exits with status 0. Invalid flags make it exit with status 2 and a
// message on standard error; a failure to listen, with status 1.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-schedule/schedule"
	"github.com/go-schedule/schedule/gnetidle"
	"github.com/go-schedule/schedule/gnetidle/internal/gnetutil"
	"github.com/panjf2000/gnet/v2"
)

// Exit statuses.
const (
	exitOK    = 0
	exitFail  = 1
	exitUsage = 2
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// config is what the flags say.
type config struct {
	addr     string
	idle     time.Duration
	loops    int
	workers  int
	progress time.Duration
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	c := config{addr: "127.0.0.1:7070", idle: 30 * time.Second, workers: 4, progress: 10 * time.Second}
	fs := flag.NewFlagSet("idlegate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: idlegate [flags]")
		fmt.Fprintln(fs.Output(), "A TCP heartbeat gateway on gnet: a connection that sends nothing for -idle is closed.")
		fs.PrintDefaults()
	}
	fs.StringVar(&c.addr, "addr", c.addr, "`host:port` to listen on; port 0 picks a free one")
	fs.DurationVar(&c.idle, "idle", c.idle, "how long a connection may stay silent")
	fs.IntVar(&c.loops, "loops", 0, "gnet event loops (default: one per CPU)")
	fs.IntVar(&c.workers, "workers", c.workers, "go-schedule's pool size")
	fs.DurationVar(&c.progress, "progress", c.progress, "interval between progress lines; 0 for none")
	// The flag package would print a bad flag's error and then the whole
	// usage, burying the error: print the error alone with a one-line hint,
	// and the usage for -h only.
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	fs.SetOutput(stderr)
	if errors.Is(err, flag.ErrHelp) {
		fs.Usage()
	}
	if err != nil {
		return c, err
	}
	switch {
	case fs.NArg() > 0:
		return c, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	case c.idle <= 0:
		return c, errors.New("-idle must be positive")
	case c.loops < 0:
		return c, errors.New("-loops must not be negative")
	case c.workers <= 0:
		return c, errors.New("-workers must be positive")
	case c.progress < 0:
		return c, errors.New("-progress must not be negative")
	}
	host, port, err := net.SplitHostPort(c.addr)
	if err != nil {
		return c, fmt.Errorf("-addr %q: %v", c.addr, err)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		return c, fmt.Errorf("-addr %q: bad port", c.addr)
	}
	if host != "" && net.ParseIP(host) == nil {
		return c, fmt.Errorf("-addr %q: the host must be an IP address", c.addr)
	}
	return c, nil
}

// gate is the gateway's gnet handler.
type gate struct {
	gnet.BuiltinEventEngine
	idle *gnetidle.Detector

	accepted, open, bytes                  atomic.Int64
	closedIdle, closedByPeer, closedAtStop atomic.Int64
	stopping                               atomic.Bool
}

// idleClose marks, in a connection's Context, that the gateway closes it
// for idleness: its OnClose follows at once, on the same event loop.
type idleClose struct{}

// onIdle is the Detector's Handler: close, and say why.
func (g *gate) onIdle(c gnet.Conn, _ gnetidle.Event) gnet.Action {
	c.SetContext(idleClose{})
	return gnet.Close
}

// The Detector's Wrap watches every connection from OnOpen to OnClose, and
// counts every read as a heartbeat.

func (g *gate) OnOpen(c gnet.Conn) ([]byte, gnet.Action) {
	g.accepted.Add(1)
	g.open.Add(1)
	if g.idle.WatchOf(c) == nil {
		// The scheduler is shut down only after the engine has stopped.
		return nil, gnet.Close
	}
	return nil, gnet.None
}

func (g *gate) OnTraffic(c gnet.Conn) gnet.Action {
	n, _ := c.Discard(-1)
	g.bytes.Add(int64(n))
	return gnet.None
}

func (g *gate) OnClose(c gnet.Conn, _ error) gnet.Action {
	g.open.Add(-1)
	switch {
	case c.Context() == idleClose{}:
		g.closedIdle.Add(1)
	case g.stopping.Load():
		g.closedAtStop.Add(1)
	default:
		g.closedByPeer.Add(1)
	}
	return gnet.None
}

// run is the command with its context, arguments and outputs made
// explicit; it returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		fmt.Fprintln(stderr, "idlegate:", err)
		fmt.Fprintln(stderr, "run 'idlegate -h' for the flags")
		return exitUsage
	}

	s, err := schedule.New(c.workers)
	if err != nil {
		fmt.Fprintln(stderr, "idlegate:", err)
		return exitFail
	}
	defer s.Shutdown()
	g := new(gate)
	d, err := gnetidle.New(s, gnetidle.Timeouts{Reader: c.idle}, g.onIdle)
	if err != nil {
		fmt.Fprintln(stderr, "idlegate:", err)
		return exitFail
	}
	g.idle = d
	opts := []gnet.Option{gnet.WithMulticore(true), gnet.WithLogger(gnetutil.Logger(stderr, "idlegate: gnet: "))}
	if c.loops > 0 {
		opts = append(opts, gnet.WithNumEventLoop(c.loops))
	}
	srv, err := gnetutil.Serve(d.Wrap(g), c.addr, opts...)
	if err != nil {
		fmt.Fprintln(stderr, "idlegate:", err)
		return exitFail
	}
	start := time.Now()
	fmt.Fprintf(stdout, "idlegate: listening on %s; a connection silent for %v is closed\n", srv.Addr, c.idle)

	var tick <-chan time.Time
	if c.progress > 0 {
		t := time.NewTicker(c.progress)
		defer t.Stop()
		tick = t.C
	}
wait:
	for {
		select {
		case <-ctx.Done():
			break wait
		case <-srv.Done():
			break wait
		case <-tick:
			fmt.Fprintf(stdout, "idlegate: %v: %d open, %d accepted, %d closed for idleness\n",
				time.Since(start).Round(time.Second), g.open.Load(), g.accepted.Load(), g.closedIdle.Load())
		}
	}

	g.stopping.Store(true)
	stopCtx, cancel := context.WithTimeout(context.Background(), time.Minute)
	runErr := srv.Stop(stopCtx) // at once if the engine stopped on its own
	cancel()
	report(stdout, g, s, time.Since(start))
	if runErr != nil {
		fmt.Fprintln(stderr, "idlegate: the engine stopped with an error:", runErr)
		return exitFail
	}
	return exitOK
}

// report prints the gateway's counts and the scheduler's statistics.
func report(w io.Writer, g *gate, s *schedule.Scheduler, ran time.Duration) {
	ss := s.Stats()
	fmt.Fprintf(w, "idlegate: stopped after %v\n", ran.Round(time.Millisecond))
	fmt.Fprintf(w, "connections accepted:   %d\n", g.accepted.Load())
	fmt.Fprintf(w, "closed for idleness:    %d\n", g.closedIdle.Load())
	fmt.Fprintf(w, "closed by the peer:     %d\n", g.closedByPeer.Load())
	fmt.Fprintf(w, "closed at the stop:     %d\n", g.closedAtStop.Load())
	fmt.Fprintf(w, "bytes received:         %d\n", g.bytes.Load())
	fmt.Fprintf(w, "scheduler: %d pending, %d scheduled, %d fired, %d cancelled, %d dropped, %d skipped, %d panics, max lateness %v, %d owner wake-ups\n",
		ss.Pending, ss.Scheduled, ss.Started, ss.Cancelled, ss.Dropped, ss.Skipped, ss.Panics, ss.MaxLateness, ss.Wakeups)
}
