// Package netdeadline serves the deadlines of network connections from a
// go-schedule [schedule.Scheduler] instead of the Go runtime's per-socket
// timers.
//
// A server that moves a connection's deadline before every request or
// packet (an MQTT broker's keep-alive, net/http's ReadTimeout and
// IdleTimeout, a custom protocol's idle timeout) pays for a runtime timer
// move each time. Wrapped by this package, the connection keeps one task
// on the Scheduler instead. [Conn.SetDeadline], [Conn.SetReadDeadline] and
// [Conn.SetWriteDeadline] move that task with [schedule.Scheduler.Reset]
// while its deadline has not passed, which allocates nothing and moves no
// timer of the runtime; a deadline set anew after one passed, or after
// none was set, schedules a new task. When the task comes due, it sets the
// real socket's read or write deadline, whichever has passed, to a time in
// the past, so that blocked and later I/O on that side fails exactly as it
// does when the runtime's own deadline passes.
//
// Wrap a listener ([NewListener]), and every connection it accepts is
// served; [NewConn] wraps one connection:
//
//	s, _ := schedule.New(4)
//	defer s.Shutdown() // after the server and its connections are closed
//	ln, _ := net.Listen("tcp", ":8080")
//	wl, _ := netdeadline.NewListener(ln, s)
//	_ = http.Serve(wl, handler)
//
// # The deadline contract
//
// A wrapped [Conn] keeps the [net.Conn] deadline contract:
//
//   - I/O past a deadline fails with an error that wraps
//     [os.ErrDeadlineExceeded] and whose [net.Error] Timeout method reports true:
//     the real socket's own error, unchanged.
//   - A deadline at or before the present fails pending and later I/O on its
//     side at once, before the Set method returns.
//   - A deadline moved into the future, or cleared with the zero time, after
//     it passed makes I/O on that side work again.
//   - The read and write deadlines are separate: only the side whose
//     deadline passed fails. Both together cost one task, due at the earlier
//     of the two.
//   - The zero time clears a deadline; with neither deadline set, the
//     connection holds no task.
//   - [Conn.Close] cancels the task. The Scheduler then holds no reference
//     to the connection (once a job already running for it has returned).
//
// A deadline passes when the Scheduler's job for it runs: as promptly as
// any Go timer, plus the hand-over to one of the Scheduler's workers. The
// jobs are short (a lock and one deadline set on the socket), so a few
// workers serve many thousands of connections.
//
// # The Scheduler's life
//
// The Scheduler must outlive the connections it serves. After
// [schedule.Scheduler.Shutdown] a Conn sets its deadlines on the real
// socket instead, as an unwrapped connection does, but a deadline that was
// pending on the Scheduler when it shut down never passes.
package netdeadline
