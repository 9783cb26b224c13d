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

// Tests of scheduling: when ScheduleOne's and Schedule's jobs run, what the
// With variants hand their jobs, and what bad input gets.

func TestScheduleOneRunsOnceAtItsDeadline(t *testing.T) {
	delays := []time.Duration{time.Nanosecond, time.Millisecond, 1500 * time.Millisecond, time.Hour, 25 * time.Hour}
	schedtest.EachStrategy(t, 4, func(t *testing.T, s *schedule.Scheduler) {
		recs := make([]*recorder, len(delays))
		for i, d := range delays {
			recs[i] = newRecorder()
			_, err := s.ScheduleOne(recs[i].job, d)
			require.NoError(t, err)
		}
		schedtest.Advance(26 * time.Hour)
		for i, d := range delays {
			assert.Equal(t, []time.Duration{d}, recs[i].times(), "delay %v", d)
		}
		assert.Equal(t, 0, s.Len())
	})
}

func TestScheduleOneWithNonPositiveDelayRunsAtOnce(t *testing.T) {
	schedtest.EachStrategy(t, 2, func(t *testing.T, s *schedule.Scheduler) {
		zero, negative := newRecorder(), newRecorder()
		_, err := s.ScheduleOne(zero.job, 0)
		require.NoError(t, err)
		_, err = s.ScheduleOne(negative.job, -time.Hour)
		require.NoError(t, err)
		synctest.Wait()
		assert.Equal(t, []time.Duration{0}, zero.times())
		assert.Equal(t, []time.Duration{0}, negative.times())
	})
}

func TestScheduleOneWithOverflowingDelayNeverComesDue(t *testing.T) {
	schedtest.EachStrategy(t, 1, func(t *testing.T, s *schedule.Scheduler) {
		var ran atomic.Bool
		id, err := s.ScheduleOne(func() { ran.Store(true) }, math.MaxInt64)
		require.NoError(t, err)
		// Fake time is cheap but not free (the pool ticks every 500ms):
		// a day stands in for forever.
		schedtest.Advance(24 * time.Hour)
		assert.False(t, ran.Load())
		assert.Equal(t, 1, s.Len())
		assert.True(t, s.CancelTask(id), "a task that never comes due is still pending")
	})
}

func TestScheduleRejectsBadInput(t *testing.T) {
	schedtest.EachStrategy(t, 1, func(t *testing.T, s *schedule.Scheduler) {
		with := func(schedule.TaskID, any) {}
		cases := []struct {
			name     string
			call     func() (schedule.TaskID, error)
			expected error
		}{
			{"ScheduleOne nil job", func() (schedule.TaskID, error) { return s.ScheduleOne(nil, time.Second) }, schedule.ErrNilJob},
			{"Schedule nil job", func() (schedule.TaskID, error) { return s.Schedule(nil, time.Second) }, schedule.ErrNilJob},
			{"Schedule zero interval", func() (schedule.TaskID, error) { return s.Schedule(nop, 0) }, schedule.ErrInvalidInterval},
			{"Schedule negative interval", func() (schedule.TaskID, error) { return s.Schedule(nop, -time.Second) }, schedule.ErrInvalidInterval},
			{"ScheduleOneWith nil job", func() (schedule.TaskID, error) { return s.ScheduleOneWith(nil, 1, time.Second) }, schedule.ErrNilJob},
			{"ScheduleWith nil job", func() (schedule.TaskID, error) { return s.ScheduleWith(nil, 1, time.Second) }, schedule.ErrNilJob},
			{"ScheduleWith zero interval", func() (schedule.TaskID, error) { return s.ScheduleWith(with, 1, 0) }, schedule.ErrInvalidInterval},
			{"ScheduleWith negative interval", func() (schedule.TaskID, error) { return s.ScheduleWith(with, 1, -time.Second) }, schedule.ErrInvalidInterval},
		}
		for _, c := range cases {
			id, err := c.call()
			assert.ErrorIs(t, err, c.expected, c.name)
			assert.Zero(t, id, c.name)
		}
		assert.Equal(t, 0, s.Len(), "rejected calls schedule nothing")
		assert.Zero(t, s.Stats().Scheduled, "rejected calls schedule nothing")
	})
}

