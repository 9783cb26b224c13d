package schedule

import "time"

// clock gives deadlines as nanoseconds since the scheduler's epoch, on the
// monotonic clock: the unit of a task word's deadline, and of never
// (task.go). The owner, the runs and the callers all read it; it holds no
// state but its epoch, set once, when the Scheduler is made.
type clock struct{ epoch time.Time }

func (c clock) now() int64 { return int64(time.Since(c.epoch)) }

// deadline converts a delay from now into a deadline, clamped to
// [now, never].
func (c clock) deadline(delay time.Duration) int64 {
	now := c.now()
	if delay <= 0 {
		return now
	}
	if int64(delay) > never-now {
		return never
	}
	return now + int64(delay)
}
