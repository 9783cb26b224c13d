// Command presencegate is one gateway node of a fleet whose device presence
// is recorded in NATS JetStream (package presence). Devices connect over
// TCP and say "HELLO <id>"; every byte after that is a heartbeat, watched
// locally by a heartbeat.Monitor; only state changes reach the engine.
//
// Usage, from the module's directory (presence/):
//
//	go run ./cmd/presencegate -timeout 30s                       # one node, embedded NATS server
//	go run ./cmd/presencegate -nats nats://h:4222 -node gw2 -timeout 30s   # join a fleet
//
// The flags are:
//
//	-nats urls     comma-separated NATS URLs; empty (the default) starts an embedded
//	               server with JetStream and prints "nats on nats://host:port"
//	-store dir     the embedded server's store (default: a fresh temporary directory)
//	-node id       this node's id, 1-64 characters of [A-Za-z0-9_-]; required with
//	               -nats, "local" without
//	-addr h:p      the device listener (default 127.0.0.1:0)
//	-timeout d     how long a device may stay silent; required, greater than 0
//	-lease d       the node lease, whole seconds, at least 1s (default 15s)
//	-replicas n    replicas of the buckets it creates (1..5, default 1)
//
// Device protocol: lines end in "\n". The first line is "HELLO <id>", the id
// 1-128 bytes of 0x21-0x7E; the answer is "OK" once the device is recorded
// online (it waits while the engine is away), or a line starting "ERR" for
// a bad first line, after which the connection is closed and nothing is
// recorded. A device silent for -timeout (from its last byte or from OK;
// before HELLO, from accept) is closed and recorded offline (timeout); one
// that closes its connection is recorded offline (closed). When a device
// connects again, here or at another node, its older connection is closed
// and records nothing.
//
// It prints "listening on host:port" once it accepts devices and holds its
// lease. On SIGINT or SIGTERM it records its devices offline (shutdown),
// closes them, prints a report and exits 0; it waits for the engine one
// lease and 10 s at most, and leaves what it could not record to the
// other nodes (node_lost). Bad flags: a message on
// standard error and exit status 2. An engine that does not answer at
// start: a message naming the URL and exit status 1, within 15 s.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/go-schedule/schedule/presence"
	"github.com/go-schedule/schedule/presence/embedded"
	"github.com/go-schedule/schedule/presence/internal/gate"
	"github.com/nats-io/nats.go"
)

// Exit statuses.
const (
	exitOK    = 0
	exitFail  = 1
	exitUsage = 2
)

// startWithin bounds the start against an engine that does not answer:
// the contract is an exit within 15 s.
const startWithin = 12 * time.Second

