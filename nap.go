package schedule

import "time"

// Naps: the last stretch before a deadline, slept in the kernel.
//
// When every processor is idle, the Go runtime waits for its next timer in
// epoll_wait on Linux, whose timeout is in whole milliseconds: at least 1,
// and rounded down (runtime/netpoll_epoll.go). A timer due in 50 µs thus
// wakes its goroutine after a millisecond. On the 2-core VM of the
// benchmarks, time.Sleep(50 * time.Microsecond) returned 1.08 ms late at
// the median, a nanosleep of the same length 0.1 ms late
// (BenchmarkWakeUpLateness).
//
// So on Linux the owner sets its timer napMax ahead of the deadline it waits
// for, and sleeps what is left, at most napMax, in the kernel: its thread
// blocks in nanosleep. A goroutine in a system call keeps its processor
// until another processor steals the goroutines queued on it or the
// runtime's monitor takes it back. A run the owner started just before a nap
// thus starts on the other processor, once that processor's thread takes it,
// rather than at once. The owner does not yield to that run before it naps.
// It used to, which started the run at once on the owner's processor. But in
// bench/'s fire workload, run as the child process of bench-x (`-child-impl
// lazycancel -child-workload fire`) by builds with and without the yield in
// turn, the yield cost 1.1 to 1.5 times the CPU per fired job (median 1.3)
// in each of 17 pairs, most likely for the thread the runtime wakes to take
// the new run, which then found nothing to take; and it did not lower the
// p99 lateness consistently: the median p99 of three sets of five or six
// pairs was 0.7 and 0.3 ms lower with it, and 0.4 ms higher. With GOMAXPROCS
// 1, other goroutines may likewise wait for the monitor, at most for the
// rest of the nap. A napping owner cannot be woken: a request that cannot
// wait (inbox.go) waits for the end of the nap, less than napMax, which is
// no longer than the runtime's own timer would have made it wait. Shutdown
// waits for it too.
//
// Naps are rationed: a deadline that falls within napGap of the owner's
// last hand-over of due tasks is served napGap after it, together with
// every other deadline due by then. A stream of deadlines microseconds
// apart thus wakes the owner once per napGap, not once per deadline, while
// a deadline on its own is met to the kernel's precision. The gap trades
// lateness for CPU. On bench/'s fire workload (100,000 deadlines a second
// for 2 s; `go run . -impl lazycancel,runtime -workload fire -count 4` in
// bench/, with napGap changed), four interleaved runs per value put the CPU
// per fired job at 0.73–0.91× the runtime's with a gap of 0.5 ms,
// 0.61–0.76× with 0.75 ms and 0.58–0.80× with 1 ms, and the median p99
// lateness at 1.24, 1.04 and 1.31 ms against the runtime's 1.47 ms. Before
// naps the owner slept on its timer alone and woke whenever a busy
// processor happened to look at it: 0.8–1.2× the runtime's CPU per job in
// runs of the same day. Those runs predate the yield described above; a
// later day's, with it, put the 0.75 ms gap at 0.86–1.00×, and wider gaps
// bought little CPU for much lateness (docs/results/fire-napgap-8017232.md).
// The ratios move with the machine's day. They chose the gap; they promise
// no ratio.
//
// Naps are off where the clock is not the kernel's: in a testing/synctest
// bubble time moves only while every goroutine in it is blocked, which a
// goroutine in a system call is not, so a nap would never reach its
// deadline (clockIsReal).
const (
	napMax = time.Millisecond
	napGap = 750 * time.Microsecond
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
