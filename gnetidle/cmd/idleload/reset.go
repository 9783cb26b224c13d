package main

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/go-schedule/schedule"
	"github.com/go-schedule/schedule/bench/loadtest"
	"github.com/go-schedule/schedule/gnetidle/internal/gnetutil"
	"github.com/panjf2000/gnet/v2"
)

// resetServer is gnet with go-schedule written directly on the Scheduler,
// reader idle only, as the load needs, in the two ways a read can be
// counted, to compare them on the same load without the rest of gnetidle:
//   - reset (stamp false): each read pushes the connection's task out with
//     a Reset, so that the task comes due only when the connection is
//     idle; the task's job hands it to its event loop, which closes it
//     (or re-arms the task, if a read came meanwhile). gnetidle's way.
//   - stamp: each read only stores the time, as Netty's IdleStateHandler
//     does; the task comes due a timeout after the read it was armed for,
//     and its job re-arms it for the time left, off the event loop, unless
//     the connection is idle: one fire per timeout per active connection.
type resetServer struct {
	gnet.BuiltinEventEngine
	stamp bool
	s     *schedule.Scheduler
	srv   *gnetutil.Server
	idle  int64     // the timeout, in nanoseconds
	epoch time.Time // times are nanoseconds since epoch
	conns atomic.Int64
	// closed counts the connections closed for idleness.
	closed atomic.Int64
	late   loadtest.Lateness
}

// resetConn is what the server keeps per connection, in its Context. Its
// fields are its event loop's, but for loop and lastRead, which the task's
// job reads.
type resetConn struct {
	srv      *resetServer
	c        gnet.Conn
	loop     gnet.EventLoop
	task     schedule.TaskID
	lastRead atomic.Int64
	closed   bool
}

func newResetServer(s *schedule.Scheduler, idle time.Duration, stamp bool) *resetServer {
	return &resetServer{s: s, idle: int64(idle), epoch: time.Now(), stamp: stamp}
}

func (s *resetServer) now() int64 { return int64(time.Since(s.epoch)) }

func (s *resetServer) OnOpen(c gnet.Conn) ([]byte, gnet.Action) {
	rc := &resetConn{srv: s, c: c, loop: c.EventLoop()}
	rc.lastRead.Store(s.now())
	c.SetContext(rc)
	// Repeating, so that a Reset finds it pending even while a fire of it
	// is on its way to the event loop.
	id, err := s.s.ScheduleWith(fireReset, rc, time.Duration(s.idle))
	if err != nil {
		return nil, gnet.Close
	}
	rc.task = id
	s.conns.Add(1)
	return nil, gnet.None
}

func (s *resetServer) OnTraffic(c gnet.Conn) gnet.Action {
	rc := c.Context().(*resetConn)
	rc.lastRead.Store(s.now())
	if !s.stamp {
		s.s.Reset(rc.task, time.Duration(s.idle))
	}
	_, _ = c.Discard(-1)
	return gnet.None
}

func (s *resetServer) OnClose(c gnet.Conn, _ error) gnet.Action {
	rc, ok := c.Context().(*resetConn)
	if !ok || rc.task == 0 {
		return gnet.None
	}
	rc.closed = true
	s.s.CancelTask(rc.task)
	s.conns.Add(-1)
	return gnet.None
}

// fireReset hands the connection to its event loop; in stamp mode, only
// when it is idle, re-arming the task for the time left otherwise.
func fireReset(id schedule.TaskID, arg any) {
	rc := arg.(*resetConn)
	if s := rc.srv; s.stamp {
		now := s.now()
		if due := rc.lastRead.Load() + s.idle; due > now {
			s.s.Reset(id, time.Duration(due-now))
			return
		}
	}
	_ = rc.loop.Execute(context.Background(), rc)
}

// Run closes the connection on its event loop if it is still idle, or
// re-arms the task if it has read since the task fired.
func (rc *resetConn) Run(context.Context) error {
	if rc.closed {
		return nil
	}
	s := rc.srv
	now := s.now()
	if due := rc.lastRead.Load() + s.idle; due > now {
		s.s.Reset(rc.task, time.Duration(due-now))
		return nil
	}
	s.closed.Add(1)
	s.late.Add(time.Duration(now - rc.lastRead.Load() - s.idle))
	return rc.loop.Close(rc.c) // on its own loop: OnClose runs now
}

func (s *resetServer) addr() string      { return s.srv.Addr }
func (s *resetServer) open() int64       { return s.conns.Load() }
func (s *resetServer) idleClosed() int64 { return s.closed.Load() }
func (s *resetServer) lateness() []int64 { return s.late.Micros() }
