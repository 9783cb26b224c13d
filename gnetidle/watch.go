package gnetidle

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/go-schedule/schedule"
	"github.com/panjf2000/gnet/v2"
	errorx "github.com/panjf2000/gnet/v2/pkg/errors"
)

// after returns the deadline d after at, saturating at math.MaxInt64 rather
// than wrapping round to a deadline in the past: a timeout of
// math.MaxInt64 must not turn the others off. A deadline has no "never" of
// its own here: the Scheduler treats a delay beyond its horizon as never,
// so a saturated deadline never comes. at is never negative, and d is
// positive.
func after(at, d int64) int64 {
	if d > math.MaxInt64-at {
		return math.MaxInt64
	}
	return at + d
}

// unarmed is the value of Watch.armed when the deadline the task is armed
// for is not known; deadlines are never negative.
const unarmed = -1

// Watch is the idle state of one connection. The zero value is ready for
// Detector.Start; a Watch serves one connection, once, and must not be
// copied after Start. A server that keeps a struct per connection (in the
// connection's Context, typically) embeds a Watch in it; Wrap keeps one of
// its own for each connection, found with Detector.WatchOf.
//
// All its methods must be called on the connection's event loop. They do
// nothing on a nil Watch, one that is not started, or one that is stopped,
// so that the result of WatchOf can be used without a check.
type Watch struct {
	// The fields a read uses come first, so that a read touches two cache
	// lines of a Watch at most; the Watch fits a 128-byte allocation.
	status   uint8
	fired    uint8 // bit s: an Event of state s since its last activity
	fd       int32 // conn's descriptor, its key in the Detector's table
	d        *Detector
	task     schedule.TaskID // the last one scheduled, maybe spent; 0 for none
	armed    int64           // the deadline the task was last set to, or unarmed
	lastRead int64
	timeouts [numStates]int64
	due      [numStates]int64 // when each enabled state's next Event is due

	lastWrite int64
	conn      gnet.Conn
	// loop is the connection's event loop. It is written once, by Start,
	// before the connection's task exists, and then read by the task's job
	// on the scheduler's pool: everything else here belongs to the loop.
	loop gnet.EventLoop
}

// Watch statuses.
const (
	unstarted uint8 = iota
	watching
	stopped
)

// Start starts watching c with the Detector's default timeouts, counting c
// as active now, and keeps w as c's Watch until Stop; call it in OnOpen,
// and w.Stop in OnClose. Give c timeouts of its own with w.SetTimeouts.
//
// It returns ErrNilConn for a nil c, ErrWatchUsed when w was started
// before, ErrConnWatched when c is watched already (by another Watch), and
// the scheduler's error when it cannot schedule (after it was shut down);
// w is then stopped.
func (d *Detector) Start(c gnet.Conn, w *Watch) error {
	if c == nil {
		return ErrNilConn
	}
	if w.status != unstarted {
		return ErrWatchUsed
	}
	if d.WatchOf(c) != nil {
		return ErrConnWatched
	}
	now := d.now()
	w.d, w.conn, w.fd, w.loop = d, c, int32(c.Fd()), c.EventLoop()
	w.lastRead, w.lastWrite = now, now
	w.armed = unarmed
	w.status = watching
	if err := w.setTimeouts(d.def, now); err != nil {
		// No task exists: there is nothing to cancel, and the connection
		// was never counted.
		w.status = stopped
		w.conn = nil
		return fmt.Errorf("gnetidle: cannot watch the connection: %w", err)
	}
	d.conns.store(int(w.fd), w)
	// Counted only once scheduled, so that Stats never counts a
	// connection that is refused.
	d.watched.Add(1)
	return nil
}

// Read counts a read: call it in OnTraffic, once per call. It pushes the
// reader idle and all idle deadlines out to now plus their timeouts, with
// one Reset of the connection's task when that moves its earliest deadline.
func (w *Watch) Read() {
	if w != nil && w.status == watching {
		w.lastRead = w.active(ReaderIdle)
	}
}

// Wrote counts a write: call it after Conn.Write or Conn.Writev returns, or
// in the callback of Conn.AsyncWrite, once per write. It pushes the writer
// idle and all idle deadlines out as Read does for reads.
//
// gnet offers no hook on writes, so only reported writes count, when they
// are reported: a write that gnet could not finish at once and keeps in its
// outbound buffer counts from the call, not from when the peer takes it.
func (w *Watch) Wrote() {
	if w != nil && w.status == watching {
		w.lastWrite = w.active(WriterIdle)
	}
}

// active counts activity of state s (ReaderIdle for a read, WriterIdle for
// a write) at now, which it returns: it pushes the deadlines of s and of
// AllIdle out to now plus their timeouts, and rearms the task.
func (w *Watch) active(s State) (now int64) {
	now = w.d.now()
	w.fired &^= 1<<s | 1<<AllIdle
	for _, st := range [...]State{s, AllIdle} {
		if t := w.timeouts[st]; t > 0 {
			w.due[st] = after(now, t)
		}
	}
	_ = w.rearm(now) // fails only once the scheduler is shut down
	return now
}

// SetTimeouts replaces the connection's timeouts, for a protocol that
// negotiates its own keep-alive after the connection opened (MQTT's
// CONNECT). Each enabled state counts from its last activity, as if the new
// timeouts had been set all along; an Event that is due by then follows at
// once, from the event loop. Zero for every state stops the timing until
// the next SetTimeouts, without stopping the Watch.
//
// It returns ErrNotWatched when w is not watching, ErrNegativeTimeout for a
// negative timeout, and the scheduler's error when it cannot schedule.
func (w *Watch) SetTimeouts(t Timeouts) error {
	if w == nil || w.status != watching {
		return ErrNotWatched
	}
	if err := t.validate(); err != nil {
		return err
	}
	return w.setTimeouts(t, w.d.now())
}

