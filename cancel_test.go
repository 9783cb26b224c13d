package schedule_test

import (
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-schedule/schedule"
	"github.com/go-schedule/schedule/internal/schedtest"
)

// Tests of CancelTask: what it stops, when it reports true, and from where
// it may be called.

func TestCancelTaskStopsAPendingOneShot(t *testing.T) {
	schedtest.EachStrategy(t, 1, func(t *testing.T, s *schedule.Scheduler) {
		rec := newRecorder()
		id, err := s.ScheduleOne(rec.job, time.Second)
		require.NoError(t, err)
		require.Equal(t, 1, s.Len())
		assert.True(t, s.CancelTask(id))
		assert.Equal(t, 0, s.Len())
		assert.False(t, s.CancelTask(id), "a second cancel reports false")
		schedtest.Advance(2 * time.Second)
		assert.Empty(t, rec.times())
		stats := s.Stats()
		assert.Equal(t, uint64(1), stats.Cancelled)
		assert.Equal(t, uint64(0), stats.Started)
	})
}

func TestCancelTaskReportsFalseWhenThereIsNothingToStop(t *testing.T) {
	schedtest.EachStrategy(t, 1, func(t *testing.T, s *schedule.Scheduler) {
		fired, err := s.ScheduleOne(nop, time.Millisecond)
		require.NoError(t, err)
		schedtest.Advance(time.Second)
		cases := map[string]schedule.TaskID{
			"zero":               0,
			"never handed out":   schedule.TaskID(1<<32 | 12345),
			"slot beyond any":    schedule.TaskID(7<<32 | math.MaxUint32),
			"finished one-shot":  fired,
			"generation 0 of it": fired & math.MaxUint32,
		}
		for name, id := range cases {
			assert.False(t, s.CancelTask(id), name)
			assert.False(t, s.Reset(id, time.Second), name)
		}
		assert.Equal(t, uint64(0), s.Stats().Cancelled)
	})
}

func TestCancelTaskDoesNotStopAOneShotThatStarted(t *testing.T) {
	schedtest.EachStrategy(t, 1, func(t *testing.T, s *schedule.Scheduler) {
		var finished atomic.Bool
		id, err := s.ScheduleOne(func() { time.Sleep(time.Second); finished.Store(true) }, time.Second)
		require.NoError(t, err)
		schedtest.Advance(1500 * time.Millisecond)
		require.Equal(t, 1, s.Stats().Running, "the job is running")
		assert.False(t, s.CancelTask(id))
		assert.False(t, s.Reset(id, time.Hour))
		schedtest.Advance(time.Second)
		assert.True(t, finished.Load())
	})
}

func TestCancelTaskStopsARepeatingTaskWhileItRuns(t *testing.T) {
	schedtest.EachStrategy(t, 2, func(t *testing.T, s *schedule.Scheduler) {
		rec := newRecorder()
		id, err := s.Schedule(func() { rec.job(); time.Sleep(500 * time.Millisecond) }, time.Second)
		require.NoError(t, err)
		schedtest.Advance(1200 * time.Millisecond)
		require.Equal(t, 1, s.Stats().Running, "the first run is in progress")
		assert.True(t, s.CancelTask(id), "cancel does not wait for the run")
		schedtest.Advance(5 * time.Second)
		assert.Equal(t, []time.Duration{time.Second}, rec.times())
		assert.False(t, s.Reset(id, time.Second))
	})
}

// TestCancelledRepeatingTaskDoesNotStartQueuedRun cancels a repeating task
// whose run came due while every worker was busy. CancelTask reports true,
// so the task must start no further run; the queued one included.
func TestCancelledRepeatingTaskDoesNotStartQueuedRun(t *testing.T) {
	schedtest.EachStrategy(t, 1, func(t *testing.T, s *schedule.Scheduler) {
		block, release := blockingJob(t)
		_, err := s.ScheduleOne(block, 0)
		require.NoError(t, err)
		var runs atomic.Int32
		id, err := s.Schedule(func() { runs.Add(1) }, 10*time.Millisecond)
		require.NoError(t, err)

		schedtest.Advance(15 * time.Millisecond)
		require.Equal(t, 1, s.Stats().Waiting, "the run due at 10ms waits for the worker")

		assert.True(t, s.CancelTask(id))
		release()
		schedtest.Advance(time.Second)
		assert.Zero(t, runs.Load(), "a cancelled repeating task started a run")
		assert.Equal(t, uint64(1), s.Stats().Started, "only the blocking job started")
	})
}

// TestCancelTaskWorksFromInsideAJob has a repeating job cancel, on its
// second run, a pending one-shot, another repeating task and its own task:
// each cancel reports true, and none of the three runs again.
func TestCancelTaskWorksFromInsideAJob(t *testing.T) {
	schedtest.EachStrategy(t, 2, func(t *testing.T, s *schedule.Scheduler) {
		var otherRan atomic.Bool
		other, err := s.ScheduleOne(func() { otherRan.Store(true) }, 50*time.Millisecond)
		require.NoError(t, err)
		otherRep, err := s.Schedule(func() { otherRan.Store(true) }, 30*time.Millisecond)
		require.NoError(t, err)

		rec := newRecorder()
		var self atomic.Uint64
		results := make(chan [3]bool, 1)
		id, err := s.Schedule(func() {
			rec.job()
			if len(rec.times()) == 2 {
				me := schedule.TaskID(self.Load())
				results <- [3]bool{s.CancelTask(other), s.CancelTask(otherRep), s.CancelTask(me)}
			}
		}, 10*time.Millisecond)
		require.NoError(t, err)
		self.Store(uint64(id))

		schedtest.Advance(time.Second)
		require.Len(t, results, 1, "the job's second run cancelled")
		assert.Equal(t, [3]bool{true, true, true}, <-results)
		assert.Equal(t, []time.Duration{10 * time.Millisecond, 20 * time.Millisecond}, rec.times(), "no run after cancelling itself")
		assert.False(t, otherRan.Load())
		assert.False(t, s.CancelTask(id), "already cancelled")
		assert.Zero(t, s.Len())
		assert.Equal(t, uint64(3), s.Stats().Cancelled)
	})
}
