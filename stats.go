package schedule

import "time"

// Stats is a snapshot of a Scheduler's counters. The fields are read one by
// one while the scheduler runs, so they need not agree with each other
// exactly; once the scheduler is idle they do.
type Stats struct {
	// Pending is the number of pending tasks, as returned by Len.
	Pending int
	// HeapEntries is the number of entries in the deadline heap: one per
	// pending task, plus the tombstones.
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
	// MaxLateness is the largest delay seen between a job's deadline and
	// the moment a worker started it.
	MaxLateness time.Duration
}

// Stats returns a snapshot of the scheduler's counters.
func (s *Scheduler) Stats() Stats {
	waiting, running := s.runs.counts()
	return Stats{
		Pending:     s.Len(),
		HeapEntries: int(s.heapLen.Load()),
		Tombstones:  int(max(s.dead.Load(), 0)),
		Scheduled:   s.scheduled.Load(),
		Fired:       s.fired.Load(),
		Cancelled:   s.cancelled.Load(),
		Dropped:     s.dropped.Load(),
		Skipped:     s.skipped.Load(),
		Panics:      s.panics.Load(),
		Waiting:     waiting,
		Running:     running,
		MaxLateness: time.Duration(s.maxLateness.Load()),
	}
}
