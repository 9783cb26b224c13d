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

// Tests of the time of a watch: Deadline, and the deadline NewWithDeadline
// hands to expired.

func TestDeadlineIsTheLastBeatPlusTheTimeout(t *testing.T) {
	schedtest.EachStrategy(t, 1, func(t *testing.T, s *schedule.Scheduler) {
		start := time.Now()
		m := newMonitor(t, s, time.Second, func(string) {})
		require.NoError(t, m.Beat("k"))
		at, ok := m.Deadline("k")
		require.True(t, ok)
		assert.Equal(t, start.Add(time.Second), at)

		schedtest.Advance(300 * time.Millisecond)
		require.NoError(t, m.Beat("k"))
		at, _ = m.Deadline("k")
		assert.Equal(t, start.Add(1300*time.Millisecond), at, "after a Beat")
		schedtest.Advance(100 * time.Millisecond)
		require.True(t, m.Refresh("k"))
		at, _ = m.Deadline("k")
		assert.Equal(t, start.Add(1400*time.Millisecond), at, "after a Refresh")
		require.NoError(t, m.Watch("k", time.Minute))
		at, _ = m.Deadline("k")
		assert.Equal(t, start.Add(400*time.Millisecond+time.Minute), at, "after a Watch, with its own timeout")
	})
}

func TestDeadlineOfAKeyNotWatchedIsFalse(t *testing.T) {
	schedtest.EachStrategy(t, 1, func(t *testing.T, s *schedule.Scheduler) {
		m := newMonitor(t, s, time.Second, func(string) {})
		require.NoError(t, m.Beat("forgotten"))
		require.True(t, m.Forget("forgotten"))
		require.NoError(t, m.Beat("expired"))
		schedtest.Advance(2 * time.Second)
		require.NoError(t, m.Beat("shut down"))
		s.Shutdown()
		for _, key := range []string{"never", "forgotten", "expired", "shut down"} {
			at, ok := m.Deadline(key)
			assert.False(t, ok, key)
			assert.True(t, at.IsZero(), key)
		}
	})
}

// While its expiry waits for a worker, a key is still watched, and its
// deadline has passed.
func TestDeadlineOfAKeyWhoseExpiryIsQueuedHasPassed(t *testing.T) {
	schedtest.EachStrategy(t, 1, func(t *testing.T, s *schedule.Scheduler) {
		start := time.Now()
		m, _, _ := queuedExpiry(t, s) // deadline 1s, now 1.5s
		at, ok := m.Deadline("k")
		require.True(t, ok)
		assert.Equal(t, start.Add(time.Second), at)
	})
}

// deadlines records the calls of a NewWithDeadline expired function: the
// key, when it was called and the deadline it was given, both since the
// recorder was made.
type deadlines struct {
	start time.Time
	calls chan [2]time.Duration
}

func newDeadlines() *deadlines {
	return &deadlines{start: time.Now(), calls: make(chan [2]time.Duration, 16)}
}

func (d *deadlines) expired(_ string, deadline time.Time) {
	d.calls <- [2]time.Duration{time.Since(d.start), deadline.Sub(d.start)}
}

func TestNewWithDeadlinePassesTheDeadlineThatPassed(t *testing.T) {
	schedtest.EachStrategy(t, 1, func(t *testing.T, s *schedule.Scheduler) {
		rec := newDeadlines()
		m, err := heartbeat.NewWithDeadline(s, time.Second, rec.expired)
		require.NoError(t, err)
		require.NoError(t, m.Beat("k"))
		schedtest.Advance(400 * time.Millisecond)
		require.NoError(t, m.Beat("k"))
		schedtest.Advance(time.Hour)
		require.Len(t, rec.calls, 1)
		assert.Equal(t, [2]time.Duration{1400 * time.Millisecond, 1400 * time.Millisecond}, <-rec.calls,
			"called at the deadline, given the deadline")
	})
}

// When every worker is busy the call comes late, and still gets the
// deadline that passed, not the time of the call.
func TestNewWithDeadlinePassesTheDeadlineWhenTheCallIsLate(t *testing.T) {
	schedtest.EachStrategy(t, 1, func(t *testing.T, s *schedule.Scheduler) {
		rec := newDeadlines()
		m, err := heartbeat.NewWithDeadline(s, time.Second, rec.expired)
		require.NoError(t, err)
		require.NoError(t, m.Beat("k"))
		release := occupy(t, s, 1)
		schedtest.Advance(2500 * time.Millisecond)
		release()
		require.Len(t, rec.calls, 1)
		assert.Equal(t, [2]time.Duration{2500 * time.Millisecond, time.Second}, <-rec.calls)
	})
}
