// Package gnetidle detects idle connections of a gnet server
// (github.com/panjf2000/gnet/v2) with go-schedule: reader idle (nothing
// received for a while), writer idle (nothing written) and all idle
// (neither), each optional, as Netty's IdleStateHandler does for Java
// servers. gnet has no deadlines of its own: Conn.SetDeadline and
// Conn.SetReadDeadline return ErrUnsupportedOp, and EventLoop.Schedule is not
// implemented.
//
// A Detector keeps one go-schedule task per connection, whatever idle states
// are enabled: the task is due at the earliest of the connection's idle
// deadlines, and each read pushes it out with one Reset, which allocates
// nothing and does not involve the scheduler's owner goroutine. When it comes
// due, a job on the scheduler's pool hands the connection back to its own
// event loop (EventLoop.Execute), which checks what is really idle and calls
// the Handler there. The Handler therefore runs on the connection's event
// loop, like any gnet event, and never after OnClose: it may use every Conn
// method, and its gnet.Action is applied as gnet applies the actions of
// OnTraffic. The default Handler, CloseIdle, closes the connection.
//
// # Adding it to a server
//
// With one line in each of OnOpen, OnTraffic and OnClose, the Detector keeps
// the per-connection state itself, found by the connection's file
// descriptor, and the connection's Context stays the server's:
//
//	s, _ := schedule.New(4)
//	idle, _ := gnetidle.New(s, gnetidle.Timeouts{Reader: 30 * time.Second}, nil)
//
//	func (srv *server) OnOpen(c gnet.Conn) ([]byte, gnet.Action) {
//		_ = srv.idle.Opened(c) // fails only once s is shut down
//		...
//	}
//	func (srv *server) OnTraffic(c gnet.Conn) gnet.Action {
//		srv.idle.Read(c)
//		...
//	}
//	func (srv *server) OnClose(c gnet.Conn, err error) gnet.Action {
//		srv.idle.Closed(c)
//		...
//	}
//
// Wrap does the same for a whole handler:
// gnet.Run(idle.Wrap(handler), addr, ...). A server that keeps a struct per
// connection in the Context can embed a Watch in it instead and call
// Detector.Start, Watch.Read and Watch.Stop, which saves the look-up and an
// allocation per connection.
//
// Writes count only when reported (Wrote after Conn.Write, or in the callback
// of Conn.AsyncWrite), because gnet offers no hook on them; reads count on
// each call to Read, normally once per OnTraffic. Timeouts can be set per
// connection (OpenedWith, SetTimeouts), for protocols that negotiate their
// own keep-alive.
//
// Every method that takes a connection, or belongs to a Watch, must be
// called on that connection's event loop: inside gnet's event handlers, or
// in callbacks gnet runs there (AsyncWrite's, Execute's). New, Stats and Len
// are safe for concurrent use.
//
// The Scheduler must outlive the gnet engines that use the Detector: once it
// is shut down, connections that open are not watched (Opened returns the
// scheduler's error), and those watched are no longer timed out.
package gnetidle
