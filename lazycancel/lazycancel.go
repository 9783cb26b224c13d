// Package lazycancel builds a [schedule.Scheduler] whose
// [schedule.Scheduler.CancelTask] leaves the cancelled task's heap entry
// behind as a tombstone.
//
// Cancelling is O(1): it never waits for the scheduler and sends it no
// request.
// It wakes the scheduler's goroutine only when tombstones near their bound,
// so that the heap is rebuilt in time. Tombstones are discarded when they
// reach the top of the deadline heap, and the heap is rebuilt in O(n) once
// they outnumber a quarter of the live tasks, so it holds at most about
// 1.25 entries per live task ([schedule.Stats].Tombstones counts them).
// Choose it when tasks are cancelled often, for example when every
// heartbeat cancels a timeout and schedules a new one.
package lazycancel

import "github.com/go-schedule/schedule"

// New returns a running lazy-cancel Scheduler with at most workers jobs
// running at once. It is [schedule.New] with [schedule.LazyCancel]; see
// there for the options and errors.
func New(workers int, opts ...schedule.Option) (*schedule.Scheduler, error) {
	// The full slice expression makes append copy: the caller's slice is
	// never written, even when it has spare capacity.
	return schedule.New(workers, append(opts[:len(opts):len(opts)], schedule.WithCancelStrategy(schedule.LazyCancel))...)
}
