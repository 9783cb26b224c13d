package schedule

import (
	"errors"
	"log/slog"
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
	logger      *slog.Logger
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
// own. p must be non-blocking (built with ants.WithNonblocking(true)), so
// that the scheduler never waits inside ants; New returns ErrBlockingPool
// otherwise. The Scheduler occupies at most New's workers of p's workers at
// once and never releases p; WithPoolOptions are ignored.
//
// When p is full, or busy with work of others, due jobs wait in the
// scheduler's queue, in deadline order, and the scheduler tries again after
// a short back-off (50 µs, doubling up to 5 ms) and whenever one of its own
// jobs ends; shutting down never waits for p. If p is released while the
// Scheduler runs, due jobs that have not started are dropped and counted in
// Stats.Dropped.
func WithPool(p *ants.Pool) Option {
	return func(cfg *config) error {
		if p == nil {
			return errors.New("schedule: WithPool(nil)")
		}
		if nb, known := nonblocking(p); known && !nb {
			return ErrBlockingPool
		}
		cfg.pool = p
		return nil
	}
}

// WithPoolOptions passes options to the ants pool that New creates, for
// example ants.WithPreAlloc. New's pool keeps idle workers instead of
// purging them, and ants.WithDisablePurge(false) here turns purging back
// on; it is always non-blocking, whatever the options say (see WithPool).
// The pool's panic handler never sees a job's panic, only a panic of the
// handler set by WithPanicHandler.
func WithPoolOptions(opts ...ants.Option) Option {
	return func(cfg *config) error {
		cfg.poolOptions = append(cfg.poolOptions, opts...)
		return nil
	}
}

// WithPanicHandler sets the function called, on the worker, with the ID of
// a task whose job panicked and the value it panicked with. Without a
// handler the panic is logged (see WithLogger). Either way the scheduler and
// its pool carry on, and a repeating task keeps repeating.
func WithPanicHandler(h func(id TaskID, recovered any)) Option {
	return func(cfg *config) error {
		cfg.onPanic = h
		return nil
	}
}

// WithLogger sets the logger for what the scheduler reports on its own: a
// panicking job when no panic handler is set, logged at level Error with
// the attributes "task" and "panic". The default is slog.Default(), which
// writes through the standard log package unless the program changed it.
// A nil logger is rejected.
func WithLogger(l *slog.Logger) Option {
	return func(cfg *config) error {
		if l == nil {
			return errors.New("schedule: WithLogger(nil)")
		}
		cfg.logger = l
		return nil
	}
}