// shutdownGrace is how long past one lease the stop waits for the engine
// to take the shutdown records.
const shutdownGrace = 10 * time.Second

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// config is what the flags say.
type config struct {
	nats     string
	store    string
	node     string
	addr     string
	timeout  time.Duration
	lease    time.Duration
	replicas int
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	c := config{addr: "127.0.0.1:0", lease: presence.DefaultLease, replicas: 1}
	fs := flag.NewFlagSet("presencegate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: presencegate -timeout D [flags]")
		fs.PrintDefaults()
	}
	fs.StringVar(&c.nats, "nats", "", "comma-separated NATS URLs; empty starts an embedded server")
	fs.StringVar(&c.store, "store", "", "the embedded server's store directory (default: a fresh temporary one)")
	fs.StringVar(&c.node, "node", "", `this node's id, 1-64 characters of [A-Za-z0-9_-] (required with -nats; "local" without)`)
	fs.StringVar(&c.addr, "addr", c.addr, "the device listener, host:port")
	fs.DurationVar(&c.timeout, "timeout", 0, "how long a device may stay silent (required, > 0)")
	fs.DurationVar(&c.lease, "lease", c.lease, "the node lease, whole seconds, at least 1s")
	fs.IntVar(&c.replicas, "replicas", c.replicas, "replicas of the buckets it creates (1..5)")
	// The flag package would print a bad flag's error and then the whole
	// usage, burying the error: print the error alone with a one-line hint,
	// and the usage for -h only.
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	fs.SetOutput(stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.Usage()
		} else {
			fmt.Fprintln(stderr, "presencegate:", err)
			fmt.Fprintln(stderr, "run 'presencegate -h' for the flags")
		}
		return c, err
	}
	bad := func(format string, a ...any) (config, error) {
		err := fmt.Errorf(format, a...)
		fmt.Fprintln(stderr, "presencegate:", err)
		return c, err
	}
	switch {
	case fs.NArg() > 0:
		return bad("unexpected arguments: %q", fs.Args())
	case c.timeout <= 0:
		return bad("-timeout is required and must be greater than 0")
	case !presence.ValidLease(c.lease):
		return bad("-lease %v: %v", c.lease, presence.ErrInvalidLease)
	case c.replicas < 1 || c.replicas > 5:
		return bad("-replicas %d: must be 1 to 5", c.replicas)
	case c.nats != "" && c.node == "":
		return bad("-node is required with -nats")
	case c.node != "" && !presence.ValidNodeID(c.node):
		return bad("-node %q: %v", c.node, presence.ErrInvalidNodeID)
	}
	if c.node == "" {
		c.node = "local"
	}
	return c, nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		return exitUsage
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))

	urls := c.nats
	if urls == "" {
		dir := c.store
		if dir == "" {
			if dir, err = os.MkdirTemp("", "presencegate-"); err != nil {
				fmt.Fprintln(stderr, "presencegate:", err)
				return exitFail
			}
			defer os.RemoveAll(dir)
		}
		srv, err := embedded.Start(embedded.Options{StoreDir: dir})
		if err != nil {
			fmt.Fprintln(stderr, "presencegate: embedded NATS server:", err)
			return exitFail
		}
		defer func() { srv.Shutdown(); srv.WaitForShutdown() }()
		urls = srv.ClientURL()
		fmt.Fprintf(stdout, "nats on %s\n", urls)
	}

	nc, err := nats.Connect(urls, nats.Name("presencegate "+c.node), nats.Timeout(3*time.Second),
		nats.MaxReconnects(-1), nats.ReconnectWait(250*time.Millisecond), nats.ReconnectBufSize(-1))
	if err != nil {
		fmt.Fprintf(stderr, "presencegate: cannot reach NATS at %s: %v\n", urls, err)
		return exitFail
	}
	defer nc.Close()
	openCtx, cancel := context.WithTimeout(ctx, startWithin)
	node, err := presence.Open(openCtx, nc, presence.Config{Node: c.node, Lease: c.lease, Replicas: c.replicas, Logger: log})
	cancel()
	if err != nil {
		fmt.Fprintf(stderr, "presencegate: cannot register with NATS JetStream at %s: %v\n", urls, err)
		return exitFail
	}

	ln, err := net.Listen("tcp", c.addr)
	if err != nil {
		fmt.Fprintln(stderr, "presencegate:", err)
		_, _ = node.Close(context.Background())
		return exitFail
	}
	g, err := gate.New(gate.NodeRecorder{Node: node}, c.timeout, log)
	if err != nil {
		fmt.Fprintln(stderr, "presencegate:", err)
		_ = ln.Close()
		_, _ = node.Close(context.Background())
		return exitFail
	}
	fmt.Fprintf(stdout, "listening on %s\n", ln.Addr())
	go g.Serve(ln)

	<-ctx.Done()
	_ = ln.Close()
	// An engine that does not answer must not keep the process: after a
	// lease and some, the devices not recorded are the reaper's, since the
	// lease is not given up either.
	closeCtx, cancelClose := context.WithTimeout(context.Background(), c.lease+shutdownGrace)
	recorded, err := node.Close(closeCtx)
	cancelClose()
	g.Wait()
	st := g.Stats()
	fmt.Fprintf(stdout, "shutdown: node %s recorded %d devices offline (shutdown)\n", c.node, recorded)
	fmt.Fprintf(stdout, "devices: accepted %d, rejected %d, online %d, offline timeout %d, offline closed %d, superseded %d, lost with the lease %d\n",
		st.Accepted, st.Rejected, st.Online, st.Timeout, st.Closed, st.Superseded, st.LeaseLost)
	if err != nil {
		fmt.Fprintln(stderr, "presencegate: shutdown:", err)
	}
	return exitOK
}
