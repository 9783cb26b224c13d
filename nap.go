package schedule

import "time"

// Naps: the last stretch before a deadline, slept in the kernel.
//
// When every processor is idle, the Go runtime waits for its next timer in
// epoll_wait on Linux, whose timeout is in whole milliseconds: at least 1,
// and rounded down (runtime/netpoll_epoll.go). A timer due in 50 µs thus
// wakes its goroutine after a millisecond. On the 2-core VM of the
// benchmarks, time.Sleep(50 * time.Microsecond) returned 1.08 ms late at
// the median, a nanosleep of the same length 0.1 ms late.
//
// So on Linux the owner sets its timer napMax ahead of the deadline it
// waits for, and sleeps what is left, at most napMax, in the kernel: its
// thread blocks in nanosleep, and the Go runtime hands the owner's
// processor to another thread if goroutines wait for one. A napping owner
// cannot be woken: a request that cannot wait (inbox.go) waits for the end
// of the nap, less than napMax, which is no longer than the runtime's own
// timer would have made it wait. Shutdown waits for it too.
//
// Naps are rationed: a deadline that falls within napGap of the owner's
// last hand-over of due tasks is served napGap after it, together with
// every other deadline due by then. A stream of deadlines a few
// microseconds apart thus costs the owner one wake per napGap rather than
// one per deadline, while a deadline on its own is met to the kernel's
// precision. With the runtime's timers the owner woke whenever a busy
// processor happened to look at its timer; rationed naps used a quarter
// less CPU per fired job on the benchmarks' sparse stream, and made its
// median lateness 0.4 ms instead of 0.6.
//
// Naps are off where the clock is not the kernel's: in a testing/synctest
// bubble time moves only while every goroutine in it is blocked, which a
// goroutine in a system call is not, so a nap would never reach its
// deadline (clockIsReal).
const (
	napMax = time.Millisecond
	napGap = 500 * time.Microsecond
)

// napUntil reports whether the owner, whose earliest wake-up is next, has
// come to the last stretch before it, and if so when its nap ends. Only
// the owner calls it.
func (s *Scheduler) napUntil(next, now int64) (until int64, ok bool) {
	if !s.naps || next >= never || next-now > int64(napMax) {
		return 0, false
	}
	return max(next, s.handedAt+int64(napGap)), true
}

// nap sleeps the owner until when, unless requests wait in the inbox. It
// reports whether when has come. Only the owner calls it.
func (s *Scheduler) nap(when int64) bool {
	s.sleepUntil.Store(when)
	if s.inboxWaiting() || s.movedEarlier.Load() < when {
		s.sleepUntil.Store(0)
		return false
	}
	if d := when - s.now(); d > 0 {
		kernelSleep(time.Duration(d))
	}
	s.sleepUntil.Store(0)
	return true
}

// clockIsReal reports whether time moves while the calling goroutine runs,
// as the kernel's clock does and a synctest bubble's does not. Outside a
// bubble it returns after a reading or two of the clock; inside one, after
// 10,000.
func clockIsReal() bool {
	t0 := time.Now()
	for range 10000 {
		if time.Since(t0) != 0 {
			return true
		}
	}
	return false
}
