package gnetidle

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/go-schedule/schedule"
	"github.com/panjf2000/gnet/v2"
	"github.com/stretchr/testify/require"
)

// The core tests run the Detector on a real go-schedule Scheduler inside a
// testing/synctest bubble, where time is fake and exact, with fake event
// loops and connections in place of gnet's: gnet's own event loops block in
// epoll_wait, which a bubble cannot see through. A fake loop is a goroutine
// that runs what it is given in order, as gnet's loop runs its tasks, and
// it closes a connection as gnet does: OnClose at once, and a close of a
// connection already closed is ignored.

// fakeLoop is an event loop: a goroutine running functions in turn.
type fakeLoop struct {
	gnet.EventLoop // the methods the Detector does not use: nil, they panic
	tasks          chan func()
	h              *harness
	done           chan struct{}
	// hold, when not nil, keeps the caller of Execute (the pool worker
	// running a task's job) in its call until it is closed, after r is
	// queued: a worker that loses its processor just after handing a fire
	// over. Set it before the loop's first connection opens.
	hold chan struct{}
}

// Execute queues r, as gnet's does.
func (l *fakeLoop) Execute(ctx context.Context, r gnet.Runnable) error {
	l.tasks <- func() {
		if err := r.Run(ctx); err != nil {
			l.h.mu.Lock()
			l.h.runErrs = append(l.h.runErrs, err)
			l.h.mu.Unlock()
		}
	}
	if l.hold != nil {
		<-l.hold
	}
	return nil
}

// Close closes c on the loop: the harness's OnClose runs now.
func (l *fakeLoop) Close(c gnet.Conn) error {
	l.h.closeConn(c.(*fakeConn), nil)
	return nil
}

func (l *fakeLoop) serve() {
	defer close(l.done)
	for f := range l.tasks {
		f()
	}
}

// do runs f on the loop and waits for it.
func (l *fakeLoop) do(f func()) {
	ran := make(chan struct{})
	l.tasks <- func() { f(); close(ran) }
	<-ran
}

// post queues f on the loop without waiting.
func (l *fakeLoop) post(f func()) { l.tasks <- f }

// fakeConn is a connection on a fake loop. Its fields belong to the loop.
type fakeConn struct {
	gnet.Conn
	loop     *fakeLoop
	fd       int
	open     bool
	closes   int      // OnClose calls
	inbound  int      // bytes waiting to be read
	watch    *Watch   // unless the harness uses WatchOf
	closedAt duration // when OnClose ran
	tag      string   // for the test's Handler
}

func (c *fakeConn) EventLoop() gnet.EventLoop { return c.loop }
func (c *fakeConn) Fd() int                   { return c.fd }
func (c *fakeConn) InboundBuffered() int      { return c.inbound }

// duration is a time since the harness started.
type duration = time.Duration

// record is one Handler call.
type record struct {
	conn    *fakeConn
	ev      Event
	at      duration
	wasOpen bool
}

// harness is a server under test: a Scheduler, a Detector, fake loops and
// the Handler calls it saw.
type harness struct {
	t      *testing.T
	s      *schedule.Scheduler
	d      *Detector
	start  time.Time
	def    Timeouts
	lookup bool // the Watch found with WatchOf, as Wrap does, not kept in the connection
	loops  []*fakeLoop
	nextFd int

	// action decides the Handler's Action; nil means close.
	action func(c *fakeConn, e Event) gnet.Action

	mu      sync.Mutex
	calls   []record
	runErrs []error
}

// newHarness starts a harness with the default timeouts def; call it inside
// a bubble. Its cleanup ends the loops and shuts the scheduler down.
func newHarness(t *testing.T, def Timeouts) *harness {
	t.Helper()
	s, err := schedule.New(2)
	require.NoError(t, err)
	h := &harness{t: t, s: s, def: def, start: time.Now(), nextFd: 3}
	h.d, err = New(s, def, h.handle)
	require.NoError(t, err)
	t.Cleanup(func() {
		for _, l := range h.loops {
			close(l.tasks)
			<-l.done
		}
		require.NoError(t, s.ShutdownContext(context.Background()))
	})
	return h
}

func (h *harness) now() duration { return time.Since(h.start) }

// handle is the Detector's Handler: it records the call.
func (h *harness) handle(c gnet.Conn, e Event) gnet.Action {
	fc := c.(*fakeConn)
	h.mu.Lock()
	h.calls = append(h.calls, record{conn: fc, ev: e, at: h.now(), wasOpen: fc.open})
	h.mu.Unlock()
	if h.action != nil {
		return h.action(fc, e)
	}
	return gnet.Close
}

// loop starts a fake event loop.
func (h *harness) loop() *fakeLoop {
	l := &fakeLoop{tasks: make(chan func(), 1024), h: h, done: make(chan struct{})}
	h.loops = append(h.loops, l)
	go l.serve()
	return l
}

// open opens a connection on l and starts watching it there, with the
// defaults or with t.
func (h *harness) open(l *fakeLoop, t ...Timeouts) *fakeConn {
	c := &fakeConn{loop: l, fd: h.nextFd, open: true}
	h.nextFd++
	var err error
	l.do(func() {
		w := new(Watch)
		if err = h.d.Start(c, w); err != nil {
			return
		}
		if !h.lookup {
			c.watch = w
		}
		if len(t) > 0 {
			err = w.SetTimeouts(t[0])
		}
	})
	require.NoError(h.t, err)
	return c
}

// watchOf is c's Watch; call it on c's loop.
func (h *harness) watchOf(c *fakeConn) *Watch {
	if h.lookup {
		return h.d.WatchOf(c)
	}
	return c.watch
}

// read delivers bytes to c: its OnTraffic counts a read.
func (h *harness) read(c *fakeConn) {
	c.loop.do(func() { h.onTraffic(c) })
}

func (h *harness) onTraffic(c *fakeConn) {
	if !c.open {
		return
	}
	h.watchOf(c).Read()
}

// wrote reports a write on c.
func (h *harness) wrote(c *fakeConn) {
	c.loop.do(func() { h.watchOf(c).Wrote() })
}

// peerClose closes c as gnet does when the peer hangs up.
func (h *harness) peerClose(c *fakeConn) {
	c.loop.do(func() { h.closeConn(c, nil) })
}

// closeConn is gnet's close on the loop: OnClose once, for an open
// connection.
func (h *harness) closeConn(c *fakeConn, _ error) {
	if !c.open {
		return
	}
	c.open = false
	c.closes++
	c.closedAt = h.now()
	h.watchOf(c).Stop()
}

// handled returns the Handler calls so far.
func (h *harness) handled() []record {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]record(nil), h.calls...)
}

// onLoop returns what f returns, run on c's loop.
func onLoop[T any](c *fakeConn, f func() T) T {
	var v T
	c.loop.do(func() { v = f() })
	return v
}
