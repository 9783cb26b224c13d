package schedule_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-schedule/schedule"
	"github.com/go-schedule/schedule/internal/schedtest"
)

// Tests of Len and Stats: what each counter counts, and
// the relations Stats documents between them.

func TestLenCountsPendingTasksOnly(t *testing.T) {
	schedtest.EachStrategy(t, 2, func(t *testing.T, s *schedule.Scheduler) {
		a, _ := s.ScheduleOne(nop, time.Second)
		_, _ = s.ScheduleOne(nop, 2*time.Second)
		r, _ := s.Schedule(nop, time.Second)
		assert.Equal(t, 3, s.Len())
		s.CancelTask(a)
		assert.Equal(t, 2, s.Len(), "cancelled tasks do not count, tombstone or not")
		schedtest.Advance(5 * time.Second)
		assert.Equal(t, 1, s.Len(), "a repeating task counts until cancelled")
		s.CancelTask(r)
		assert.Equal(t, 0, s.Len())
	})
}

func TestStatsCountStartedCancelledAndHeapEntries(t *testing.T) {
	schedtest.EachStrategy(t, 2, func(t *testing.T, s *schedule.Scheduler) {
		var ids []schedule.TaskID
		for i := range 100 {
			id, err := s.ScheduleOne(nop, time.Duration(i+1)*time.Second)
			require.NoError(t, err)
			ids = append(ids, id)
		}
		// Adds due after the owner's timer wait in the inbox until something
		// wakes it (inbox.go); Stats does. Once all are in the heap, each
		// lazy cancel leaves a tombstone.
		require.Equal(t, 100, settledStats(s).HeapEntries)
		for _, id := range ids[50:60] {
			require.True(t, s.CancelTask(id))
		}
		stats := settledStats(s)
		assert.Equal(t, 90, stats.Pending)
		assert.Equal(t, uint64(100), stats.Scheduled)
		assert.Equal(t, uint64(10), stats.Cancelled)
		// 10 tombstones in 100 entries is under the quarter that triggers a
		// rebuild: lazy keeps them, eager removed them.
		if schedule.CancelStrategyOf(s) == schedule.LazyCancel {
			assert.Equal(t, 10, stats.Tombstones)
			assert.Equal(t, 100, stats.HeapEntries)
		} else {
			assert.Zero(t, stats.Tombstones)
			assert.Equal(t, 90, stats.HeapEntries)
		}
		schedtest.Advance(200 * time.Second)
		stats = s.Stats()
		assert.Equal(t, uint64(90), stats.Started)
		assert.Equal(t, 0, stats.HeapEntries)
		assert.Equal(t, 0, stats.Tombstones, "tombstones go once they reach the top")
		assert.Equal(t, 0, stats.Waiting)
		assert.Equal(t, time.Duration(0), stats.MaxLateness, "fake time: every job starts on time")
	})
}

func TestLatenessHistogramCountsEveryStart(t *testing.T) {
	schedtest.EachStrategy(t, 1, func(t *testing.T, s *schedule.Scheduler) {
		hold := make(chan struct{})
		_, err := s.ScheduleOne(func() { <-hold }, time.Second-time.Millisecond) // first, and on time
		require.NoError(t, err)
		_, err = s.ScheduleOne(nop, time.Second) // 40 ms late
		require.NoError(t, err)
		schedtest.Advance(time.Second + 40*time.Millisecond)
		close(hold)
		schedtest.Advance(time.Millisecond)
		stats := s.Stats()
		var want [schedule.LatenessBuckets]uint64
		want[0] = 1 // the first job, on time
		want[8] = 1 // the second, in (25 ms, 50 ms]
		assert.Equal(t, want, stats.Lateness)
		assert.Equal(t, uint64(2), stats.Started)
		assert.Equal(t, 40*time.Millisecond, stats.LatenessSum, "the on-time start adds nothing")
	})
}

// The histogram's bounds are the ones LatenessBounds documents, in
// increasing order, and a caller cannot change them.
func TestLatenessBoundsAreTheDocumentedOnes(t *testing.T) {
	const us, ms, sec = time.Microsecond, time.Millisecond, time.Second
	want := [schedule.LatenessBuckets - 1]time.Duration{
		100 * us, 250 * us, 500 * us,
		1 * ms, 2500 * us, 5 * ms,
		10 * ms, 25 * ms, 50 * ms,
		100 * ms, 250 * ms, 500 * ms,
		1 * sec, 2500 * ms, 5 * sec,
		10 * sec,
	}
	bounds := schedule.LatenessBounds()
	assert.Equal(t, want, bounds)
	bounds[0] = time.Hour
	assert.Equal(t, want, schedule.LatenessBounds(), "the bounds are handed out by value")
}

// Reading Stats takes nothing away: with nothing scheduled, cancelled or
// run in between, a second snapshot equals the first, and TakeMaxLateness,
// which resets its own interval, leaves Stats as it was.
func TestStatsReadsWithoutChangingTheCounters(t *testing.T) {
	schedtest.EachStrategy(t, 1, func(t *testing.T, s *schedule.Scheduler) {
		hold := make(chan struct{})
		_, err := s.ScheduleOne(func() { <-hold }, time.Second-time.Millisecond)
		require.NoError(t, err)
		_, err = s.ScheduleOne(nop, time.Second) // 3 ms late
		require.NoError(t, err)
		for i := range 10 {
			_, err = s.ScheduleOne(nop, time.Duration(i+1)*time.Hour)
			require.NoError(t, err)
		}
		schedtest.Advance(time.Second + 3*time.Millisecond)
		close(hold)
		schedtest.Advance(time.Millisecond)
		first := settledStats(s)
		require.Equal(t, uint64(2), first.Started)
		require.Equal(t, 10, first.Pending)
		for range 10 {
			assert.Equal(t, first, s.Stats())
		}
	})
}

// Snapshots taken in real time while many goroutines schedule and cancel,
// and jobs fire, keep the relations Stats documents.
func TestStatsSnapshotsStayConsistentUnderLoad(t *testing.T) {
	for _, st := range schedtest.Strategies {
		t.Run(st.String(), func(t *testing.T) {
			s := st.Start(t, 2)
			stop := make(chan struct{})
			var wg sync.WaitGroup
			for g := range 4 {
				wg.Go(func() {
					for i := 0; ; i++ {
						select {
						case <-stop:
							return
						default:
						}
						id, err := s.ScheduleOne(nop, time.Duration(i%3)*time.Millisecond)
						if !assert.NoError(t, err) {
							return
						}
						if (i+g)%2 == 0 {
							s.CancelTask(id)
						}
					}
				})
			}
			var lastSum time.Duration
			for range 20_000 {
				stats := s.Stats()
				var started uint64
				for _, n := range stats.Lateness {
					started += n
				}
				if !assert.GreaterOrEqual(t, stats.Scheduled, uint64(stats.Pending)+stats.Cancelled+stats.Dropped, "%+v", stats) ||
					!assert.GreaterOrEqual(t, stats.Started, stats.Panics) ||
					!assert.GreaterOrEqual(t, stats.Started, started, "every start in the histogram is counted in Started") ||
					!assert.GreaterOrEqual(t, stats.LatenessSum, lastSum, "the lateness sum only grows") {
					break
				}
				lastSum = stats.LatenessSum
			}
			close(stop)
			wg.Wait()
		})
	}
}
