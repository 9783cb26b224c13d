package schedule_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-schedule/schedule"
	"github.com/go-schedule/schedule/internal/schedtest"
)

// Tests of Deadline: the instant a task is due, for pending tasks and for
// one-shots whose job is under way.

func TestDeadlineOfAPendingTaskFollowsReset(t *testing.T) {
	schedtest.EachStrategy(t, 1, func(t *testing.T, s *schedule.Scheduler) {
		start := time.Now()
		id, err := s.ScheduleOne(nop, time.Minute)
		require.NoError(t, err)
		at, ok := s.Deadline(id)
		require.True(t, ok)
		assert.Equal(t, start.Add(time.Minute), at)

		schedtest.Advance(10 * time.Second)
		require.True(t, s.Reset(id, 5*time.Second))
		at, ok = s.Deadline(id)
		require.True(t, ok)
		assert.Equal(t, start.Add(15*time.Second), at, "Reset moved it earlier")
		require.True(t, s.Reset(id, time.Hour))
		at, _ = s.Deadline(id)
		assert.Equal(t, start.Add(10*time.Second+time.Hour), at, "and later")
	})
}

func TestDeadlineOfARepeatingTaskIsItsNextRun(t *testing.T) {
	schedtest.EachStrategy(t, 1, func(t *testing.T, s *schedule.Scheduler) {
		start := time.Now()
		id, err := s.Schedule(nop, time.Second)
		require.NoError(t, err)
		schedtest.Advance(2500 * time.Millisecond)
		at, ok := s.Deadline(id)
		require.True(t, ok)
		assert.Equal(t, start.Add(3*time.Second), at)
	})
}

// From inside its job, a one-shot learns the instant it came due, also when
// it ran late because every worker was busy.
func TestDeadlineInsideTheJobIsTheInstantItCameDue(t *testing.T) {
	schedtest.EachStrategy(t, 1, func(t *testing.T, s *schedule.Scheduler) {
		start := time.Now()
		block, release := blockingJob(t)
		_, err := s.ScheduleOne(block, 0)
		require.NoError(t, err)

		type seen struct {
			at      time.Time
			ok      bool
			running time.Duration
		}
		got := make(chan seen, 1)
		id, err := s.ScheduleOneWith(func(id schedule.TaskID, _ any) {
			at, ok := s.Deadline(id)
			got <- seen{at, ok, time.Since(start)}
		}, nil, time.Second)
		require.NoError(t, err)

		schedtest.Advance(3 * time.Second)
		at, ok := s.Deadline(id)
		assert.True(t, ok, "due, waiting for a worker")
		assert.Equal(t, start.Add(time.Second), at)
		release()
		schedtest.Advance(0)
		require.Len(t, got, 1)
		assert.Equal(t, seen{start.Add(time.Second), true, 3 * time.Second}, <-got, "ran at 3s, due at 1s")
		_, ok = s.Deadline(id)
		assert.False(t, ok, "a one-shot that has run is finished")
	})
}

// Inside a repeating task's job, the deadline is the next run's: the
// owner moved it on when it handed this run over.
func TestDeadlineInsideARepeatingJobIsTheNextRun(t *testing.T) {
	schedtest.EachStrategy(t, 1, func(t *testing.T, s *schedule.Scheduler) {
		start := time.Now()
		got := make(chan time.Time, 1)
		_, err := s.ScheduleWith(func(id schedule.TaskID, _ any) {
			if at, ok := s.Deadline(id); ok {
				select {
				case got <- at:
				default:
				}
			}
		}, nil, 100*time.Millisecond)
		require.NoError(t, err)
		schedtest.Advance(100 * time.Millisecond)
		require.Len(t, got, 1)
		assert.Equal(t, start.Add(200*time.Millisecond), <-got)
	})
}

// A one-shot's job that was already running when Shutdown came still learns
// the instant it came due.
func TestDeadlineInsideAJobRunningAtShutdownIsTheInstantItCameDue(t *testing.T) {
	schedtest.EachStrategy(t, 1, func(t *testing.T, s *schedule.Scheduler) {
		start := time.Now()
		shutDown := make(chan struct{})
		type seen struct {
			at time.Time
			ok bool
		}
		got := make(chan seen, 1)
		_, err := s.ScheduleOneWith(func(id schedule.TaskID, _ any) {
			<-shutDown
			at, ok := s.Deadline(id)
			got <- seen{at, ok}
		}, nil, time.Second)
		require.NoError(t, err)
		schedtest.Advance(time.Second) // the job is running, and waits
		s.Shutdown()
		close(shutDown)
		schedtest.Advance(0)
		require.Len(t, got, 1)
		assert.Equal(t, seen{start.Add(time.Second), true}, <-got)
	})
}

func TestDeadlineReportsFalseForTasksThatAreNotDue(t *testing.T) {
	schedtest.EachStrategy(t, 1, func(t *testing.T, s *schedule.Scheduler) {
		cancelled, err := s.ScheduleOne(nop, time.Minute)
		require.NoError(t, err)
		require.True(t, s.CancelTask(cancelled))
		pending, err := s.ScheduleOne(nop, time.Minute)
		require.NoError(t, err)

		_, ok := s.Deadline(cancelled)
		assert.False(t, ok, "cancelled")
		_, ok = s.Deadline(0)
		assert.False(t, ok, "0")
		_, ok = s.Deadline(pending ^ 1<<40)
		assert.False(t, ok, "an ID it never issued")
		s.Shutdown()
		at, ok := s.Deadline(pending)
		assert.False(t, ok, "after Shutdown")
		assert.True(t, at.IsZero())
	})
}
