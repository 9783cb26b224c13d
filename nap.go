package schedule

import (
	"runtime"
	"time"
)

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
// So on Linux the owner sets its timer timerLead ahead of the deadline it
// waits for, and sleeps what is left in the kernel, in naps of at most
// napMax: its thread blocks in nanosleep. The lead is twice the longest nap
// because the timer itself is late by up to a millisecond and more, for the
// same reason (BenchmarkWakeUpLateness: sleeps of 50 µs, 300 µs and 1.7 ms
// on a Go timer were 1.24, 0.91 and 0.74 ms late at the 99th percentile,
// 300 of each). With a lead of one millisecond, the first job of bench/'s
// burst workload (a million deadlines at one instant) started 0.90, 1.17
// and 0.22 ms late, in child runs (`-child-impl lazycancel -child-workload
// burst`) on the 2-core VM of the benchmarks: a timer that fires after the
// deadline leaves nothing to nap. With two, the same runs gave 0.37, 0.60
// and 0.23 ms. A nap ends after at most napMax even when the deadline is
// further; between naps the owner yields its processor and looks at its
// inbox.
//
// A goroutine in a system call keeps its processor until another processor
// steals the goroutines queued on it or the runtime's monitor takes it
// back. A run the owner started just before a nap thus starts on the other
// processor, once that processor's thread takes it, rather than at once.
// The owner does not yield to that run before it naps. It used to, which
// started the run at once on the owner's processor. But in
// bench/'s fire workload, run as the child process of bench-x (`-child-impl
// lazycancel -child-workload fire`) by builds with and without the yield in
// turn, the yield cost 1.1 to 1.5 times the CPU per fired job (median 1.3)
// in each of 17 pairs, most likely for the thread the runtime wakes to take
// the new run, which then found nothing to take; and it did not lower the
// p99 lateness consistently: the median p99 of three sets of five or six
// pairs was 0.7 and 0.3 ms lower with it, and 0.4 ms higher. With GOMAXPROCS
// 1, other goroutines may likewise wait for the monitor, at most for the
// rest of the nap. A napping owner cannot be woken: a request that cannot
// wait (inbox.go) waits for the end of the nap, at most napMax, which is
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
	napMax    = time.Millisecond
	timerLead = 2 * napMax
	napGap    = 750 * time.Microsecond
)

// napUntil reports whether the owner, whose earliest wake-up is next, has
// come to the last stretch before it, and if so when its naps end. Only
// the owner calls it.
func (s *Scheduler) napUntil(next, now int64) (until int64, ok bool) {
	if !s.naps || next >= never || next-now > int64(timerLead) {
		return 0, false
	}
	return max(next, s.handedAt+int64(napGap)), true
}

// nap sleeps the owner until when, or for napMax if when is further,
// unless requests wait in the inbox. It reports whether when has come.
// Only the owner calls it.
func (s *Scheduler) nap(when int64) bool {
	now := s.now()
	end := min(when, now+int64(napMax))
	s.sleepUntil.Store(end)
	if s.inboxWaiting() || s.movedEarlier.Load() < end {
		s.sleepUntil.Store(0)
		return false
	}
	if d := end - now; d > 0 {
		kernelSleep(time.Duration(d))
	}
	s.sleepUntil.Store(0)
	if end < when {
		// More naps to come: let the goroutines queued on this processor
		// run first, so that none waits longer than one nap for it.
		runtime.Gosched()
		return false
	}
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
