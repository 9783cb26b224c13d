// Package gate serves devices over TCP for presencegate and for the load
// command's gateway processes: the line protocol (HELLO, OK, ERR, any byte
// a heartbeat), local heartbeats on a heartbeat.Monitor, and the presence
// records through a Recorder, which the load command can replace with one
// that records nothing to measure what presence costs.
package gate

import (
	"bufio"
	"context"
	"errors"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-schedule/schedule"
	"github.com/go-schedule/schedule/heartbeat"
	"github.com/go-schedule/schedule/presence"
)

// helloMax is the longest first line: "HELLO ", 128 bytes of id, "\n".
const helloMax = len("HELLO ") + 128 + 1

// expiryWorkers is the scheduler's pool size: an expiry only closes a
// socket.
const expiryWorkers = 4

// Recorder records device state changes: a presence.Node, or Off.
type Recorder interface {
	// Connect records device online; end is called when the recorder
	// ends the connection. See presence.Node.Connect.
	Connect(ctx context.Context, device string, end func(error)) (Session, error)
}

// Session is one connection recorded online. See presence.Conn.
type Session interface {
	Offline(ctx context.Context, reason presence.Reason) error
}

// NodeRecorder records on a presence.Node.
type NodeRecorder struct{ *presence.Node }

// Connect records device online on the node.
func (r NodeRecorder) Connect(ctx context.Context, device string, end func(error)) (Session, error) {
	c, err := r.Node.Connect(ctx, device, end)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// Off records nothing: the gateway without presence.
type Off struct{}

// Connect returns at once.
func (Off) Connect(context.Context, string, func(error)) (Session, error) { return offSession{}, nil }

type offSession struct{}

func (offSession) Offline(context.Context, presence.Reason) error { return nil }

// Gate serves devices for one node.
type Gate struct {
	node Recorder
	s    *schedule.Scheduler
	mon  *heartbeat.Monitor[*device]
	log  *slog.Logger
	wg   sync.WaitGroup
	open sync.Map // net.Conn → struct{}: every connection, for the stop

	accepted, rejected, online, timeout, closed, superseded, leaseLost atomic.Int64
}

// device is one TCP connection.
type device struct {
	conn     net.Conn
	timedOut atomic.Bool
}

// New returns a Gate that records on node and closes devices silent for
// timeout.
func New(node Recorder, timeout time.Duration, log *slog.Logger) (*Gate, error) {
	s, err := schedule.New(expiryWorkers)
	if err != nil {
		return nil, err
	}
	g := &Gate{node: node, s: s, log: log}
	g.mon, err = heartbeat.New(s, timeout, func(d *device) {
		d.timedOut.Store(true)
		_ = d.conn.Close()
	})
	if err != nil {
		s.Shutdown()
		return nil, err
	}
	return g, nil
}

// Serve accepts devices on ln until it is closed.
func (g *Gate) Serve(ln net.Listener) {
	for {
		conn, err := ln.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return
		}
		g.accepted.Add(1)
		g.wg.Go(func() { g.handle(conn) })
	}
}

// handle runs one device connection from accept to close.
func (g *Gate) handle(conn net.Conn) {
	d := &device{conn: conn}
	g.open.Store(conn, struct{}{})
	defer g.open.Delete(conn)
	defer conn.Close()
	_ = g.mon.Beat(d) // before HELLO, silence counts from accept
	br := bufio.NewReaderSize(conn, helloMax)
	id, ok := readHello(br)
	if !ok {
		g.mon.Forget(d)
		if !d.timedOut.Load() {
			g.rejected.Add(1)
			_, _ = conn.Write([]byte("ERR expected HELLO <id>: id of 1-128 bytes in 0x21-0x7E\n"))
		}
		return
	}
	// While the engine records it, the device waits for us, not silent of
	// its own accord: its silence counts again from OK.
	g.mon.Forget(d)
	if d.timedOut.Load() {
		return // timed out meanwhile
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var endedBy atomic.Value
	pc, err := g.connect(ctx, id, func(err error) {
		endedBy.Store(err)
		_ = conn.Close()
	})
	if err != nil {
		return // closed, or superseded already: record nothing
	}
	g.online.Add(1)
	if _, err := conn.Write([]byte("OK\n")); err != nil {
		g.offline(pc, presence.ReasonClosed, &endedBy)
		return
	}
	_ = g.mon.Beat(d)

	var buf [64]byte
	for {
		n, err := conn.Read(buf[:])
		if n > 0 {
			_ = g.mon.Beat(d) // the watch ends only after this loop: Beat cannot revive it
		}
		if err != nil {
			break
		}
	}
	g.mon.Forget(d)
	reason := presence.ReasonClosed
	if d.timedOut.Load() {
		reason = presence.ReasonTimeout
	}
	g.offline(pc, reason, &endedBy)
}

// connect records id online on a goroutine of its own: the engine
// client's calls are deep, and a connection's goroutine, whose stack would
// keep the depth they reached for the connection's whole life, only waits.
func (g *Gate) connect(ctx context.Context, id string, end func(error)) (Session, error) {
	type answer struct {
		s   Session
		err error
	}
	ch := make(chan answer, 1)
	go func() {
		s, err := g.node.Connect(ctx, id, end)
		ch <- answer{s, err}
	}()
	a := <-ch
	return a.s, a.err
}

// offline records pc offline unless its node ended it.
func (g *Gate) offline(pc Session, reason presence.Reason, endedBy *atomic.Value) {
	err := pc.Offline(context.Background(), reason)
	if err == nil {
		if reason == presence.ReasonTimeout {
			g.timeout.Add(1)
		} else {
			g.closed.Add(1)
		}
		return
	}
	if e, _ := endedBy.Load().(error); e != nil {
		err = e
	}
	switch {
	case errors.Is(err, presence.ErrSuperseded):
		g.superseded.Add(1)
	case errors.Is(err, presence.ErrLeaseLost):
		g.leaseLost.Add(1)
	}
}

// readHello reads the first line and returns the device id it names.
func readHello(br *bufio.Reader) (string, bool) {
	line, err := br.ReadSlice('\n')
	if err != nil {
		return "", false // too long, or the connection ended
	}
	id, ok := cutPrefix(string(line[:len(line)-1]), "HELLO ")
	if !ok || !presence.ValidDeviceID(id) {
		return "", false
	}
	return id, true
}

func cutPrefix(s, prefix string) (string, bool) {
	if len(s) < len(prefix) || s[:len(prefix)] != prefix {
		return "", false
	}
	return s[len(prefix):], true
}

// Wait closes the connections the node did not end, waits for every
// connection to end, then stops the scheduler.
func (g *Gate) Wait() {
	g.open.Range(func(c, _ any) bool {
		_ = c.(net.Conn).Close() // devices before HELLO, or waiting for OK
		return true
	})
	g.wg.Wait()
	g.s.Shutdown()
}

// Stats counts what a Gate did with its devices.
type Stats struct{ Accepted, Rejected, Online, Timeout, Closed, Superseded, LeaseLost int64 }

// Stats returns the counts so far.
func (g *Gate) Stats() Stats {
	return Stats{g.accepted.Load(), g.rejected.Load(), g.online.Load(), g.timeout.Load(), g.closed.Load(), g.superseded.Load(), g.leaseLost.Load()}
}
