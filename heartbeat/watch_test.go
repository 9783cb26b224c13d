package heartbeat_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-schedule/schedule"
	"github.com/go-schedule/schedule/heartbeat"
	"github.com/go-schedule/schedule/internal/schedtest"
)

// Tests of the calls that start, move and end a watch: Beat, Watch,
// Refresh and Forget.

func TestBeatOnAWatchedKeyMovesItsDeadline(t *testing.T) {
	schedtest.EachStrategy(t, 2, func(t *testing.T, s *schedule.Scheduler) {
		rec := newExpiries[uint64]()
		m := newMonitor(t, s, time.Second, rec.expired)
		require.NoError(t, m.Beat(7))
		schedtest.Advance(700 * time.Millisecond)
		require.NoError(t, m.Beat(7))
		schedtest.Advance(700 * time.Millisecond) // past the first deadline
		require.NoError(t, m.Beat(7))
		assert.Equal(t, 1, m.Len(), "one watch, however many Beats")

		schedtest.Advance(time.Second - time.Nanosecond)
		assert.Empty(t, rec.list(), "each Beat moved the deadline to now + timeout")
		schedtest.Advance(time.Nanosecond)
		assert.Equal(t, []expiry[uint64]{{7, 2400 * time.Millisecond}}, rec.list())
	})
}

func TestBeatAfterExpiryStartsANewWatch(t *testing.T) {
	schedtest.EachStrategy(t, 2, func(t *testing.T, s *schedule.Scheduler) {
		rec := newExpiries[string]()
		m := newMonitor(t, s, time.Second, rec.expired)
		require.NoError(t, m.Beat("k"))
		schedtest.Advance(1500 * time.Millisecond)
		require.Equal(t, 0, m.Len())

		require.NoError(t, m.Beat("k"))
		assert.Equal(t, 1, m.Len())
		schedtest.Advance(5 * time.Second)
		assert.Equal(t, []expiry[string]{{"k", time.Second}, {"k", 2500 * time.Millisecond}}, rec.list())
		assert.Equal(t, 0, m.Len())
	})
}

func TestWatchGivesAKeyItsOwnTimeoutThatBeatsKeep(t *testing.T) {
	schedtest.EachStrategy(t, 2, func(t *testing.T, s *schedule.Scheduler) {
		rec := newExpiries[string]()
		m := newMonitor(t, s, time.Second, rec.expired)
		require.NoError(t, m.Watch("slow", 5*time.Second))
		require.NoError(t, m.Beat("fast"))
		schedtest.Advance(3 * time.Second)
		require.Equal(t, []expiry[string]{{"fast", time.Second}}, rec.list(), "other keys keep the Monitor's timeout")

		require.NoError(t, m.Beat("slow")) // keeps its 5s: due at 8s, not 4s
		schedtest.Advance(5*time.Second - time.Nanosecond)
		assert.Len(t, rec.list(), 1)
		schedtest.Advance(time.Nanosecond)
		assert.Equal(t, []expiry[string]{{"fast", time.Second}, {"slow", 8 * time.Second}}, rec.list())
	})
}

func TestWatchOnAWatchedKeyMovesItsDeadlineEitherWay(t *testing.T) {
	schedtest.EachStrategy(t, 2, func(t *testing.T, s *schedule.Scheduler) {
		rec := newExpiries[uint64]()
		m := newMonitor(t, s, 10*time.Second, rec.expired)
		require.NoError(t, m.Beat(3))
		schedtest.Advance(time.Second)
		require.NoError(t, m.Watch(3, 30*time.Second)) // later: due at 31s
		schedtest.Advance(time.Second)
		require.NoError(t, m.Watch(3, 2*time.Second)) // earlier: due at 4s
		schedtest.Advance(time.Second)
		require.NoError(t, m.Beat(3)) // keeps 2s: due at 5s
		assert.Equal(t, 1, m.Len())
		schedtest.Advance(time.Minute)
		assert.Equal(t, []expiry[uint64]{{3, 5 * time.Second}}, rec.list())
	})
}

func TestBeatUsesTheMonitorsTimeoutOnceAWatchHasEnded(t *testing.T) {
	schedtest.EachStrategy(t, 2, func(t *testing.T, s *schedule.Scheduler) {
		rec := newExpiries[string]()
		m := newMonitor(t, s, time.Second, rec.expired)
		require.NoError(t, m.Watch("expires", 5*time.Second))
		require.NoError(t, m.Watch("forgotten", 5*time.Second))
		schedtest.Advance(time.Second)
		require.True(t, m.Forget("forgotten"))
		schedtest.Advance(5 * time.Second)
		require.Equal(t, []expiry[string]{{"expires", 5 * time.Second}}, rec.list())

		// At 6s both watches have ended: new ones get the Monitor's 1s.
		require.NoError(t, m.Beat("expires"))
		require.NoError(t, m.Beat("forgotten"))
		schedtest.Advance(time.Minute)
		assert.ElementsMatch(t, []expiry[string]{
			{"expires", 5 * time.Second},
			{"expires", 7 * time.Second},
			{"forgotten", 7 * time.Second},
		}, rec.list())
	})
}

