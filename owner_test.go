package schedule

import (
	"math"
	"slices"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// White-box tests of the owner goroutine (owner.go): when it hands tasks
// over, when it wakes, and what it keeps.

// TestTimerWakeHandsOverDueTasksBeforeApplyingWaitingRequests checks the
// owner's first step after its timer fires: due tasks that no waiting
// request can precede go to the run queue before the inbox is drained, and
// deadline order holds across both steps.
func TestTimerWakeHandsOverDueTasksBeforeApplyingWaitingRequests(t *testing.T) {
	eachCancelStrategy(t, func(t *testing.T, strategy CancelStrategy) {
		s := bare(strategy)
		ids := map[string]TaskID{}
		add := func(name string, d time.Duration) {
			id, err := s.ScheduleOne(nop, d)
			require.NoError(t, err)
			ids[name] = id
		}
		add("a", 1*time.Hour)
		add("b", 2*time.Hour)
		add("c", 3*time.Hour)
		s.step(0)
		add("d", 150*time.Minute) // waits in the inbox
		require.True(t, s.inbox.waiting())

		s.owner.collectDueAhead(int64(4 * time.Hour))
		s.owner.handOver()
		assert.True(t, s.inbox.waiting(), "the waiting add was applied first")
		s.step(int64(4 * time.Hour))

		var got []string
		for _, d := range s.runner.q.items[s.runner.q.head:] {
			for name, id := range ids {
				if s.slab.id(d.slot, s.slab.at(d.slot).gen.Load()) == id {
					got = append(got, name)
				}
			}
		}
		assert.Equal(t, []string{"a", "b", "d", "c"}, got)
	})
}

func TestNextRunKeepsThePhaseAndCountsMissedDeadlines(t *testing.T) {
	cases := []struct {
		name               string
		when, interval     int64
		now                int64
		wantNext, wantMiss int64
	}{
		{"on time", 100, 10, 100, 110, 0},
		{"a little late", 100, 10, 105, 110, 0},
		{"exactly one interval late", 100, 10, 110, 120, 1},
		{"three missed", 100, 10, 135, 140, 3},
		{"overflow clamps to never", never - 5, 10, never - 5, never, 0},
		{"huge interval", 0, math.MaxInt64, 0, never, 0},
	}
	for _, c := range cases {
		next, missed := nextRun(c.when, c.interval, c.now)
		assert.Equal(t, c.wantNext, next, c.name)
		assert.Equal(t, c.wantMiss, missed, c.name)
	}
}

func TestDeadlineClampsToNowAndNever(t *testing.T) {
	s := bare(LazyCancel)
	before := s.now()
	assert.GreaterOrEqual(t, s.deadline(-time.Hour), before)
	assert.LessOrEqual(t, s.deadline(0), s.now())
	assert.Equal(t, never, s.deadline(math.MaxInt64))
	assert.Equal(t, never, s.deadline(time.Duration(never)))
}

func TestNeverDueTaskIsNotDispatchedEvenPastTheHorizon(t *testing.T) {
	s := bare(LazyCancel)
	_, err := s.ScheduleOne(func() {}, math.MaxInt64)
	require.NoError(t, err)
	s.step(math.MaxInt64) // a clock beyond the representable horizon
	assert.Empty(t, s.runner.q.items)
	assert.Equal(t, 1, s.Len())
}

// TestOwnerForgetsTheIntervalsOfCancelledTasks checks that the intervals of
// repeating tasks, kept by the owner, go with the tasks.
func TestOwnerForgetsTheIntervalsOfCancelledTasks(t *testing.T) {
	eachCancelStrategy(t, func(t *testing.T, strategy CancelStrategy) {
		s := bare(strategy)
		var ids []TaskID
		for i := range 3 {
			id, err := s.Schedule(nop, time.Duration(i+1)*time.Hour)
			require.NoError(t, err)
			ids = append(ids, id)
		}
		_, err := s.ScheduleOne(nop, time.Hour)
		require.NoError(t, err)
		s.step(0)
		require.Len(t, s.owner.intervals, 3)
		assert.Equal(t, int64(2*time.Hour), s.owner.intervals[s.slab.slotOf(ids[1])])

		require.True(t, s.CancelTask(ids[1]))
		s.step(int64(4 * time.Hour)) // lazy: dropped as it reaches the top
		assert.Len(t, s.owner.intervals, 2)
		for _, id := range ids {
			s.CancelTask(id)
		}
		s.step(int64(24 * time.Hour))
		assert.Nil(t, s.owner.intervals)
	})
}

func TestOwnerShrinksItsHeapOnlyWhenNoDeadlineIsNear(t *testing.T) {
	s := bare(LazyCancel)
	const n, gap = 100_000, int64(10 * time.Microsecond)
	start := s.now()
	for i := range n {
		// A stream of deadlines 10 µs apart, and one an hour out.
		d := time.Duration(int64(i) * gap)
		if i == n-1 {
			d = time.Hour
		}
		_, err := s.ScheduleOne(func() {}, d)
		require.NoError(t, err)
		if i%4096 == 0 {
			s.step(start)
		}
	}
	s.step(start)
	full := cap(s.owner.heap.items)
	require.GreaterOrEqual(t, full, n)

	whens := make([]int64, 0, n)
	for _, e := range s.owner.heap.items {
		whens = append(whens, e.when)
	}
	slices.Sort(whens)

	// The owner hands over all but the last 10,000 of the stream, leaving
	// less than a quarter of the heap; the next deadline is 10 µs away, so
	// it keeps the heap's size.
	s.step(whens[n-10_001])
	require.Equal(t, 10_000, s.owner.heap.len())
	require.Less(t, s.owner.heap.len(), full/4)
	assert.Equal(t, full, cap(s.owner.heap.items), "shrank while deadlines were due any moment")

	// Past the stream, the next deadline is an hour away: it shrinks.
	s.step(whens[n-2])
	require.Equal(t, 1, s.owner.heap.len())
	assert.Less(t, cap(s.owner.heap.items), full/4)
}

// TestPostponedDeadlinesDoNotWakeTheOwner runs heartbeats only: 1,000 keys,
// each reset every 2 s with a 3 s timeout, for one minute of fake time, so
// that no deadline ever comes due. Every Reset postpones a deadline the heap
// still holds at its old instant; the owner may wake to fix such entries in
// bulk, at most once per lookAhead, but not once per stale entry that
// reaches the top.
func TestPostponedDeadlinesDoNotWakeTheOwner(t *testing.T) {
	const (
		keys     = 1000
		timeout  = 3 * time.Second
		every    = 2 * time.Second
		step     = 10 * time.Millisecond // the driver resets keys/(every/step) keys per step
		duration = time.Minute
		// The most wake-ups Stats.Wakeups documents for postponed
		// deadlines: one per lookAhead, plus the first.
		maxWakeups = uint64(duration/lookAhead) + 1
	)
	eachCancelStrategy(t, func(t *testing.T, strategy CancelStrategy) {
		synctest.Test(t, func(t *testing.T) {
			s, err := New(4, WithCancelStrategy(strategy))
			require.NoError(t, err)
			defer s.Shutdown()
			var expired atomic.Int32
			ids := make([]TaskID, keys)
			for i := range ids {
				id, err := s.ScheduleOne(func() { expired.Add(1) }, timeout)
				require.NoError(t, err)
				ids[i] = id
			}
			synctest.Wait()
			perStep := keys / int(every/step)
			before := s.Stats().Wakeups
			next := 0
			for elapsed := time.Duration(0); elapsed < duration; elapsed += step {
				time.Sleep(step)
				for range perStep {
					require.True(t, s.Reset(ids[next], timeout), "key %d is pending", next)
					next = (next + 1) % keys
				}
			}
			wakeups := s.Stats().Wakeups - before
			assert.Zero(t, expired.Load(), "no key fell silent")
			assert.LessOrEqual(t, wakeups, maxWakeups, "owner wake-ups over %v of heartbeats", duration)
			t.Logf("%s: %d wake-ups in %v", strategy, wakeups, duration)
		})
	})
}

// A task's tag comes round after 2^32 entries of its slot under eager
// cancel too. The owner then rebuilds the heap before the push, as for
// lazy cancel (TestLazyTagWrapDoesNotRunATaskTwice); the rebuild must keep
// the positions eager cancel removes entries by, and the new entry must
// still be the task's current one.
func TestEagerTagWrapKeepsPositionsAndRunsTheTaskOnce(t *testing.T) {
	s := bare(EagerCancel)
	others := make([]TaskID, 3)
	for i := range others {
		var err error
		others[i], err = s.ScheduleOne(nop, time.Duration(i+1)*time.Hour)
		require.NoError(t, err)
	}
	s.step(0)
	// The last moves to the top without a request: only the rebuild's
	// heapify brings its entry forward, and must record where it went.
	require.True(t, s.Reset(others[2], 20*time.Minute))
	id, err := s.ScheduleOne(nop, 30*time.Minute)
	require.NoError(t, err)
	slot := s.slab.slotOf(id)
	task := s.slab.at(slot)
	task.tag = math.MaxUint32 - 1 // the entry takes the last tag before they come round
	s.step(0)
	require.Equal(t, uint32(math.MaxUint32), task.tag)
	require.Equal(t, 4, s.owner.heap.len())
	require.Equal(t, s.slab.slotOf(others[2]), s.owner.heap.top().slot, "the heap was rebuilt")

	for _, other := range others {
		require.True(t, s.CancelTask(other))
	}
	s.step(0)
	require.Equal(t, 1, s.owner.heap.len(), "every cancelled entry removed by its position")
	assert.Equal(t, slot, s.owner.heap.top().slot)

	s.step(int64(time.Hour))
	assert.Len(t, s.runner.q.items, 1, "dispatched once")
	assert.Zero(t, s.owner.heap.len())
}