func TestScheduleOneWithHandsTheJobItsIDAndValue(t *testing.T) {
	schedtest.EachStrategy(t, 1, func(t *testing.T, s *schedule.Scheduler) {
		type got struct {
			id  schedule.TaskID
			arg any
		}
		ch := make(chan got, 4)
		job := func(id schedule.TaskID, arg any) { ch <- got{id, arg} }
		p := &payload{}
		one, err := s.ScheduleOneWith(job, p, time.Second)
		require.NoError(t, err)
		rep, err := s.ScheduleWith(job, "every", 3*time.Second)
		require.NoError(t, err)
		nilArg, err := s.ScheduleOneWith(job, nil, 2*time.Second)
		require.NoError(t, err)
		schedtest.Advance(3 * time.Second)
		require.Len(t, ch, 3)
		assert.Equal(t, got{one, p}, <-ch)
		assert.Equal(t, got{nilArg, nil}, <-ch)
		assert.Equal(t, got{rep, "every"}, <-ch)
		require.True(t, s.CancelTask(rep))
	})
}

func TestScheduleRunsAtFixedRateWithoutDrift(t *testing.T) {
	const periods = 10_000
	const interval = 100 * time.Millisecond
	schedtest.EachStrategy(t, 2, func(t *testing.T, s *schedule.Scheduler) {
		rec := newRecorder()
		// Each run takes 30% of the interval; the next must still be due at
		// start + k·interval, not at the end of the previous run.
		_, err := s.Schedule(func() { rec.job(); time.Sleep(interval * 3 / 10) }, interval)
		require.NoError(t, err)
		schedtest.Advance(periods*interval + interval/2)
		runs := rec.times()
		require.Len(t, runs, periods)
		for k, at := range runs {
			if !assert.Equal(t, time.Duration(k+1)*interval, at, "run %d", k) {
				break
			}
		}
		assert.Equal(t, uint64(0), s.Stats().Skipped)
	})
}

// TestRepeatingTaskNeverOverlapsItself uses a job that lasts 2.5 intervals:
// the deadlines that arrive while it runs are skipped and counted, and the
// runs stay on the start + k·interval grid.
func TestRepeatingTaskNeverOverlapsItself(t *testing.T) {
	schedtest.EachStrategy(t, 4, func(t *testing.T, s *schedule.Scheduler) {
		rec := newRecorder()
		var active, maxActive atomic.Int32
		_, err := s.Schedule(func() {
			n := active.Add(1)
			if n > maxActive.Load() {
				maxActive.Store(n)
			}
			rec.job()
			time.Sleep(250 * time.Millisecond)
			active.Add(-1)
		}, 100*time.Millisecond)
		require.NoError(t, err)

		schedtest.Advance(time.Second + 50*time.Millisecond)
		ms := time.Millisecond
		assert.Equal(t, []time.Duration{100 * ms, 400 * ms, 700 * ms, 1000 * ms}, rec.times())
		assert.Equal(t, int32(1), maxActive.Load(), "runs overlapped")
		assert.Equal(t, uint64(6), s.Stats().Skipped, "deadlines 200,300,500,600,800,900ms are skipped")
	})
}

// TestRepeatingTaskDoesNotBurstAfterStall keeps the only worker busy for a
// second while a 100ms task comes due ten times: afterwards it runs once,
// late, and then back on its grid; the missed deadlines are skipped.
func TestRepeatingTaskDoesNotBurstAfterStall(t *testing.T) {
	schedtest.EachStrategy(t, 1, func(t *testing.T, s *schedule.Scheduler) {
		block, release := blockingJob(t)
		rec := newRecorder()
		_, err := s.ScheduleOne(block, 0)
		require.NoError(t, err)
		_, err = s.Schedule(rec.job, 100*time.Millisecond)
		require.NoError(t, err)

		schedtest.Advance(1050 * time.Millisecond)
		require.Empty(t, rec.times(), "the only worker is busy")
		release()
		schedtest.Advance(200 * time.Millisecond)
		ms := time.Millisecond
		assert.Equal(t, []time.Duration{1050 * ms, 1100 * ms, 1200 * ms}, rec.times())
		assert.Equal(t, uint64(9), s.Stats().Skipped, "deadlines 200..1000ms are skipped")
	})
}
