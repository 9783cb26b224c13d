// Package lazycancel builds a schedule.Scheduler whose CancelTask leaves the
// cancelled task's heap entry behind as a tombstone.
//
// Cancelling costs one compare-and-swap and never waits for, or wakes, the
// scheduler's owner goroutine. The owner throws a tombstone away when it
// reaches the top of the deadline heap, and rebuilds the heap in O(n) once
// tombstones outnumber a quarter of the live tasks, so the heap holds at most
// about 1.25 entries per live task. Choose it when tasks are cancelled
// often, for example when every heartbeat cancels a timeout and schedules a
// new one.
package lazycancel

import "github.com/go-schedule/schedule"

// New returns a running lazy-cancel Scheduler with at most workers jobs
// running at once. It is schedule.New with schedule.LazyCancel; see there
// for the options and errors.
func New(workers int, opts ...schedule.Option) (*schedule.Scheduler, error) {
	// The full slice expression makes append copy: the caller's slice is
	// never written, even when it has spare capacity.
	return schedule.New(workers, append(opts[:len(opts):len(opts)], schedule.WithCancelStrategy(schedule.LazyCancel))...)
}
