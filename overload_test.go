package schedule_test

import (
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-schedule/schedule"
	"github.com/go-schedule/schedule/internal/schedtest"
)

// Tests of overload: due jobs when every worker is busy wait, in deadline
// order, and none is lost, while scheduling calls go on undisturbed.

// TestOverloadedPoolRunsEveryDueJobInDeadlineOrder blocks the only worker
// while a large number of tasks come due: none may be lost, they must start
// in deadline order once the worker frees up, each as late as it waited,
// and scheduling calls must not wait for the pool meanwhile.
func TestOverloadedPoolRunsEveryDueJobInDeadlineOrder(t *testing.T) {
	n := 100_000
	if testing.Short() {
		n = 10_000
	}
	schedtest.EachStrategy(t, 1, func(t *testing.T, s *schedule.Scheduler) {
		block, release := blockingJob(t)
		_, err := s.ScheduleOne(block, 0)
		require.NoError(t, err)

		// Deadlines 1ms + i·10µs, scheduled in random order so that
		// only the heap can put them back in order.
		var mu sync.Mutex
		order := make([]int, 0, n)
		ids := make([]schedule.TaskID, n)
		perm := rand.New(rand.NewPCG(1, 2)).Perm(n)
		for _, i := range perm {
			ids[i], err = s.ScheduleOne(func() {
				mu.Lock()
				order = append(order, i)
				mu.Unlock()
			}, time.Millisecond+time.Duration(i)*10*time.Microsecond)
			require.NoError(t, err)
		}
		stall := time.Millisecond + time.Duration(n)*10*time.Microsecond
		schedtest.Advance(stall)

		stats := s.Stats()
		assert.Equal(t, n, stats.Waiting, "every due job waits for the worker")
		assert.Equal(t, 1, stats.Running)
		assert.Equal(t, uint64(1), stats.Started)
		assert.Zero(t, s.Len(), "due one-shots are no longer pending")
		// A one-shot handed to the pool can no longer be stopped or
		// moved; it still runs (checked below).
		assert.False(t, s.CancelTask(ids[n-1]), "CancelTask of a dispatched one-shot")
		assert.False(t, s.Reset(ids[n-1], time.Hour), "Reset of a dispatched one-shot")

		// Scheduling, cancelling and resetting must not wait for the
		// pool. A call that blocked would leave done false here.
		var done atomic.Bool
		go func() {
			for range 1000 {
				id, err := s.ScheduleOne(func() {}, time.Hour)
				if err != nil || !s.Reset(id, 2*time.Hour) || !s.CancelTask(id) {
					return
				}
			}
			done.Store(true)
		}()
		synctest.Wait()
		assert.True(t, done.Load(), "ScheduleOne/Reset/CancelTask blocked while the pool was full")

		release()
		synctest.Wait()
		stats = s.Stats()
		assert.Equal(t, uint64(n+1), stats.Started, "no due job is lost")
		assert.Zero(t, stats.Waiting)
		assert.Zero(t, stats.Running)
		// The worker freed up at the end of the stall, when every job
		// started: the first, due at 1ms, waited longest.
		assert.Equal(t, stall-time.Millisecond, stats.MaxLateness, "lateness of the job that waited longest")
		mu.Lock()
		defer mu.Unlock()
		require.Len(t, order, n)
		for k, i := range order {
			if i != k {
				assert.Failf(t, "deadline order broken", "position %d ran task %d", k, i)
				break
			}
		}
	})
}

// TestNonBlockingPoolOverloadLosesNothing gives the scheduler, with
// WithPool, a one-worker pool that has no spare worker and refuses work
// when full (ants.WithNonblocking): due jobs are retried until a worker is
// free, none is lost and the order is kept.
func TestNonBlockingPoolOverloadLosesNothing(t *testing.T) {
	const n = 1000
	schedtest.EachStrategyBubble(t, func(t *testing.T, st schedtest.Strategy) {
		pool := newSharedPool(t, 1)
		s := st.Start(t, 1, schedule.WithPool(pool))
		block, release := blockingJob(t)
		_, err := s.ScheduleOne(block, 0)
		require.NoError(t, err)
		var mu sync.Mutex
		var order []int
		for i := range n {
			_, err := s.ScheduleOne(func() {
				mu.Lock()
				order = append(order, i)
				mu.Unlock()
			}, time.Duration(i+1)*time.Millisecond)
			require.NoError(t, err)
		}
		schedtest.Advance(time.Duration(2*n) * time.Millisecond)
		require.Equal(t, n, s.Stats().Waiting)
		release()
		schedtest.Advance(time.Second) // the dispatcher retries with a back-off
		mu.Lock()
		defer mu.Unlock()
		require.Len(t, order, n, "no due job is lost")
		assert.True(t, slices.IsSorted(order), "deadline order kept")
		assert.Equal(t, uint64(n+1), s.Stats().Started)
	})
}
