package schedule_test

import (
	"math"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-schedule/schedule"
	"github.com/go-schedule/schedule/internal/schedtest"
)

// Tests of ScheduleAt and ScheduleAtWith: a one-shot whose deadline is an
// instant rather than a delay.

func TestScheduleAtRunsOnceAtTheInstant(t *testing.T) {
	offsets := []time.Duration{time.Nanosecond, 1500 * time.Millisecond, time.Hour, 25 * time.Hour}
	schedtest.EachStrategy(t, 4, func(t *testing.T, s *schedule.Scheduler) {
		start := time.Now()
		recs := make([]*recorder, len(offsets))
		for i, d := range offsets {
			recs[i] = newRecorder()
			_, err := s.ScheduleAt(recs[i].job, start.Add(d))
			require.NoError(t, err)
		}
		schedtest.Advance(26 * time.Hour)
		for i, d := range offsets {
			assert.Equal(t, []time.Duration{d}, recs[i].times(), "at start+%v", d)
		}
		assert.Equal(t, 0, s.Len())
	})
}

// An instant without a monotonic reading (parsed, or rounded with Round(0))
// is read on the wall clock, and runs at that instant too.
func TestScheduleAtTakesAWallClockInstant(t *testing.T) {
	schedtest.EachStrategy(t, 1, func(t *testing.T, s *schedule.Scheduler) {
		rec := newRecorder()
		at := time.Now().Add(90 * time.Second).Round(0)
		_, err := s.ScheduleAt(rec.job, at)
		require.NoError(t, err)
		schedtest.Advance(time.Hour)
		assert.Equal(t, []time.Duration{90 * time.Second}, rec.times())
	})
}

func TestScheduleAtInThePastRunsAtOnce(t *testing.T) {
	schedtest.EachStrategy(t, 3, func(t *testing.T, s *schedule.Scheduler) {
		schedtest.Advance(time.Minute)
		now, past, zero := newRecorder(), newRecorder(), newRecorder()
		_, err := s.ScheduleAt(now.job, time.Now())
		require.NoError(t, err)
		_, err = s.ScheduleAt(past.job, time.Now().Add(-time.Hour))
		require.NoError(t, err)
		_, err = s.ScheduleAt(zero.job, time.Time{})
		require.NoError(t, err)
		synctest.Wait()
		assert.Equal(t, []time.Duration{0}, now.times())
		assert.Equal(t, []time.Duration{0}, past.times())
		assert.Equal(t, []time.Duration{0}, zero.times(), "the zero Time is in the past")
	})
}

func TestScheduleAtTooFarOutNeverComesDue(t *testing.T) {
	schedtest.EachStrategy(t, 1, func(t *testing.T, s *schedule.Scheduler) {
		var ran atomic.Bool
		far := time.Unix(math.MaxInt64/2, 0) // past any representable deadline
		id, err := s.ScheduleAt(func() { ran.Store(true) }, far)
		require.NoError(t, err)
		schedtest.Advance(24 * time.Hour)
		assert.False(t, ran.Load())
		assert.True(t, s.CancelTask(id), "a task that never comes due is still pending")
	})
}

func TestScheduleAtWithPassesItsIDAndArgument(t *testing.T) {
	schedtest.EachStrategy(t, 1, func(t *testing.T, s *schedule.Scheduler) {
		type call struct {
			id  schedule.TaskID
			arg any
			at  time.Duration
		}
		start := time.Now()
		calls := make(chan call, 1)
		arg := &struct{ n int }{7}
		id, err := s.ScheduleAtWith(func(id schedule.TaskID, a any) {
			calls <- call{id, a, time.Since(start)}
		}, arg, start.Add(3*time.Second))
		require.NoError(t, err)
		schedtest.Advance(time.Hour)
		require.Len(t, calls, 1)
		assert.Equal(t, call{id, arg, 3 * time.Second}, <-calls)
	})
}

// A task scheduled at an instant is a one-shot like any other: Reset moves
// it, CancelTask stops it.
func TestScheduleAtTaskCanBeResetAndCancelled(t *testing.T) {
	schedtest.EachStrategy(t, 1, func(t *testing.T, s *schedule.Scheduler) {
		moved, cancelled := newRecorder(), newRecorder()
		a, err := s.ScheduleAt(moved.job, time.Now().Add(time.Second))
		require.NoError(t, err)
		b, err := s.ScheduleAt(cancelled.job, time.Now().Add(time.Second))
		require.NoError(t, err)
		require.True(t, s.Reset(a, 5*time.Second))
		require.True(t, s.CancelTask(b))
		schedtest.Advance(time.Hour)
		assert.Equal(t, []time.Duration{5 * time.Second}, moved.times())
		assert.Empty(t, cancelled.times())
	})
}

func TestScheduleAtRejectsANilJobAndCallsAfterShutdown(t *testing.T) {
	schedtest.EachStrategy(t, 1, func(t *testing.T, s *schedule.Scheduler) {
		at := time.Now().Add(time.Second)
		_, err := s.ScheduleAt(nil, at)
		assert.ErrorIs(t, err, schedule.ErrNilJob)
		_, err = s.ScheduleAtWith(nil, 1, at)
		assert.ErrorIs(t, err, schedule.ErrNilJob)
		s.Shutdown()
		id, err := s.ScheduleAt(nop, at)
		assert.ErrorIs(t, err, schedule.ErrShutdown)
		assert.Zero(t, id)
		id, err = s.ScheduleAtWith(func(schedule.TaskID, any) {}, nil, at)
		assert.ErrorIs(t, err, schedule.ErrShutdown)
		assert.Zero(t, id)
	})
}
