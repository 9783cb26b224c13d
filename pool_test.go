package schedule_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/panjf2000/ants/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-schedule/schedule"
	"github.com/go-schedule/schedule/internal/schedtest"
)

// Tests of the pool jobs run on: the options that shape New's pool, and a
// pool given with WithPool, which may be shared with work of others, be
// busy with it, or be released under the scheduler.

// newSharedPool returns a non-blocking pool of the given size, made for
// WithPool, and releases it when the test ends: after the scheduler, when
// it is called before the scheduler is built.
func newSharedPool(t *testing.T, size int) *ants.Pool {
	t.Helper()
	pool, err := ants.NewPool(size, ants.WithNonblocking(true))
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, pool.ReleaseTimeout(time.Minute)) })
	return pool
}

func TestPoolOptionsReachThePool(t *testing.T) {
	// A panic handler that re-panics lets the panic reach ants, whose own
	// panic handler (passed through WithPoolOptions) must then see it.
	var poolSawPanic atomic.Int64
	schedtest.EachStrategy(t, 1, func(t *testing.T, s *schedule.Scheduler) {
		before := poolSawPanic.Load()
		_, err := s.ScheduleOne(func() { panic("boom") }, time.Second)
		require.NoError(t, err)
		schedtest.Advance(time.Second)
		assert.Equal(t, uint64(1), s.Stats().Panics)
		assert.Equal(t, before+1, poolSawPanic.Load(), "the pool's own panic handler saw the panic")
	},
		schedule.WithPanicHandler(func(_ schedule.TaskID, r any) { panic(r) }),
		schedule.WithPoolOptions(ants.WithPanicHandler(func(v any) {
			if v != "boom" {
				panic("ants saw an unexpected panic")
			}
			poolSawPanic.Add(1)
		})),
	)
}

func TestWithPoolRunsJobsOnThatPoolAndNeverReleasesIt(t *testing.T) {
	schedtest.EachStrategyBubble(t, func(t *testing.T, st schedtest.Strategy) {
		pool := newSharedPool(t, 2)
		s := st.Start(t, 1, schedule.WithPool(pool))

		ran := make(chan struct{})
		_, err := s.ScheduleOne(func() {
			assert.Equal(t, 1, pool.Running(), "the job runs on the given pool")
			close(ran)
		}, time.Second)
		require.NoError(t, err)
		schedtest.Advance(time.Second)
		select {
		case <-ran:
		default:
			require.FailNow(t, "the job did not run")
		}

		require.NoError(t, s.ShutdownContext(context.Background()))
		assert.False(t, pool.IsClosed(), "the scheduler must not release a pool it was given")
		assert.NoError(t, pool.Submit(func() {}), "the pool still takes work")
	})
}

func TestWithPoolRejectsABlockingPool(t *testing.T) {
	blocking, err := ants.NewPool(1)
	require.NoError(t, err)
	defer blocking.Release()
	nonblocking, err := ants.NewPool(1, ants.WithNonblocking(true))
	require.NoError(t, err)
	defer nonblocking.Release()

	for _, st := range schedtest.Strategies {
		s, err := st.New(1, schedule.WithPool(blocking))
		assert.ErrorIs(t, err, schedule.ErrBlockingPool, st.String())
		assert.Nil(t, s)

		s, err = st.New(1, schedule.WithPool(nonblocking))
		require.NoError(t, err, "the layout of ants' options has changed: see poolcheck.go")
		s.Shutdown()
	}
}

// A pool whose mode New cannot read is refused, not risked: the zero
// ants.Pool has none of the fields nonblocking reads, which is what a pool
// of an ants release with another layout looks like to it.
func TestWithPoolRefusesAPoolItCannotRead(t *testing.T) {
	for _, st := range schedtest.Strategies {
		s, err := st.New(1, schedule.WithPool(new(ants.Pool)))
		assert.ErrorIs(t, err, schedule.ErrBlockingPool, st.String())
		assert.ErrorContains(t, err, "cannot read", st.String())
		assert.Nil(t, s)
	}
}

// A shared pool busy with work that is not the scheduler's: the due job
// waits, shutdown does not wait for the pool, and the job is counted as
// dropped.
func TestShutdownDoesNotWaitForAForeignBusyPool(t *testing.T) {
	schedtest.EachStrategyBubble(t, func(t *testing.T, st schedtest.Strategy) {
		pool := newSharedPool(t, 1)
		foreign := make(chan struct{})
		t.Cleanup(func() { close(foreign) }) // before the pool is released
		require.NoError(t, pool.Submit(func() { <-foreign }))

		s := st.Start(t, 1, schedule.WithPool(pool))
		_, err := s.ScheduleOne(nop, time.Second)
		require.NoError(t, err)
		schedtest.Advance(time.Second + 10*time.Millisecond)
		require.Equal(t, 1, s.Stats().Waiting, "the due job waits for the pool")

		start := time.Now()
		assert.NoError(t, s.ShutdownContext(context.Background()))
		assert.Zero(t, time.Since(start), "shutdown returned at once (fake clock)")
		stats := s.Stats()
		assert.Zero(t, stats.Waiting)
		assert.Equal(t, uint64(1), stats.Dropped)
		assert.Zero(t, stats.Started)
	})
}

// When the shared pool frees up, the waiting job runs without any help:
// the scheduler retries on its own timer.
func TestJobsWaitingForAForeignBusyPoolRunWhenItFrees(t *testing.T) {
	schedtest.EachStrategyBubble(t, func(t *testing.T, st schedtest.Strategy) {
		pool := newSharedPool(t, 1)
		foreign := make(chan struct{})
		require.NoError(t, pool.Submit(func() { <-foreign }))

		s := st.Start(t, 1, schedule.WithPool(pool))
		ran := make(chan time.Time, 1)
		_, err := s.ScheduleOne(func() { ran <- time.Now() }, time.Second)
		require.NoError(t, err)
		schedtest.Advance(2 * time.Second)
		require.Empty(t, ran)

		freed := time.Now()
		close(foreign)
		schedtest.Advance(10 * time.Millisecond)
		require.Len(t, ran, 1)
		assert.LessOrEqual(t, (<-ran).Sub(freed), 5*time.Millisecond, "retried within the longest back-off")
	})
}

func TestJobsDueOnAReleasedPoolAreCountedAsDropped(t *testing.T) {
	schedtest.EachStrategyBubble(t, func(t *testing.T, st schedtest.Strategy) {
		pool, err := ants.NewPool(1, ants.WithNonblocking(true))
		require.NoError(t, err)
		s := st.Start(t, 1, schedule.WithPool(pool))
		for range 3 {
			_, err := s.ScheduleOne(nop, time.Second)
			require.NoError(t, err)
		}
		require.NoError(t, pool.ReleaseTimeout(time.Minute))
		schedtest.Advance(2 * time.Second)
		stats := s.Stats()
		assert.Equal(t, uint64(3), stats.Dropped)
		assert.Zero(t, stats.Started)
		assert.Zero(t, stats.Waiting)
	})
}
