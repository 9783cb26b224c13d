// Package eagercancel builds a [schedule.Scheduler] whose
// [schedule.Scheduler.CancelTask] removes the cancelled task's entry from
// the deadline heap at once.
//
// The heap keeps every entry's position, so the scheduler's goroutine
// removes a cancelled entry in O(log n), and the heap holds exactly the
// live tasks: it has no tombstones, and [schedule.Stats].Tombstones stays
// 0. Each cancel that stops a task sends the scheduler a request, and may
// wait, as [schedule.Scheduler.ScheduleOne] may, while requests back up.
// The heap is still rebuilt in O(n), at most once a second, to fix in one
// pass the deadlines that [schedule.Scheduler.Reset] moved earlier to a
// second or more from now. Choose it when memory must track the number of
// live tasks closely.
package eagercancel

import "github.com/go-schedule/schedule"

// New returns a running eager-cancel Scheduler with at most workers jobs
// running at once. It is [schedule.New] with [schedule.EagerCancel]; see
// there for the options and errors.
func New(workers int, opts ...schedule.Option) (*schedule.Scheduler, error) {
	// The full slice expression makes append copy: the caller's slice is
	// never written, even when it has spare capacity.
	return schedule.New(workers, append(opts[:len(opts):len(opts)], schedule.WithCancelStrategy(schedule.EagerCancel))...)
}
