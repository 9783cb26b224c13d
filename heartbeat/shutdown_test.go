package heartbeat_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-schedule/schedule"
	"github.com/go-schedule/schedule/heartbeat"
	"github.com/go-schedule/schedule/internal/schedtest"
)

// Tests of a Monitor whose scheduler is shut down: every watch ends
// without an expired call, and every call fails cleanly.

// TestShutdownEndsEveryWatchWithoutCallingExpired checks the promise that
// Shutdown of the scheduler ends every watch: expired is never called for
// one, Len counts no key, and Forget finds none to stop.
func TestShutdownEndsEveryWatchWithoutCallingExpired(t *testing.T) {
	schedtest.EachStrategy(t, 2, func(t *testing.T, s *schedule.Scheduler) {
		rec := newExpiries[uint64]()
		m := newMonitor(t, s, time.Second, rec.expired)
		for k := range uint64(10) {
			require.NoError(t, m.Beat(k))
		}
		require.NoError(t, m.Watch(10, time.Minute))
		schedtest.Advance(500 * time.Millisecond)
		require.Equal(t, 11, m.Len())
		s.Shutdown()
		assert.Equal(t, 0, m.Len(), "no key is watched once the scheduler is shut down")
		assert.False(t, m.Forget(3), "the watch of 3 already ended with the scheduler")
		schedtest.Advance(time.Hour)
		assert.Empty(t, rec.list())
	})
}

// TestCallsAfterShutdownFailCleanly: Beat and Watch return ErrShutdown
// (bad input is still reported first), Refresh and Forget return false,
// for watched keys and new ones alike, and none of them starts a watch.
func TestCallsAfterShutdownFailCleanly(t *testing.T) {
	schedtest.EachStrategy(t, 1, func(t *testing.T, s *schedule.Scheduler) {
		rec := newExpiries[string]()
		m := newMonitor(t, s, time.Second, rec.expired)
		require.NoError(t, m.Beat("watched"))
		require.NoError(t, m.Watch("own", 5*time.Second))
		s.Shutdown()

		assert.ErrorIs(t, m.Beat("watched"), schedule.ErrShutdown)
		assert.ErrorIs(t, m.Beat("new"), schedule.ErrShutdown)
		assert.ErrorIs(t, m.Watch("own", time.Second), schedule.ErrShutdown)
		assert.ErrorIs(t, m.Watch("new", time.Second), schedule.ErrShutdown)
		assert.ErrorIs(t, m.Watch("new", 0), heartbeat.ErrInvalidTimeout, "bad input is reported first")
		assert.False(t, m.Refresh("watched"))
		assert.False(t, m.Refresh("new"))
		assert.False(t, m.Forget("own"))
		assert.False(t, m.Forget("new"))
		assert.Equal(t, 0, m.Len())
		schedtest.Advance(time.Hour)
		assert.Empty(t, rec.list())
	})
}
