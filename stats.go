package schedule

import "time"

// Stats is a snapshot of a Scheduler's counters.
//
// The counters are read one by one while the scheduler runs, in an order
// that keeps the snapshot consistent where it matters for metrics: every
// task counted in Started, Cancelled, Dropped or Panics was scheduled before
// Scheduled was read, so Scheduled >= Pending + Cancelled holds in every
// snapshot, and Started >= Panics. Scheduled >= Pending + Cancelled +
// Dropped holds too, unless a run of a repeating task was dropped: Dropped
// counts every such run (see Dropped), while the task counts once in
// Scheduled. Each counter only ever grows, except
// Pending, HeapEntries, Tombstones, Waiting and Running, which are gauges.
// Once the scheduler is idle, all fields agree exactly.
type Stats struct {
	// Pending is the number of pending tasks, as returned by
	// [Scheduler.Len].
	Pending int
	// HeapEntries is the number of entries in the deadline heap: one per
	// pending task, plus the tombstones. It lags the calls the scheduler
	// has not yet acted on: it may leave the requests of calls about
	// deadlines later than its next wake-up until then. [Scheduler.Stats]
	// has it act on them, so that a later snapshot catches up.
	HeapEntries int
	// Tombstones is the number of heap entries that no longer stand for a
	// pending task, left by lazy cancel and by moving deadlines earlier.
	// Always 0 with [EagerCancel].
	Tombstones int
	// Scheduled is the number of tasks ever scheduled.
	Scheduled uint64
	// Started is the number of job runs started.
	Started uint64
	// Cancelled is the number of successful [Scheduler.CancelTask] calls.
	Cancelled uint64
	// Dropped is the number of jobs that will never run although nobody
	// cancelled them: tasks still pending at [Scheduler.Shutdown] (one each,
	// repeating or not), due jobs that had not started when Shutdown came,
	// and due jobs that found the pool given by [WithPool] released. A due
	// job of a repeating task is one run: a repeating task whose runs find
	// the pool released counts once per run, and is still pending.
	Dropped uint64
	// Skipped is the number of runs of repeating tasks that were skipped
	// because the previous run was still going or because the scheduler
	// could not keep up.
	Skipped uint64
	// Panics is the number of job runs that panicked.
	Panics uint64
	// Waiting is the number of due jobs waiting for a free worker.
	Waiting int
	// Running is the number of workers the scheduler occupies: each runs
	// one job at a time, or is about to take the next due one.
	Running int
	// Wakeups is the number of times the scheduler's goroutine woke up: for
	// a deadline that came due, for a request that could not wait (see
	// [Scheduler.ScheduleOne], [Scheduler.CancelTask] and
	// [Scheduler.Reset]), for upkeep (trimming memory, rebuilding a lazy
	// heap, discarding a tombstone at its old deadline), to retry runs the
	// pool refused, and a bounded number of times a second to fix the
	// deadlines that Reset postponed. [Scheduler.Stats] itself wakes it when
	// requests wait (see HeapEntries).
	Wakeups uint64
	// MaxLateness is the largest delay seen between a job's deadline and
	// the moment a worker started it, over the scheduler's life.
	MaxLateness time.Duration
	// Lateness counts job starts by lateness: Lateness[i] counts the starts
	// at most [LatenessBounds]()[i] late (and more than LatenessBounds()[i-1]),
	// and the last element those later than every bound. Its elements add
	// up to the starts counted; Started, read after them, is at least that.
	// With LatenessSum, and summed cumulatively, they make a Prometheus
	// histogram.
	Lateness [LatenessBuckets]uint64
	// LatenessSum is the total lateness of the starts counted in Lateness
	// (read after it, so it may include a few starts more). Like
	// [database/sql.DBStats].WaitDuration it is a count of nanoseconds in an int64: it
	// wraps around once 2^63 ns (292 years) of lateness are summed. That is
	// 292 years at a thousand starts a second, each a millisecond late, but
	// about a day at a hundred thousand a second, each a second late;
	// Prometheus reads a wrap as a counter reset.
	LatenessSum time.Duration
}

// LatenessBuckets is the number of buckets of [Stats].Lateness: one per
// bound of [LatenessBounds], and one for the starts later than every bound.
const LatenessBuckets = 17

// The bounds must fill the buckets but the last: either array length below
// is negative, which does not compile, if they do not.
var (
	_ [LatenessBuckets - 1 - len(latenessBounds)]struct{}
	_ [len(latenessBounds) - (LatenessBuckets - 1)]struct{}
)

// latenessBounds are the bucket bounds: 1, 2.5 and 5 per decade, from
// 100 µs, below which a Go timer cannot tell lateness apart (it wakes in
// whole milliseconds on an idle Linux host), to 10 s, beyond which a job
// start is simply late. Three bounds a decade let histogram_quantile place
// a percentile within a factor of 2.5 around the millisecond, where most
// starts fall.
var latenessBounds = [...]time.Duration{
	100 * time.Microsecond, 250 * time.Microsecond, 500 * time.Microsecond,
	time.Millisecond, 2500 * time.Microsecond, 5 * time.Millisecond,
	10 * time.Millisecond, 25 * time.Millisecond, 50 * time.Millisecond,
	100 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond,
	time.Second, 2500 * time.Millisecond, 5 * time.Second,
	10 * time.Second,
}

// LatenessBounds returns the upper bounds of the buckets of [Stats].Lateness,
// in increasing order: 1, 2.5 and 5 times each power of ten from 100 µs to
// 10 s (100 µs, 250 µs, 500 µs, 1 ms, ... 5 s, 10 s). The last bucket has no
// bound.
func LatenessBounds() [LatenessBuckets - 1]time.Duration { return latenessBounds }

// Stats returns a snapshot of the scheduler's counters. It resets nothing
// and takes nothing away from the next caller, so any number of readers
// (two Prometheus servers scraping one process) each see every count. It
// changes one thing: when calls wait for the scheduler to act on them, it
// wakes the scheduler's goroutine to do so (see [Stats].HeapEntries), which
// counts in Wakeups of the next snapshot. Two calls with nothing happening
// in between (nothing scheduled, cancelled, reset or run, no call waiting
// for the scheduler to act on it, and the scheduler asleep) return equal
// snapshots.
func (s *Scheduler) Stats() Stats {
	var st Stats
	// Outcomes first, then what they came from (see Stats); a start adds
	// to starts, then to the lateness sum, then to its bucket.
	st.Panics = s.out.panics.Load()
	for i := range st.Lateness {
		st.Lateness[i] = s.out.lateness[i].Load()
	}
	st.LatenessSum = time.Duration(s.out.lateSum.Load())
	st.Started = s.out.starts.Load()
	st.Skipped = s.out.skipped.Load()
	st.Dropped = s.out.dropped.Load()
	st.Cancelled = s.cancel.cancels()
	st.Pending = s.Len()
	st.Scheduled = s.scheduled.sum()
	st.HeapEntries = int(s.owner.heapLen.Load())
	st.Tombstones = int(s.cancel.tombstones())
	st.Waiting, st.Running = s.runner.q.counts()
	st.Wakeups = s.owner.wakeups.Load()
	st.MaxLateness = time.Duration(s.out.maxLateness.Load())
	if s.inbox.waiting() {
		// HeapEntries lags requests the owner has not applied yet, which
		// may wait for its next timer (inbox.go): have it apply them now.
		s.inbox.wakeOwner()
	}
	return st
}
