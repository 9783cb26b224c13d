package schedule

import "time"

// Stats is a snapshot of a Scheduler's counters.
//
// The counters are read one by one while the scheduler runs, in an order
// that keeps the snapshot consistent where it matters for metrics: every
// job counted in Fired, Cancelled, Dropped or Panics was scheduled before
// Scheduled was read, so Scheduled >= Pending + Cancelled + Dropped holds in
// every snapshot, and Fired >= Panics. Each counter only ever grows, except
// Pending, HeapEntries, Tombstones, Waiting and Running, which are gauges.
// Once the scheduler is idle, all fields agree exactly.
type Stats struct {
	// Pending is the number of pending tasks, as returned by Len.
	Pending int
	// HeapEntries is the number of entries in the deadline heap: one per
	// pending task, plus the tombstones. It counts only requests the owner
	// goroutine has applied; the owner may leave requests for deadlines
	// later than its next wake-up until then, and Stats wakes it to apply
	// them, so that a later snapshot catches up.
	HeapEntries int
	// Tombstones is the number of dead entries the heap holds, left by lazy
	// cancel and by moving deadlines earlier. Always 0 with EagerCancel.
	Tombstones int
	// Scheduled is the number of tasks ever scheduled.
	Scheduled uint64
	// Fired is the number of job runs started.
	Fired uint64
	// Cancelled is the number of successful CancelTask calls.
	Cancelled uint64
	// Dropped is the number of jobs that will never run although nobody
	// cancelled them: tasks still pending at Shutdown (one each, repeating
	// or not), due jobs that had not started when Shutdown came, and due
	// jobs that found the pool given by WithPool released.
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
	// Wakeups is the number of times the owner goroutine woke up: for a
	// deadline that came due, for a request that could not wait (see
	// ScheduleOne, CancelTask and Reset), for upkeep (giving memory back,
	// rebuilding a lazy heap), to retry runs the pool refused, and at most
	// ten times a second to fix the deadlines that Reset postponed. Stats
	// itself wakes the owner when requests wait (see HeapEntries).
	Wakeups uint64
	// MaxLateness is the largest delay seen between a job's deadline and
	// the moment a worker started it, over the scheduler's life. For the
	// largest delay per interval, see TakeMaxLateness.
	MaxLateness time.Duration
	// Lateness counts job starts by lateness: Lateness[i] counts the starts
	// at most LatenessBounds()[i] late (and more than LatenessBounds()[i-1]),
	// and the last element those later than every bound. The counts suit a
	// Prometheus histogram once summed cumulatively.
	Lateness [LatenessBuckets]uint64
}

// Stats returns a snapshot of the scheduler's counters.
func (s *Scheduler) Stats() Stats {
	var st Stats
	// Outcomes first, then what they came from (see Stats).
	st.Panics = s.out.panics.Load()
	for i := range st.Lateness {
		st.Lateness[i] = s.out.lateness[i].Load()
	}
	st.Fired = s.out.fired.Load()
	st.Skipped = s.out.skipped.Load()
	st.Dropped = s.out.dropped.Load()
	st.Cancelled = s.counts.cancelled()
	st.Pending = s.Len()
	st.Scheduled = s.counts.scheduled()
	st.HeapEntries = int(s.owner.heapLen.Load())
	st.Tombstones = int(s.cancel.tombstones())
	st.Waiting, st.Running = s.runs.q.counts()
	st.Wakeups = s.owner.wakeups.Load()
	st.MaxLateness = time.Duration(s.out.maxLateness.Load())
	if s.inbox.waiting() {
		// HeapEntries lags requests the owner has not applied yet, which
		// may wait for its next timer (inbox.go): have it apply them now.
		s.inbox.wakeOwner()
	}
	return st
}

// TakeMaxLateness returns the largest delay between a job's deadline and
// its start seen since the previous call (or since New), and starts a new
// interval. A metrics exporter calls it once per scrape to report lateness
// per interval rather than over the scheduler's whole life. It returns 0
// when no job started in the interval.
func (s *Scheduler) TakeMaxLateness() time.Duration {
	return time.Duration(s.out.recent.Swap(0))
}