func TestWatchRejectsNonPositiveTimeout(t *testing.T) {
	schedtest.EachStrategy(t, 1, func(t *testing.T, s *schedule.Scheduler) {
		rec := newExpiries[string]()
		m := newMonitor(t, s, time.Second, rec.expired)
		for _, d := range []time.Duration{0, -time.Nanosecond, math.MinInt64} {
			assert.ErrorIs(t, m.Watch("new", d), heartbeat.ErrInvalidTimeout, "timeout %v", d)
		}
		assert.Equal(t, 0, m.Len(), "a rejected Watch does not start a watch")

		require.NoError(t, m.Watch("watched", 3*time.Second))
		schedtest.Advance(time.Second)
		assert.ErrorIs(t, m.Watch("watched", 0), heartbeat.ErrInvalidTimeout)
		schedtest.Advance(1500 * time.Millisecond) // 2.5s: a rejected Watch neither moved the deadline nor dropped the 3s
		require.Empty(t, rec.list())
		require.NoError(t, m.Beat("watched"))
		schedtest.Advance(time.Minute)
		assert.Equal(t, []expiry[string]{{"watched", 5500 * time.Millisecond}}, rec.list())
	})
}

func TestRefreshMovesTheDeadlineOfAWatchedKey(t *testing.T) {
	schedtest.EachStrategy(t, 2, func(t *testing.T, s *schedule.Scheduler) {
		rec := newExpiries[uint64]()
		m := newMonitor(t, s, time.Second, rec.expired)
		require.NoError(t, m.Watch(7, 2*time.Second))
		schedtest.Advance(1500 * time.Millisecond)
		assert.True(t, m.Refresh(7), "7 is watched")

		schedtest.Advance(2*time.Second - time.Nanosecond)
		assert.Empty(t, rec.list(), "the deadline moved to now + the key's own timeout")
		schedtest.Advance(time.Nanosecond)
		assert.Equal(t, []expiry[uint64]{{7, 3500 * time.Millisecond}}, rec.list())
	})
}

func TestRefreshNeverStartsAWatch(t *testing.T) {
	schedtest.EachStrategy(t, 2, func(t *testing.T, s *schedule.Scheduler) {
		rec := newExpiries[string]()
		m := newMonitor(t, s, time.Second, rec.expired)
		assert.False(t, m.Refresh("new"), "a key never watched")

		require.NoError(t, m.Beat("forgotten"))
		require.True(t, m.Forget("forgotten"))
		assert.False(t, m.Refresh("forgotten"), "a key forgotten")

		require.NoError(t, m.Beat("expired"))
		schedtest.Advance(time.Second)
		require.Len(t, rec.list(), 1)
		assert.False(t, m.Refresh("expired"), "a key whose watch expired")

		assert.Equal(t, 0, m.Len(), "no Refresh started a watch")
		schedtest.Advance(time.Hour)
		assert.Len(t, rec.list(), 1, "nothing more expires")
	})
}

func TestForgetStopsAWatchWithoutCallingExpired(t *testing.T) {
	schedtest.EachStrategy(t, 2, func(t *testing.T, s *schedule.Scheduler) {
		rec := newExpiries[uint64]()
		m := newMonitor(t, s, time.Second, rec.expired)
		require.NoError(t, m.Beat(5))
		require.NoError(t, m.Beat(6))
		schedtest.Advance(500 * time.Millisecond)
		assert.True(t, m.Forget(5))
		assert.Equal(t, 1, m.Len())
		schedtest.Advance(time.Hour)
		assert.Equal(t, []expiry[uint64]{{6, time.Second}}, rec.list(), "only the key not forgotten expires")
	})
}

func TestForgetOfAKeyNotWatchedReturnsFalse(t *testing.T) {
	schedtest.EachStrategy(t, 1, func(t *testing.T, s *schedule.Scheduler) {
		m := newMonitor(t, s, time.Second, func(string) {})
		assert.False(t, m.Forget("never seen"))

		require.NoError(t, m.Beat("forgotten"))
		require.True(t, m.Forget("forgotten"))
		assert.False(t, m.Forget("forgotten"), "forgotten twice")

		require.NoError(t, m.Beat("expired"))
		schedtest.Advance(2 * time.Second)
		assert.False(t, m.Forget("expired"), "its watch ended when it expired")
	})
}

func TestPointerKeysAreWatchedByIdentity(t *testing.T) {
	type conn struct{ clientID string }
	schedtest.EachStrategy(t, 2, func(t *testing.T, s *schedule.Scheduler) {
		rec := newExpiries[*conn]()
		m := newMonitor(t, s, time.Second, rec.expired)
		old, taken := &conn{"c1"}, &conn{"c1"} // a takeover: same client ID, new connection
		require.NoError(t, m.Beat(old))
		require.NoError(t, m.Beat(taken))
		assert.Equal(t, 2, m.Len())
		assert.True(t, m.Forget(old))
		schedtest.Advance(time.Hour)
		require.Len(t, rec.list(), 1)
		assert.Same(t, taken, rec.list()[0].Key)
	})
}

func TestBeatOnAWatchedKeyAllocatesNothing(t *testing.T) {
	// Real time, real scheduler; the timeout is long enough that nothing
	// expires while the test runs.
	for _, st := range schedtest.Strategies {
		t.Run(st.String(), func(t *testing.T) {
			s := st.Start(t, 1)
			ints := newMonitor(t, s, time.Hour, func(uint64) {})
			strs := newMonitor(t, s, time.Hour, func(string) {})
			require.NoError(t, ints.Beat(1<<40))
			require.NoError(t, strs.Beat("device-1"))
			assert.Zero(t, testing.AllocsPerRun(1000, func() { _ = ints.Beat(1 << 40) }), "uint64 key")
			assert.Zero(t, testing.AllocsPerRun(1000, func() { _ = strs.Beat("device-1") }), "string key")
			assert.Equal(t, 2, s.Len())
		})
	}
}
