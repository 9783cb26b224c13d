package schedule

import (
	"errors"
	"strconv"

	"github.com/panjf2000/ants/v2"
)

// Option configures a Scheduler at construction; see New.
type Option func(*config) error

// CancelStrategy selects what CancelTask does with the cancelled task's
// entry in the deadline heap. Both strategies give the same results to
// callers; they differ in cost and memory.
type CancelStrategy uint8

const (
	// LazyCancel leaves the entry behind as a tombstone: cancelling is O(1)
	// and never involves the owner goroutine. Tombstones are dropped when
	// they reach the top of the heap, and the heap is rebuilt in O(n) when
	// they exceed a quarter of it, so it holds at most 1.25 entries per live
	// task (plus those cancelled since the last rebuild was triggered).
	LazyCancel CancelStrategy = iota + 1

	// EagerCancel removes the entry from the heap at once, an O(log n) step
	// for the owner goroutine. The heap holds exactly the live tasks.
	EagerCancel
)

// String returns "lazy" or "eager".
func (c CancelStrategy) String() string {
	switch c {
	case LazyCancel:
		return "lazy"
	case EagerCancel:
		return "eager"
	}
	return "CancelStrategy(" + strconv.Itoa(int(c)) + ")"
}

// config collects what the options say. It is read-only once New returns.
type config struct {
	strategy    CancelStrategy
	pool        *ants.Pool
	poolOptions []ants.Option
	onPanic     func(TaskID, any)
}

// WithCancelStrategy selects the cancel strategy. The default is LazyCancel;
// the packages lazycancel and eagercancel set it for you.
func WithCancelStrategy(c CancelStrategy) Option {
	return func(cfg *config) error {
		if c != LazyCancel && c != EagerCancel {
			return errors.New("schedule: unknown cancel strategy " + c.String())
		}
		cfg.strategy = c
		return nil
	}
}

// WithPool makes the Scheduler run its jobs on p instead of on a pool of its
// own. The Scheduler never releases p; New's workers argument must still be
// positive but is otherwise ignored, as are WithPoolOptions.
//
// The Scheduler submits to p from a goroutine of its own, so a blocking pool
// (the ants default) makes due jobs wait for a worker without holding up
// scheduling. A non-blocking pool works too: when it reports overload the
// Scheduler retries after a short back-off. If p is released while the
// Scheduler runs, jobs that come due after that are dropped.
//
// Build p with ants.WithDisablePurge(true), as New does for its own pool:
// in ants v2.12.1 a worker exiting after its idle expiry can leave a blocked
// Submit asleep until the next purge, delaying due jobs by up to a purge
// period while a worker slot is free.
func WithPool(p *ants.Pool) Option {
	return func(cfg *config) error {
		if p == nil {
			return errors.New("schedule: WithPool(nil)")
		}
		cfg.pool = p
		return nil
	}
}

// WithPoolOptions passes options to the ants pool that New creates, for
// example ants.WithPreAlloc. New's pool keeps idle workers instead of
// purging them (see WithPool for why); ants.WithDisablePurge(false) here
// turns purging back on. The pool's panic handler never sees a job's panic;
// use WithPanicHandler for that.
func WithPoolOptions(opts ...ants.Option) Option {
	return func(cfg *config) error {
		cfg.poolOptions = append(cfg.poolOptions, opts...)
		return nil
	}
}

// WithPanicHandler sets the function called, on the worker, with the ID of
// a task whose job panicked and the value it panicked with. Without a
// handler the panic is logged with the standard log package. Either way the
// scheduler and its pool carry on, and a repeating task keeps repeating.
func WithPanicHandler(h func(id TaskID, recovered any)) Option {
	return func(cfg *config) error {
		cfg.onPanic = h
		return nil
	}
}
