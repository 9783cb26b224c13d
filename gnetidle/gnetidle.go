package gnetidle

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/go-schedule/schedule"
	"github.com/panjf2000/gnet/v2"
)

// State is an idle state: what a connection has not done for its timeout.
type State uint8

const (
	// ReaderIdle: nothing was read from the connection for Timeouts.Reader.
	ReaderIdle State = iota
	// WriterIdle: nothing was written to the connection (reported with
	// Watch.Wrote) for Timeouts.Writer.
	WriterIdle
	// AllIdle: neither read nor written for Timeouts.All.
	AllIdle

	numStates = 3
)

// String returns "reader idle", "writer idle" or "all idle".
func (s State) String() string {
	switch s {
	case ReaderIdle:
		return "reader idle"
	case WriterIdle:
		return "writer idle"
	case AllIdle:
		return "all idle"
	}
	return fmt.Sprintf("State(%d)", uint8(s))
}

// Timeouts are how long a connection may stay idle in each state before an
// Event; zero turns a state off.
type Timeouts struct {
	// Reader is the longest time without a read.
	Reader time.Duration
	// Writer is the longest time without a reported write (Watch.Wrote).
	Writer time.Duration
	// All is the longest time with neither.
	All time.Duration
}

// of returns the timeout of state s.
func (t Timeouts) of(s State) time.Duration {
	switch s {
	case ReaderIdle:
		return t.Reader
	case WriterIdle:
		return t.Writer
	}
	return t.All
}

// validate reports ErrNegativeTimeout when a timeout is negative.
func (t Timeouts) validate() error {
	if t.Reader < 0 || t.Writer < 0 || t.All < 0 {
		return ErrNegativeTimeout
	}
	return nil
}

// Event tells a Handler that a connection has gone idle.
//
// As with Netty's IdleStateEvent, a connection that stays idle gets an Event
// of the same state again each time the state's timeout passes once more
// after the previous Event (when the Handler does not close it). First is
// true for the first Event of a state after the activity that state
// watches, and false for the repeats, until the connection is active again.
type Event struct {
	State State
	First bool
	// Idle is how long the connection has been idle in State: since its
	// last read (ReaderIdle), its last reported write (WriterIdle), the later
	// of the two (AllIdle), or since it started to be watched when there was
	// none. It is at least the state's timeout.
	Idle time.Duration
}

// Handler is called when a watched connection goes idle. It runs on the
// connection's event loop, like gnet's own event handlers, so it may use
// every method of c, and it must not block: the event loop serves all of
// its connections in turn. Its Action is applied as gnet applies the
// Action of OnTraffic: gnet.Close closes c at once (its OnClose runs before
// the Handler's caller returns), gnet.Shutdown shuts the engine down.
//
// A Handler is never called for a connection whose OnClose has run
// (OnClose stops the connection's Watch: Wrap's does, and a server that
// calls Start itself calls [Watch.Stop] there), and never twice for one
// Event.
type Handler func(c gnet.Conn, e Event) gnet.Action

// CloseIdle is the default Handler: it closes the connection, whatever the
// state.
func CloseIdle(gnet.Conn, Event) gnet.Action { return gnet.Close }

// Errors returned by the package.
var (
	// ErrNilScheduler is returned by New for a nil Scheduler.
	ErrNilScheduler = errors.New("gnetidle: nil scheduler")
	// ErrNegativeTimeout is returned for a negative timeout.
	ErrNegativeTimeout = errors.New("gnetidle: negative timeout")
	// ErrNilConn is returned by Detector.Start for a nil connection.
	ErrNilConn = errors.New("gnetidle: nil connection")
	// ErrWatchUsed is returned by Start for a Watch started before: a
	// Watch serves one connection, once.
	ErrWatchUsed = errors.New("gnetidle: watch already started")
	// ErrConnWatched is returned by Start for a connection watched
	// already, by another Watch.
	ErrConnWatched = errors.New("gnetidle: connection already watched")
	// ErrNotWatched is returned by Watch.SetTimeouts for a Watch that is
	// not watching: nil (WatchOf found none), never started, or stopped.
	ErrNotWatched = errors.New("gnetidle: connection not watched")
)

// Detector watches connections for idleness on a go-schedule Scheduler. Make
// one with New; one Detector may serve any number of connections, event
// loops and engines. Start and WatchOf must be called on the connection's
// event loop; New, Wrap and Stats are safe for concurrent use.
type Detector struct {
	s       *schedule.Scheduler
	def     Timeouts
	handler Handler
	epoch   time.Time // deadlines are nanoseconds since epoch (monotonic)
	conns   connTable // the watches, by file descriptor

	watched atomic.Int64
	events  [numStates]atomic.Uint64
	closed  atomic.Uint64
}

// New returns a Detector whose timers live on s, with the default timeouts
// def (zero for every state is allowed: only connections given timeouts of
// their own are then watched) and the Handler h; a nil h is CloseIdle.
//
// It returns ErrNilScheduler for a nil s and ErrNegativeTimeout for a
// negative timeout. The Detector only schedules on s: s must run at least
// as long as the engines that use the Detector, and the caller shuts it
// down.
func New(s *schedule.Scheduler, def Timeouts, h Handler) (*Detector, error) {
	if s == nil {
		return nil, ErrNilScheduler
	}
	if err := def.validate(); err != nil {
		return nil, err
	}
	if h == nil {
		h = CloseIdle
	}
	return &Detector{s: s, def: def, handler: h, epoch: time.Now()}, nil
}

// now is the Detector's clock: monotonic nanoseconds since New.
func (d *Detector) now() int64 { return int64(time.Since(d.epoch)) }

// Stats are a Detector's counters. Each only grows, except Watched.
type Stats struct {
	// Watched is the number of connections watched now: started, and not
	// stopped. A connection that Start refuses is never counted.
	Watched int
	// Events counts the Events raised, indexed by State.
	Events [AllIdle + 1]uint64
	// Closed counts the Events whose Handler returned gnet.Close: the
	// connections closed for idleness, one per Event (a Handler that
	// closed or stopped its connection itself and then returned
	// gnet.Close counts too).
	Closed uint64
}

// Stats returns a snapshot of the Detector's counters.
func (d *Detector) Stats() Stats {
	st := Stats{Watched: int(d.watched.Load()), Closed: d.closed.Load()}
	for i := range st.Events {
		st.Events[i] = d.events[i].Load()
	}
	return st
}
