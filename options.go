package schedule

import (
	"fmt"
	"log/slog"

	"github.com/panjf2000/ants/v2"
)

// Option configures a [Scheduler] at construction; see [New]. An option
// given a bad argument makes New return an error.
type Option func(*config)

// config collects what the options say. It is read-only once New returns.
type config struct {
	strategy    CancelStrategy
	pool        *ants.Pool
	poolOptions []ants.Option
	onPanic     func(TaskID, any)
	logger      *slog.Logger
	err         error // the first bad argument an option was given
}

// reject records that an option was given a bad argument; New returns the
// first such error.
func (c *config) reject(err error) {
	if c.err == nil {
		c.err = err
	}
}

// WithCancelStrategy selects the cancel strategy. The default is
// [LazyCancel]; the packages [github.com/go-schedule/schedule/lazycancel]
// and [github.com/go-schedule/schedule/eagercancel] set it for you. Any
// other value makes [New] return [ErrUnknownStrategy].
func WithCancelStrategy(c CancelStrategy) Option {
	return func(cfg *config) {
		if c != LazyCancel && c != EagerCancel {
			cfg.reject(ErrUnknownStrategy)
			return
		}
		cfg.strategy = c
	}
}

// WithPool makes the Scheduler run its jobs on p instead of on a pool of its
// own. p must be non-blocking (built with [ants.WithNonblocking](true)), so
// that the scheduler never waits inside ants; New returns [ErrBlockingPool]
// otherwise, an error wrapping it when it cannot tell whether p blocks, and
// [ErrNilPool] for a nil p. The Scheduler occupies at most [New]'s workers of p's workers at
// once and never releases p; [WithPoolOptions] are ignored.
//
// When p is full, or busy with work of others, due jobs wait in the
// scheduler's queue, in deadline order, and the scheduler tries again after
// a short back-off, which grows while p keeps refusing, and whenever one of
// its own jobs ends; shutting down never waits for p. If p is released
// while the Scheduler runs, due jobs that have not started are dropped and
// counted in [Stats].Dropped.
func WithPool(p *ants.Pool) Option {
	return func(cfg *config) {
		if p == nil {
			cfg.reject(ErrNilPool)
			return
		}
		switch nb, known := nonblocking(p); {
		case !known:
			// Fail closed: a pool whose mode cannot be read may block, and
			// a blocking Submit would stall every job of the scheduler.
			cfg.reject(fmt.Errorf("%w: cannot read whether this pool blocks (an ants release newer than go-schedule knows?); use New's own pool", ErrBlockingPool))
			return
		case !nb:
			cfg.reject(ErrBlockingPool)
			return
		}
		cfg.pool = p
	}
}

// WithPoolOptions passes options to the ants pool that [New] creates, for
// example [ants.WithPreAlloc]. New's pool keeps idle workers instead of
// purging them, and [ants.WithDisablePurge](false) here turns purging back
// on; it is always non-blocking, whatever the options say (see [WithPool]).
// The pool's panic handler never sees a job's panic, only a panic of the
// handler set by [WithPanicHandler].
func WithPoolOptions(opts ...ants.Option) Option {
	return func(cfg *config) { cfg.poolOptions = append(cfg.poolOptions, opts...) }
}

// WithPanicHandler sets the function called, on the worker, with the ID of
// a task whose job panicked and the value it panicked with. Without a
// handler the panic is logged (see [WithLogger]). Either way the scheduler and
// its pool carry on, and a repeating task keeps repeating. The handler runs
// before the run ends: a repeating task's next run does not start until it
// returns (deadlines that pass meanwhile are skipped), so a handler that
// cancels the task stops it.
func WithPanicHandler(h func(id TaskID, recovered any)) Option {
	return func(cfg *config) { cfg.onPanic = h }
}

// WithLogger sets the logger for what the scheduler reports on its own: a
// panicking job when no panic handler is set, logged at level Error with
// the attributes "task" and "panic". The default is [slog.Default](), as it
// is when the job panics. A nil logger makes New return [ErrNilLogger].
func WithLogger(l *slog.Logger) Option {
	return func(cfg *config) {
		if l == nil {
			cfg.reject(ErrNilLogger)
			return
		}
		cfg.logger = l
	}
}
