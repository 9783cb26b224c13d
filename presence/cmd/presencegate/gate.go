package main

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

// gate serves devices for one node.
type gate struct {
	node *presence.Node
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

func newGate(node *presence.Node, timeout time.Duration, log *slog.Logger) (*gate, error) {
	s, err := schedule.New(expiryWorkers)
	if err != nil {
		return nil, err
	}
	g := &gate{node: node, s: s, log: log}
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

func (g *gate) serve(ln net.Listener) {
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
func (g *gate) handle(conn net.Conn) {
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
	if !g.mon.Forget(d) {
		return // timed out meanwhile
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var endedBy atomic.Value
	pc, err := g.node.Connect(ctx, id, func(err error) {
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
	if br.Buffered() > 0 {
		g.mon.Refresh(d) // heartbeat bytes that came with the HELLO line
	}
	var buf [64]byte
	for {
		n, err := conn.Read(buf[:])
		if n > 0 {
			g.mon.Refresh(d)
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

// offline records pc offline unless its node ended it.
func (g *gate) offline(pc *presence.Conn, reason presence.Reason, endedBy *atomic.Value) {
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

// wait closes the connections the node did not end, waits for every
// connection to end, then stops the scheduler.
func (g *gate) wait() {
	g.open.Range(func(c, _ any) bool {
		_ = c.(net.Conn).Close() // devices before HELLO, or waiting for OK
		return true
	})
	g.wg.Wait()
	g.s.Shutdown()
}

type gateStats struct{ accepted, rejected, online, timeout, closed, superseded, leaseLost int64 }

func (g *gate) stats() gateStats {
	return gateStats{g.accepted.Load(), g.rejected.Load(), g.online.Load(), g.timeout.Load(), g.closed.Load(), g.superseded.Load(), g.leaseLost.Load()}
}
