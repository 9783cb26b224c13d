package heartbeat_test

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-schedule/schedule"
	"github.com/go-schedule/schedule/heartbeat"
	"github.com/go-schedule/schedule/internal/schedtest"
)

// Tests of calls that race an expiry: the races below hold the only worker
// with a blocking job, so that a deadline passes and its expiry waits in
// the scheduler's queue, the window between "deadline passed" and
// "expired runs" that a Beat, a Watch, a Refresh or a Forget can fall
// into.

// queuedExpiry watches "k" with a timeout of a second on s, a scheduler
// with one worker, and holds the worker until the deadline has passed: at
// 1.5 s, when it returns, the expiry of "k" waits in the queue. It returns
// the Monitor, the expiries it records (times since the watch began) and
// the function that frees the worker.
func queuedExpiry(t *testing.T, s *schedule.Scheduler) (*heartbeat.Monitor[string], *expiries[string], func()) {
	t.Helper()
	rec := newExpiries[string]()
	m := newMonitor(t, s, time.Second, rec.expired)
	require.NoError(t, m.Beat("k"))
	release := occupy(t, s, 1)
	schedtest.Advance(1500 * time.Millisecond)
	require.Equal(t, 1, s.Stats().Waiting, "the deadline passed; its expiry waits for the worker")
	return m, rec, release
}

// TestBeatOrRefreshThatRacesAQueuedExpiryWins: a Beat or a Refresh that
// comes after the deadline, while the expiry waits for a worker, moves the
// deadline; the queued expiry does nothing, and the watch expires once, at
// the new deadline.
func TestBeatOrRefreshThatRacesAQueuedExpiryWins(t *testing.T) {
	calls := map[string]func(t *testing.T, m *heartbeat.Monitor[string]) bool{
		"Beat":    func(t *testing.T, m *heartbeat.Monitor[string]) bool { return assert.NoError(t, m.Beat("k")) },
		"Refresh": func(_ *testing.T, m *heartbeat.Monitor[string]) bool { return m.Refresh("k") },
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			schedtest.EachStrategy(t, 1, func(t *testing.T, s *schedule.Scheduler) {
				m, rec, release := queuedExpiry(t, s)
				assert.True(t, call(t, m), "k is watched until expired runs") // new deadline 2.5s
				assert.Equal(t, 1, m.Len())
				release()
				assert.Empty(t, rec.list(), "expired is not called for the deadline the %s overtook", name)
				assert.Equal(t, 1, m.Len(), "the key is still watched")

				schedtest.Advance(time.Second - time.Nanosecond)
				assert.Empty(t, rec.list())
				schedtest.Advance(time.Nanosecond)
				assert.Equal(t, []expiry[string]{{"k", 2500 * time.Millisecond}}, rec.list(), "the watch expires once, at the new deadline")
				schedtest.Advance(time.Hour)
				assert.Len(t, rec.list(), 1)
			})
		})
	}
}

// A Watch that races a queued expiry wins, and its timeout stays the
// key's for later Beats.
func TestWatchThatRacesAQueuedExpiryWins(t *testing.T) {
	schedtest.EachStrategy(t, 1, func(t *testing.T, s *schedule.Scheduler) {
		m, rec, release := queuedExpiry(t, s)
		require.NoError(t, m.Watch("k", 3*time.Second)) // due at 4.5s
		release()
		schedtest.Advance(time.Second)
		require.Empty(t, rec.list())
		require.NoError(t, m.Beat("k")) // at 2.5s, keeps 3s: due at 5.5s
		schedtest.Advance(time.Hour)
		assert.Equal(t, []expiry[string]{{"k", 5500 * time.Millisecond}}, rec.list())
	})
}

func TestForgetThatRacesAQueuedExpiryWins(t *testing.T) {
	schedtest.EachStrategy(t, 1, func(t *testing.T, s *schedule.Scheduler) {
		m, rec, release := queuedExpiry(t, s)
		assert.True(t, m.Forget("k"), "the key was still watched")
		assert.Equal(t, 0, m.Len())
		release()
		schedtest.Advance(time.Hour)
		assert.Empty(t, rec.list(), "a forgotten watch never expires")
		assert.False(t, m.Forget("k"))
	})
}

func TestAWatchThatOvertookItsExpiryExpiresOnce(t *testing.T) {
	schedtest.EachStrategy(t, 1, func(t *testing.T, s *schedule.Scheduler) {
		m, rec, release := queuedExpiry(t, s)
		require.NoError(t, m.Beat("k")) // due at 2.5s, also while the worker is busy
		schedtest.Advance(1500 * time.Millisecond)
		require.Equal(t, 2, s.Stats().Waiting, "both deadlines passed")

		release() // at 3s
		assert.Equal(t, []expiry[string]{{"k", 3 * time.Second}}, rec.list(), "one watch, one expiry, as soon as the worker is free")
		assert.Equal(t, 0, m.Len())
		schedtest.Advance(time.Hour)
		assert.Len(t, rec.list(), 1)
	})
}

func TestBeatsAtTheDeadlineInstantNeitherLoseAWatchNorExpireItTwice(t *testing.T) {
	// Beats that arrive at the very instant the keys' deadline passes, from
	// several goroutines while expiries run on several workers: each Beat
	// either moves the deadline or, if the expiry got there first, starts a
	// new watch. Either way the key is watched afterwards, expired runs at
	// most once for the old deadline and once for the new one.
	const keys, beaters = 256, 4
	schedtest.EachStrategy(t, 4, func(t *testing.T, s *schedule.Scheduler) {
		rec := newExpiries[uint64]()
		m := newMonitor(t, s, time.Second, rec.expired)
		for k := range uint64(keys) {
			require.NoError(t, m.Beat(k))
		}
		var wg sync.WaitGroup
		for g := range uint64(beaters) {
			wg.Go(func() {
				time.Sleep(time.Second)
				for k := g; k < keys; k += beaters {
					assert.NoError(t, m.Beat(k))
				}
			})
		}
		time.Sleep(time.Second)
		wg.Wait()
		synctest.Wait()
		assert.Equal(t, keys, m.Len(), "every key is watched after its Beat")
		atFirst := len(rec.list())

		schedtest.Advance(time.Hour)
		perKey := map[uint64][]time.Duration{}
		for _, e := range rec.list() {
			perKey[e.Key] = append(perKey[e.Key], e.At)
		}
		require.Len(t, perKey, keys)
		for k, at := range perKey {
			if len(at) == 2 {
				assert.Equal(t, []time.Duration{time.Second, 2 * time.Second}, at, "key %d: expired, then watched anew", k)
			} else {
				assert.Equal(t, []time.Duration{2 * time.Second}, at, "key %d: the Beat moved the deadline", k)
			}
		}
		t.Logf("%d of %d keys expired before their Beat", atFirst, keys)
	})
}
