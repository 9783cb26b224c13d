package schedule

import (
	"sync/atomic"
	"time"
)

// The counters behind Len and Stats, kept where they are written so that no
// cache line takes a write from every add and every cancel on every core.

// taskCounts counts adds and cancels in one shard per slab shard: an add
// counts in the shard it took its slot from, and a cancel in its task's
// shard, which for a caller that adds and cancels on one core is that
// core's shard. Readers sum the shards.
type taskCounts struct {
	shards [shardCount]struct {
		scheduled atomic.Uint64
		cancelled atomic.Uint64
		_         cacheLinePad
	}
}

func (c *taskCounts) scheduled() uint64 {
	var n uint64
	for i := range c.shards {
		n += c.shards[i].scheduled.Load()
	}
	return n
}

func (c *taskCounts) cancelled() uint64 {
	var n uint64
	for i := range c.shards {
		n += c.shards[i].cancelled.Load()
	}
	return n
}

// outcomes counts what became of jobs. Runs count the jobs they start
// (fired, lateness) and those that panicked or that they had to drop; the
// owner counts the runs it skipped and the tasks it dropped at Shutdown.
type outcomes struct {
	fired       atomic.Uint64
	panics      atomic.Uint64
	dropped     atomic.Uint64
	skipped     atomic.Uint64
	maxLateness atomic.Int64
	// recent is the largest lateness since TakeMaxLateness last swapped it
	// out; lateness counts starts by lateness bucket, and lateSum adds up
	// their lateness, in nanoseconds.
	recent   atomic.Int64
	lateSum  atomic.Int64
	lateness [LatenessBuckets]atomic.Uint64
}

// LatenessBuckets is the number of buckets of Stats.Lateness: one per
// bound of LatenessBounds, and one for the starts later than every bound.
const LatenessBuckets = len(latenessBounds) + 1

// latenessBounds are the bucket bounds: 1, 2.5 and 5 per decade, from
// 100 µs, below which a Go timer cannot tell lateness apart (it wakes in
// whole milliseconds on an idle Linux host), to 10 s, beyond which a job
// start is simply late. Three bounds a decade let histogram_quantile place
// a percentile within a factor of 2.5 around the millisecond, where most
// starts fall.
var latenessBounds = [...]time.Duration{
	100 * time.Microsecond, 250 * time.Microsecond, 500 * time.Microsecond,
	time.Millisecond, 2500 * time.Microsecond, 5 * time.Millisecond,
	10 * time.Millisecond, 25 * time.Millisecond, 50 * time.Millisecond,
	100 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond,
	time.Second, 2500 * time.Millisecond, 5 * time.Second,
	10 * time.Second,
}

// LatenessBounds returns the upper bounds of the buckets of Stats.Lateness,
// in increasing order: 1, 2.5 and 5 times each power of ten from 100 µs to
// 10 s (100 µs, 250 µs, 500 µs, 1 ms, ... 5 s, 10 s). The last bucket has no
// bound.
func LatenessBounds() [LatenessBuckets - 1]time.Duration { return latenessBounds }

// started counts a job that started late nanoseconds after its deadline.
// It allocates nothing: a few atomic adds, and a scan of the bounds that
// stops at the first one above late, so on-time starts cost the least.
func (c *outcomes) started(late int64) {
	c.fired.Add(1)
	raiseTo(&c.maxLateness, late)
	raiseTo(&c.recent, late)
	c.lateSum.Add(late)
	i := 0
	for i < len(latenessBounds) && late > int64(latenessBounds[i]) {
		i++
	}
	c.lateness[i].Add(1)
}

func raiseTo(v *atomic.Int64, x int64) {
	for {
		cur := v.Load()
		if x <= cur || v.CompareAndSwap(cur, x) {
			return
		}
	}
}
