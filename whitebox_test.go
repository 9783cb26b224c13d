package schedule

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// Helpers of the white-box tests, which drive the owner's steps by hand on
// the test goroutine, with no owner goroutine and no pool (bare), or look
// inside a running scheduler. They cannot use internal/schedtest, which
// imports this package, so they select a strategy with WithCancelStrategy.

// cancelStrategies lists the two cancel strategies.
var cancelStrategies = []CancelStrategy{LazyCancel, EagerCancel}

// eachCancelStrategy runs f once per cancel strategy, each time in a
// subtest named after it.
func eachCancelStrategy(t *testing.T, f func(t *testing.T, strategy CancelStrategy)) {
	t.Helper()
	for _, strategy := range cancelStrategies {
		t.Run(strategy.String(), func(t *testing.T) { f(t, strategy) })
	}
}

// bare returns a Scheduler with its state set up but no goroutines and no
// pool: the test plays the owner, and no run ever starts.
func bare(strategy CancelStrategy) *Scheduler {
	return assemble(config{strategy: strategy}, nil, 0)
}

// allocSlot allocates a slot, as an add would.
func (s *Scheduler) allocSlot() (uint32, *task, bool) {
	slot, t, _, ok := s.slab.alloc()
	return slot, t, ok
}

// step runs one round of the owner's work at the given time.
func (s *Scheduler) step(now int64) {
	s.owner.dueCount = 0
	s.owner.work(now)
}

func nop() {}

// A start exactly as late as a bucket's bound counts in that bucket, and
// one a nanosecond later in the next; every start adds to the sum.
func TestLatenessBucketsIncludeTheirBound(t *testing.T) {
	for i, b := range latenessBounds {
		var c outcomes
		c.started(int64(b))
		c.started(int64(b) + 1)
		assert.Equal(t, uint64(1), c.lateness[i].Load(), "bound %v", b)
		assert.Equal(t, uint64(1), c.lateness[i+1].Load(), "bound %v + 1 ns", b)
		assert.Equal(t, int64(2*b+1), c.lateSum.Load())
	}
}

// Counting a start allocates nothing: it is on the path of every job.
func TestCountingAStartAllocatesNothing(t *testing.T) {
	var c outcomes
	late := int64(0)
	allocs := testing.AllocsPerRun(1000, func() {
		c.started(late)
		late += int64(time.Millisecond)
	})
	assert.Zero(t, allocs)
}