// Timeouts returns the connection's timeouts: the Detector's defaults or
// those set for it. It returns zero Timeouts when w is not watching.
func (w *Watch) Timeouts() Timeouts {
	if w == nil || w.status != watching {
		return Timeouts{}
	}
	return Timeouts{
		Reader: time.Duration(w.timeouts[ReaderIdle]),
		Writer: time.Duration(w.timeouts[WriterIdle]),
		All:    time.Duration(w.timeouts[AllIdle]),
	}
}

// Stop stops watching: call it in OnClose. The connection's task is
// cancelled, and the Detector and the Watch let go of the connection; an
// Event already on its way to the event loop is dropped there. Stop is
// idempotent, and a stopped Watch is not started again.
func (w *Watch) Stop() {
	if w == nil || w.status != watching {
		return
	}
	w.status = stopped
	if w.task != 0 {
		w.d.s.CancelTask(w.task)
		w.task = 0
	}
	w.d.conns.remove(int(w.fd), w)
	w.conn = nil
	w.d.watched.Add(-1)
}

// setTimeouts sets the timeouts and the deadlines they give, and arms the
// task for the earliest.
func (w *Watch) setTimeouts(t Timeouts, now int64) error {
	for s := range State(numStates) {
		d := int64(t.of(s))
		w.timeouts[s] = d
		if d > 0 {
			w.due[s] = after(w.lastActive(s), d)
		}
	}
	return w.rearm(now)
}

// lastActive is when the activity state s watches last happened.
func (w *Watch) lastActive(s State) int64 {
	switch s {
	case ReaderIdle:
		return w.lastRead
	case WriterIdle:
		return w.lastWrite
	}
	return max(w.lastRead, w.lastWrite)
}

// earliest is the earliest deadline of the enabled states, and false when
// none is enabled.
func (w *Watch) earliest() (int64, bool) {
	next, ok := int64(math.MaxInt64), false
	for s := range State(numStates) {
		if w.timeouts[s] > 0 {
			next, ok = min(next, w.due[s]), true
		}
	}
	return next, ok
}

// rearm sets the connection's task for the earliest deadline of the
// enabled states, unless it is set for it already, and cancels it when no
// state is enabled. It returns the scheduler's error when it cannot
// schedule (once it is shut down: nothing fires then anyway).
//
// The task is a one-shot, due at the deadline itself: a Reset per read
// keeps it pending while the connection is active. Once it has fired,
// Reset no longer finds it, and rearm schedules the next; its run, on its
// way to the event loop, then finds the next deadline already armed. So
// the next fire is always due at the earliest deadline, whenever the
// deadlines change, and never at an interval fixed in advance.
func (w *Watch) rearm(now int64) error {
	next, ok := w.earliest()
	if !ok {
		if w.task != 0 {
			w.d.s.CancelTask(w.task)
			w.task = 0
		}
		w.armed = unarmed
		return nil
	}
	if next == w.armed {
		return nil
	}
	delay := time.Duration(next - now)
	if w.task == 0 || !w.d.s.Reset(w.task, delay) {
		id, err := w.d.s.ScheduleOneWith(fire, w, delay)
		if err != nil {
			w.task, w.armed = 0, unarmed
			return err
		}
		w.task = id
	}
	w.armed = next
	return nil
}

// fire is the job of every connection's task, on the scheduler's pool: it
// hands the connection back to its event loop, where run looks at what is
// idle. It touches nothing of the Watch but its loop.
func fire(_ schedule.TaskID, arg any) {
	w := arg.(*Watch)
	// Execute fails only while the engine shuts down, which closes every
	// connection and so stops every watch.
	_ = w.loop.Execute(context.Background(), (*runner)(w))
}

// runner is a Watch as the gnet.Runnable that fire hands to the event loop.
type runner Watch

// Run raises the Events that are due, on the event loop.
func (r *runner) Run(context.Context) error { return (*Watch)(r).run() }

// run raises an Event for each enabled state whose deadline has passed,
// reader, writer, all, in that order, applying the Handler's Action after
// each, and re-arms the task for the next deadline. A connection closed
// before it runs (its OnClose stopped the Watch) gets none.
func (w *Watch) run() error {
	if w.status != watching {
		return nil
	}
	d := w.d
	now := d.now()
	for s := range State(numStates) {
		t := w.timeouts[s]
		if t <= 0 || now < w.due[s] {
			continue
		}
		e := Event{State: s, First: w.fired&(1<<s) == 0, Idle: time.Duration(now - w.lastActive(s))}
		w.fired |= 1 << s
		// The next Event of this state, if the connection stays idle, is
		// a whole timeout after this one, whatever the Handler takes.
		w.due[s] = after(now, t)
		d.events[s].Add(1)
		// The Handler may stop the Watch, which lets go of the connection:
		// its Action still applies to the connection it was called for.
		c := w.conn
		switch d.handler(c, e) {
		case gnet.Close:
			d.closed.Add(1)
			// On its own event loop, so gnet closes it now and calls
			// OnClose, which stops the Watch; gnet ignores the close of a
			// connection the Handler closed itself. Stop again in case
			// OnClose does not.
			_ = w.loop.Close(c)
			w.Stop()
			return nil
		case gnet.Shutdown:
			return errorx.ErrEngineShutdown
		}
		if w.status != watching {
			return nil // the Handler closed it, or stopped the Watch
		}
	}
	// The task that fired is spent: arm the next, unless a read or the
	// Handler armed it already.
	w.armed = unarmed
	_ = w.rearm(d.now())
	return nil
}
