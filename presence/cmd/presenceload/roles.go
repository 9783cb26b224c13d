package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"runtime/debug"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-schedule/schedule/presence"
	"github.com/go-schedule/schedule/presence/internal/gate"
	"github.com/nats-io/nats.go"
)

// runGate is a gateway process: presencegate's device handling, with
// presence on (recording on the engine) or off (recording nothing).
func runGate(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("presenceload -role gate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	urls := fs.String("nats", "", "NATS URLs (presence on)")
	node := fs.String("node", "", "node id")
	timeout := fs.Duration("timeout", time.Minute, "heartbeat timeout")
	lease := fs.Duration("lease", presence.DefaultLease, "node lease")
	on := fs.Bool("presence", true, "record presence")
	cpuprofile := fs.String("cpuprofile", "", "write a CPU profile here, from the first SIGUSR1 (the quiet window's start) for -profilefor")
	profileFor := fs.Duration("profilefor", 20*time.Second, "how long the CPU profile runs: the quiet window")
	if fs.Parse(args) != nil {
		return exitUsage
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	var rec gate.Recorder = gate.Off{}
	var closeNode func()
	if *on {
		nc, err := nats.Connect(*urls, nats.MaxReconnects(-1), nats.ReconnectWait(250*time.Millisecond))
		if err != nil {
			fmt.Fprintln(stderr, "gate:", err)
			return exitFail
		}
		defer nc.Close()
		n, err := presence.Open(ctx, nc, presence.Config{Node: *node, Lease: *lease, Logger: log})
		if err != nil {
			fmt.Fprintln(stderr, "gate:", err)
			return exitFail
		}
		rec = gate.NodeRecorder{Node: n}
		closeNode = func() { _, _ = n.Close(context.Background()) }
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(stderr, "gate:", err)
		return exitFail
	}
	g, err := gate.New(rec, *timeout, log)
	if err != nil {
		fmt.Fprintln(stderr, "gate:", err)
		return exitFail
	}
	fmt.Fprintf(stdout, "listening on %s\n", ln.Addr())
	go g.Serve(ln)
	// SIGUSR1 returns freed memory to the system, so that the resident
	// memory measured next is what the gateway holds, not what a burst of
	// connects left behind.
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	defer signal.Stop(usr1)
	var profiling sync.Mutex // the profile, from its start to its file's close
	var profileStop *time.Timer
	go func() {
		for range usr1 {
			debug.FreeOSMemory()
			profiling.Lock()
			if *cpuprofile != "" && profileStop == nil {
				if f, err := os.Create(*cpuprofile); err == nil && pprof.StartCPUProfile(f) == nil {
					profileStop = time.AfterFunc(*profileFor, func() {
						profiling.Lock()
						defer profiling.Unlock()
						pprof.StopCPUProfile()
						_ = f.Close()
					})
				}
			}
			profiling.Unlock()
			fmt.Fprintln(stdout, "freed")
		}
	}()
	<-ctx.Done()
	_ = ln.Close()
	if closeNode != nil {
		closeNode()
	}
	g.Wait()
	st := g.Stats()
	fmt.Fprintf(stdout, "stats online=%d timeout=%d closed=%d\n", st.Online, st.Timeout, st.Closed)
	return exitOK
}

// dialParallel bounds a client process's handshakes in flight.
const dialParallel = 128

// runClient is a client process: devices [first, first+count) connect to
// the gateways (device i to gates[i mod len]), from source addresses
// (device i from sources[i mod len]), say HELLO, wait for OK, then send one
// heartbeat byte each every -beat, spread over the interval. A device
// heartbeats from its OK on, not from the moment the last device of the
// process has its own: a connect phase longer than the timeout would
// otherwise let the gateways close the first devices as silent. It prints
// "ready <ok> <failed>" once every device has its answer and
// "beats <total>" every second, and closes everything on SIGTERM.
func runClient(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("presenceload -role client", flag.ContinueOnError)
	fs.SetOutput(stderr)
	gates := fs.String("gates", "", "gateway addresses, comma-separated")
	sources := fs.String("sources", "127.0.0.1", "source addresses, comma-separated")
	first := fs.Int("first", 0, "first device number")
	count := fs.Int("count", 0, "number of devices")
	beat := fs.Duration("beat", 10*time.Second, "heartbeat interval per device")
	if fs.Parse(args) != nil {
		return exitUsage
	}
	gs, srcs := strings.Split(*gates, ","), strings.Split(*sources, ",")
	conns := make([]atomic.Pointer[net.Conn], *count) // nil until the device has its OK
	var beats atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		heartbeat(ctx, conns, *beat, &beats)
	}()
	var ok, failed atomic.Int64
	var wg sync.WaitGroup
	sem := make(chan struct{}, dialParallel)
	for k := range *count {
		i := *first + k
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			c, err := hello(gs[i%len(gs)], srcs[i%len(srcs)], deviceID(i))
			if err != nil {
				failed.Add(1)
				fmt.Fprintln(stderr, "client:", err)
				return
			}
			conns[k].Store(&c)
			ok.Add(1)
		})
	}
	wg.Wait()
	fmt.Fprintf(stdout, "ready %d %d\n", ok.Load(), failed.Load())

	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			<-done
			for k := range conns {
				if c := conns[k].Load(); c != nil {
					_ = (*c).Close()
				}
			}
			fmt.Fprintf(stdout, "beats %d\n", beats.Load())
			return exitOK
		case <-t.C:
			fmt.Fprintf(stdout, "beats %d\n", beats.Load())
		}
	}
}

// deviceID names device i with characters a key must escape.
func deviceID(i int) string { return fmt.Sprintf("load.%07d/x", i) }

// hello connects one device and waits for OK.
func hello(gateAddr, source, id string) (net.Conn, error) {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(source)}, Timeout: 30 * time.Second}
	c, err := d.Dial("tcp", gateAddr)
	if err != nil {
		return nil, err
	}
	if _, err := c.Write([]byte("HELLO " + id + "\n")); err != nil {
		c.Close()
		return nil, err
	}
	_ = c.SetReadDeadline(time.Now().Add(2 * time.Minute))
	line, err := bufio.NewReaderSize(c, 16).ReadString('\n')
	if err != nil || line != "OK\n" {
		c.Close()
		return nil, fmt.Errorf("%s: answer %q: %v", id, line, err)
	}
	_ = c.SetReadDeadline(time.Time{})
	return c, nil
}

// heartbeat writes one byte to every connection that has its OK, once per
// interval, in slices spread over it, until ctx ends. A connection whose
// write fails (its gateway died) is dropped.
func heartbeat(ctx context.Context, conns []atomic.Pointer[net.Conn], interval time.Duration, beats *atomic.Int64) {
	const slices = 100
	per := (len(conns) + slices - 1) / slices
	t := time.NewTicker(interval / slices)
	defer t.Stop()
	b := []byte{'.'}
	for s := 0; ; s = (s + 1) % slices {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for k := s * per; k < min((s+1)*per, len(conns)); k++ {
			c := conns[k].Load()
			if c == nil {
				continue
			}
			if _, err := (*c).Write(b); err != nil {
				_ = (*c).Close()
				conns[k].Store(nil)
				continue
			}
			beats.Add(1)
		}
	}
}
