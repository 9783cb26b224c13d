// Package gnetidle detects idle connections of a gnet server
// (github.com/panjf2000/gnet/v2) with go-schedule: reader idle (nothing
// received for a while), writer idle (nothing written) and all idle
// (neither), each optional, as Netty's IdleStateHandler does for Java
// servers. gnet has no deadlines of its own: Conn.SetDeadline and
// Conn.SetReadDeadline return ErrUnsupportedOp, and EventLoop.Schedule is not
// implemented.
//
// A [Detector] keeps one task on a [schedule.Scheduler] per connection,
// whatever idle states are enabled: the task is due at the earliest of the
// connection's idle deadlines, and a read that moves the earliest of them
// (one of a state that is timed) pushes it out with one
// [schedule.Scheduler.Reset], a postponement, which allocates nothing and
// sends the scheduler no request; a read while the task is on its way to
// the event loop schedules it anew. When it comes due, a job on the
// scheduler's pool hands the connection back to its own event loop
// (gnet's EventLoop.Execute), which checks what is really idle and calls
// the [Handler] there. The Handler therefore runs on the connection's event
// loop, like any gnet event, and never after OnClose: it may use every Conn
// method, and its gnet.Action is applied as gnet applies the actions of
// OnTraffic. The default Handler, [CloseIdle], closes the connection.
//
// # Adding it to a server
//
// A handler as it is gets idle detection with [Detector.Wrap], and its
// connections' Context stays its own:
//
//	s, _ := schedule.New(4)
//	idle, _ := gnetidle.New(s, gnetidle.Timeouts{Reader: 30 * time.Second}, nil)
//	gnet.Run(idle.Wrap(handler), "tcp://:7070")
//
// A server that keeps a struct per connection embeds a [Watch] in it, with
// one line in each of OnOpen, OnTraffic and OnClose ([Detector.Start],
// [Watch.Read], [Watch.Stop]):
//
//	func (srv *server) OnOpen(c gnet.Conn) ([]byte, gnet.Action) {
//		sess := new(session) // holds idle gnetidle.Watch
//		c.SetContext(sess)
//		_ = srv.idle.Start(c, &sess.idle) // fails only once s is shut down
//		...
//	}
//	func (srv *server) OnTraffic(c gnet.Conn) gnet.Action {
//		c.Context().(*session).idle.Read()
//		...
//	}
//	func (srv *server) OnClose(c gnet.Conn, err error) gnet.Action {
//		c.Context().(*session).idle.Stop()
//		...
//	}
//
// Either way, [Detector.WatchOf](c) returns the connection's Watch, the
// handle for the rest: [Watch.Wrote] reports a write, and
// [Watch.SetTimeouts] gives the connection timeouts of its own, for
// protocols that negotiate their own keep-alive. Writes count only when reported (Wrote after Conn.Write, or
// in the callback of Conn.AsyncWrite), because gnet offers no hook on them;
// reads count on each call to Read, normally once per OnTraffic.
//
// Start, WatchOf and every method of a Watch must be called on the
// connection's event loop: inside gnet's event handlers, or in callbacks
// gnet runs there (AsyncWrite's, Execute's). [New], Wrap and
// [Detector.Stats] are safe for concurrent use.
//
// The Scheduler must outlive the gnet engines that use the Detector: once it
// is shut down, connections that open are not watched (Start returns the
// scheduler's error), and those watched are no longer timed out.
package gnetidle
