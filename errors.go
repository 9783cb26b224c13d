package schedule

import "errors"

var (
	// ErrShutdown is returned by the Schedule methods of [Scheduler] once
	// [Scheduler.Shutdown] or [Scheduler.ShutdownContext] has been called.
	ErrShutdown = errors.New("schedule: scheduler is shut down")

	// ErrNilJob is returned by the Schedule methods of [Scheduler] for a
	// nil job.
	ErrNilJob = errors.New("schedule: nil job")

	// ErrInvalidInterval is returned by [Scheduler.Schedule] and
	// [Scheduler.ScheduleWith] when the interval is zero or negative: a
	// repeating task needs a positive period.
	ErrInvalidInterval = errors.New("schedule: interval must be positive")

	// ErrInvalidWorkers is returned by [New] when workers is zero or
	// negative, or so large that the pool's size would overflow an int.
	ErrInvalidWorkers = errors.New("schedule: workers must be positive")

	// ErrTooManyTasks is returned by the Schedule methods of [Scheduler]
	// when the scheduler already holds as many tasks as its IDs can name:
	// 2^32, a limit memory reaches first (a task takes at least 24 bytes).
	ErrTooManyTasks = errors.New("schedule: too many tasks")

	// ErrBlockingPool is returned by [New] when the pool given to [WithPool]
	// blocks its callers while every worker is busy (build it with
	// ants.WithNonblocking(true)). When New cannot tell whether it does, it
	// returns an error that wraps ErrBlockingPool (test with [errors.Is]):
	// a pool New cannot vouch for is refused rather than risked.
	ErrBlockingPool = errors.New("schedule: WithPool needs a non-blocking pool (ants.WithNonblocking(true))")

	// ErrNilPool is returned by [New] for [WithPool](nil).
	ErrNilPool = errors.New("schedule: WithPool(nil)")

	// ErrNilLogger is returned by [New] for [WithLogger](nil).
	ErrNilLogger = errors.New("schedule: WithLogger(nil)")

	// ErrUnknownStrategy is returned by [New] when [WithCancelStrategy] is
	// given neither [LazyCancel] nor [EagerCancel].
	ErrUnknownStrategy = errors.New("schedule: unknown cancel strategy")
)
