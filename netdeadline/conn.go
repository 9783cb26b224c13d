package netdeadline

import (
	"io"
	"net"
	"sync"
	"time"

	"github.com/go-schedule/schedule"
)

// Conn is a [net.Conn] whose deadlines are kept on a [schedule.Scheduler]
// (see the package documentation for the contract). Every method other
// than the deadline setters, Close, NetConn, ReadFrom and WriteTo is the
// wrapped connection's own. Its methods are safe for concurrent use, as a
// net.Conn's are.
type Conn struct {
	net.Conn
	s *schedule.Scheduler

	mu       sync.Mutex
	deadline [2]time.Time    // the read and the write deadline as last set; zero: none
	task     schedule.TaskID // due at the earlier deadline not yet passed; 0: none
	past     sides           // the sides whose socket deadline is set in the past
	closed   bool            // Close was called
	direct   bool            // the Scheduler refused a task: deadlines go to the socket
}

// sides is a set of the connection's two directions.
type sides uint8

const (
	readSide sides = 1 << iota
	writeSide
	bothSides = readSide | writeSide
)

// side lists the directions in the order of Conn.deadline.
var side = [2]sides{readSide, writeSide}

// longAgo is the deadline that fails a side's I/O on the real socket: any
// time in the past does, and one far in the past never depends on the clock.
var longAgo = time.Unix(1, 0)

// NewConn returns c wrapped so that its deadlines are kept on s. c must be
// a connection whose own deadlines work (any connection of package net
// does); the wrapper sets them only to fail a side whose deadline has
// passed, and to clear that again. NewConn returns [ErrNilConn] for a nil c
// and [ErrNilScheduler] for a nil s.
//
// Deadlines already set on c are left as they are: set them through the
// wrapper.
func NewConn(c net.Conn, s *schedule.Scheduler) (*Conn, error) {
	if c == nil {
		return nil, ErrNilConn
	}
	if s == nil {
		return nil, ErrNilScheduler
	}
	return wrap(c, s), nil
}

func wrap(c net.Conn, s *schedule.Scheduler) *Conn { return &Conn{Conn: c, s: s} }

// SetDeadline sets the read and the write deadline, as [net.Conn]'s
// SetDeadline does. A t at or before the present fails pending and later
// reads and writes at once; the zero time clears both deadlines. The error
// is the real socket's, when it refuses a deadline (for example once
// closed).
func (c *Conn) SetDeadline(t time.Time) error { return c.set(bothSides, t) }

// SetReadDeadline sets the read deadline, as net.Conn's SetReadDeadline
// does, and leaves the write deadline alone.
func (c *Conn) SetReadDeadline(t time.Time) error { return c.set(readSide, t) }

// SetWriteDeadline sets the write deadline, as net.Conn's SetWriteDeadline
// does, and leaves the read deadline alone.
func (c *Conn) SetWriteDeadline(t time.Time) error { return c.set(writeSide, t) }

// Close cancels the connection's task and closes the wrapped connection,
// returning its error. It may be called more than once: a later call has
// nothing left to cancel and returns what the wrapped connection's Close
// returns then ([net.ErrClosed] for the standard library's connections).
// Deadlines set afterwards go to the closed socket, which refuses them.
func (c *Conn) Close() error {
	c.mu.Lock()
	c.closed = true
	c.cancelTask()
	c.mu.Unlock()
	return c.Conn.Close()
}

// NetConn returns the wrapped connection. Deadlines set on it directly
// bypass the wrapper, which does not see them.
func (c *Conn) NetConn() net.Conn { return c.Conn }

// ReadFrom copies r into the connection with the wrapped connection's
// ReadFrom when it has one (sendfile and splice for a [*net.TCPConn]), and
// with [io.Copy] otherwise. Deadlines apply as to Write.
func (c *Conn) ReadFrom(r io.Reader) (int64, error) {
	if rf, ok := c.Conn.(io.ReaderFrom); ok {
		return rf.ReadFrom(r)
	}
	return io.Copy(struct{ io.Writer }{c.Conn}, r)
}

// WriteTo copies the connection into w with the wrapped connection's
// WriteTo when it has one, and with [io.Copy] otherwise. Deadlines apply
// as to Read.
func (c *Conn) WriteTo(w io.Writer) (int64, error) {
	if wt, ok := c.Conn.(io.WriterTo); ok {
		return wt.WriteTo(w)
	}
	return io.Copy(w, struct{ io.Reader }{c.Conn})
}

