package heartbeat_test

import (
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
	"time"
	"weak"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-schedule/schedule"
	"github.com/go-schedule/schedule/heartbeat"
	"github.com/go-schedule/schedule/internal/schedtest"
)

// Tests of Close: it ends every watch of the Monitor, and only of the
// Monitor, without calling expired, and leaves the scheduler running.

func TestCloseEndsEveryWatchWithoutCallingExpired(t *testing.T) {
	schedtest.EachStrategy(t, 2, func(t *testing.T, s *schedule.Scheduler) {
		rec := newExpiries[uint64]()
		m := newMonitor(t, s, time.Second, rec.expired)
		for k := range uint64(100) {
			require.NoError(t, m.Beat(k))
		}
		require.NoError(t, m.Watch(100, time.Minute))
		schedtest.Advance(500 * time.Millisecond)

		m.Close()
		assert.Equal(t, 0, m.Len())
		assert.Equal(t, 0, s.Len(), "every task of the Monitor is cancelled")
		schedtest.Advance(time.Hour)
		assert.Empty(t, rec.list())
		assert.False(t, s.IsShutdown(), "the scheduler runs on")
	})
}

// Another Monitor, and the scheduler's own tasks, carry on after Close.
func TestCloseLeavesTheSchedulerAndOtherMonitorsRunning(t *testing.T) {
	schedtest.EachStrategy(t, 2, func(t *testing.T, s *schedule.Scheduler) {
		closed, other := newExpiries[string](), newExpiries[string]()
		m := newMonitor(t, s, time.Second, closed.expired)
		n := newMonitor(t, s, time.Second, other.expired)
		require.NoError(t, m.Beat("k"))
		require.NoError(t, n.Beat("k"))
		job := newExpiries[string]()
		_, err := s.ScheduleOne(func() { job.expired("job") }, 2*time.Second)
		require.NoError(t, err)

		m.Close()
		schedtest.Advance(time.Hour)
		assert.Empty(t, closed.list())
		assert.Equal(t, []expiry[string]{{"k", time.Second}}, other.list())
		assert.Equal(t, []expiry[string]{{"job", 2 * time.Second}}, job.list())
	})
}

// TestCallsAfterCloseFailCleanly: Beat and Watch return ErrClosed (bad
// input is still reported first); Refresh, Forget and Deadline report
// false; Len is 0; a second Close does nothing; none starts a watch.
func TestCallsAfterCloseFailCleanly(t *testing.T) {
	schedtest.EachStrategy(t, 1, func(t *testing.T, s *schedule.Scheduler) {
		rec := newExpiries[string]()
		m := newMonitor(t, s, time.Second, rec.expired)
		require.NoError(t, m.Beat("watched"))
		require.NoError(t, m.Watch("own", 5*time.Second))
		m.Close()

		assert.ErrorIs(t, m.Beat("watched"), heartbeat.ErrClosed)
		assert.ErrorIs(t, m.Beat("new"), heartbeat.ErrClosed)
		assert.ErrorIs(t, m.Watch("own", time.Second), heartbeat.ErrClosed)
		assert.ErrorIs(t, m.Watch("new", 0), heartbeat.ErrInvalidTimeout, "bad input is reported first")
		assert.False(t, m.Refresh("watched"))
		assert.False(t, m.Forget("own"))
		_, ok := m.Deadline("watched")
		assert.False(t, ok)
		m.Close()
		assert.Equal(t, 0, m.Len())
		assert.Equal(t, 0, s.Len(), "no call started a task")
		schedtest.Advance(time.Hour)
		assert.Empty(t, rec.list())
	})
}

// A deadline that passed before Close, whose expiry waits for a worker on
// the scheduler's pool, does not call expired once the worker is free.
func TestCloseDropsAnExpiryQueuedOnThePool(t *testing.T) {
	schedtest.EachStrategy(t, 1, func(t *testing.T, s *schedule.Scheduler) {
		m, rec, release := queuedExpiry(t, s)
		m.Close()
		release()
		schedtest.Advance(time.Hour)
		assert.Empty(t, rec.list(), "the queued expiry found the Monitor closed")
		assert.Equal(t, 0, s.Stats().Waiting)
		assert.Equal(t, 0, s.Len())
	})
}

func TestCloseFromInsideExpiredStopsTheOtherWatches(t *testing.T) {
	schedtest.EachStrategy(t, 1, func(t *testing.T, s *schedule.Scheduler) {
		rec := newExpiries[string]()
		var m *heartbeat.Monitor[string]
		m = newMonitor(t, s, time.Second, func(key string) {
			rec.expired(key)
			m.Close()
		})
		require.NoError(t, m.Beat("first"))
		schedtest.Advance(500 * time.Millisecond)
		require.NoError(t, m.Beat("second"))
		schedtest.Advance(time.Hour)
		assert.Equal(t, []expiry[string]{{"first", time.Second}}, rec.list())
		assert.Equal(t, 0, s.Len())
	})
}

// Beats racing Close from other goroutines leave no watch and no task
// behind: a Beat either lands before Close reaches its shard, and Close
// cancels its task, or after, and fails with ErrClosed.
func TestBeatsRacingCloseLeaveNoTaskBehind(t *testing.T) {
	const keys, beaters = 2000, 4
	schedtest.EachStrategy(t, 2, func(t *testing.T, s *schedule.Scheduler) {
		rec := newExpiries[uint64]()
		m := newMonitor(t, s, time.Second, rec.expired)
		var wg sync.WaitGroup
		for g := range uint64(beaters) {
			wg.Go(func() {
				for k := g; k < keys; k += beaters {
					if err := m.Beat(k); err != nil {
						assert.ErrorIs(t, err, heartbeat.ErrClosed)
					}
				}
			})
		}
		m.Close()
		wg.Wait()
		synctest.Wait()
		assert.Equal(t, 0, m.Len())
		assert.Equal(t, 0, s.Len(), "no task of the Monitor survives Close")
		schedtest.Advance(time.Hour)
		assert.Empty(t, rec.list())
	})
}

// After Close the scheduler no longer references the Monitor's keys: a
// pointer key can be collected while the scheduler runs on.
func TestCloseLetsTheKeysGo(t *testing.T) {
	for _, st := range schedtest.Strategies {
		t.Run(st.String(), func(t *testing.T) {
			s := st.Start(t, 1)
			type device struct{ _ [64]byte }
			m := newMonitor(t, s, time.Hour, func(*device) {})
			d := &device{}
			w := weak.Make(d)
			require.NoError(t, m.Beat(d))
			d = nil
			m.Close()
			collected := false
			for range 5 {
				runtime.GC()
				if collected = w.Value() == nil; collected {
					break
				}
			}
			assert.True(t, collected, "the key is no longer reachable")
			runtime.KeepAlive(m)
		})
	}
}
