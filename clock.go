package schedule

import "time"

// clock gives deadlines as nanoseconds since the scheduler's epoch, on the
// monotonic clock.
type clock struct{ epoch time.Time }

func (c clock) now() int64 { return int64(time.Since(c.epoch)) }

// cacheLinePad keeps the fields after it off the cache line of those
// before it.
type cacheLinePad [64]byte