// set records t as the deadline of the sides which, fails or frees those
// sides on the socket as t requires, and arms the task for what is left.
func (c *Conn) set(which sides, t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || c.direct {
		return c.setSocket(which, t)
	}
	if which&readSide != 0 {
		c.deadline[0] = t
	}
	if which&writeSide != 0 {
		c.deadline[1] = t
	}
	// time.Until reads only the monotonic clock for a t that has a
	// monotonic reading (any t made from time.Now), where time.Now reads
	// the wall clock too: the clock reading is most of what a move costs.
	left := time.Until(t)
	if err := c.settle(which, !t.IsZero() && left <= 0); err != nil {
		return err
	}
	return c.arm(t, left)
}

// expire is the job of every Conn's task. It runs with the task's ID and
// the Conn. A task that is no longer the Conn's (moved to a new task,
// cancelled, closed) does nothing: whoever replaced it took over its
// deadlines.
func expire(id schedule.TaskID, arg any) {
	c := arg.(*Conn)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.task != id {
		return
	}
	c.task = 0
	// The deadlines may have moved since the task came due: decide from the
	// deadlines as they are now, under the lock that every setter takes, so
	// that a deadline moved later is never failed; arm serves whatever has
	// not passed. A socket that refuses a deadline is closed underneath:
	// there is no I/O left to fail.
	for i, sd := range side {
		d := c.deadline[i]
		if c.settle(sd, !d.IsZero() && time.Until(d) <= 0) != nil {
			return
		}
	}
	_ = c.arm(time.Time{}, 0)
}

// settle makes the socket's deadline of the sides which agree with
// passed: in the past when the deadline has passed, none otherwise (the
// task serves deadlines still to come). c.mu must be held.
func (c *Conn) settle(which sides, passed bool) error {
	for _, sd := range side {
		if which&sd == 0 || passed == (c.past&sd != 0) {
			continue // not asked, or the socket already agrees
		}
		var at time.Time // none
		if passed {
			at = longAgo
		}
		if err := c.setSocket(sd, at); err != nil {
			return err
		}
		c.past ^= sd
	}
	return nil
}

// arm makes the task due at the earlier deadline that has not passed, or
// cancels it when there is none. hint is a deadline known to be left away,
// which saves a clock reading when it is the earlier. When the Scheduler
// refuses a new task (shut down, or full), the socket takes over the
// deadlines for good. c.mu must be held.
func (c *Conn) arm(hint time.Time, left time.Duration) error {
	var due time.Time
	for i, sd := range side {
		d := c.deadline[i]
		if c.past&sd == 0 && !d.IsZero() && (due.IsZero() || d.Before(due)) {
			due = d
		}
	}
	if due.IsZero() {
		c.cancelTask()
		return nil
	}
	delay := left
	if !due.Equal(hint) {
		delay = time.Until(due)
	}
	if c.task != 0 && c.s.Reset(c.task, delay) {
		return nil
	}
	// No task, or one that has come due: its job finds it replaced.
	id, err := c.s.ScheduleOneWith(expire, c, delay)
	if err != nil {
		c.task = 0
		c.direct = true
		return c.handOver()
	}
	c.task = id
	return nil
}

// cancelTask cancels the task, if any. c.mu must be held.
func (c *Conn) cancelTask() {
	if c.task != 0 {
		c.s.CancelTask(c.task) // false when its job is due: it finds itself replaced
		c.task = 0
	}
}

// handOver sets the deadlines that have not passed on the socket, which
// keeps them from now on. c.mu must be held.
func (c *Conn) handOver() error {
	for i, sd := range side {
		if c.past&sd == 0 && !c.deadline[i].IsZero() {
			if err := c.setSocket(sd, c.deadline[i]); err != nil {
				return err
			}
		}
	}
	return nil
}

// setSocket sets the wrapped connection's deadline of the sides which.
func (c *Conn) setSocket(which sides, t time.Time) error {
	switch which {
	case readSide:
		return c.Conn.SetReadDeadline(t)
	case writeSide:
		return c.Conn.SetWriteDeadline(t)
	}
	return c.Conn.SetDeadline(t)
}
