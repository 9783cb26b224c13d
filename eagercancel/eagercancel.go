// Package eagercancel builds a schedule.Scheduler whose CancelTask removes
// the cancelled task's entry from the deadline heap at once.
//
// Every heap entry's position is tracked in its task, so the owner goroutine
// removes a cancelled entry in O(log n), and the heap holds exactly the live
// tasks: no tombstones, no rebuilds. Choose it when memory must track the
// number of live tasks closely, or when a pause to rebuild a large heap is
// unwelcome.
package eagercancel

import "github.com/go-schedule/schedule"

// New returns a running eager-cancel Scheduler with at most workers jobs
// running at once. It is schedule.New with schedule.EagerCancel; see there
// for the options and errors.
func New(workers int, opts ...schedule.Option) (*schedule.Scheduler, error) {
	// The full slice expression makes append copy: the caller's slice is
	// never written, even when it has spare capacity.
	return schedule.New(workers, append(opts[:len(opts):len(opts)], schedule.WithCancelStrategy(schedule.EagerCancel))...)
}
