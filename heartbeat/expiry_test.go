package heartbeat_test

import (
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/panjf2000/ants/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-schedule/schedule"
	"github.com/go-schedule/schedule/heartbeat"
	"github.com/go-schedule/schedule/internal/schedtest"
)

// Tests of expiry: a silent key's expired call comes once, at its
// deadline, on the scheduler's pool, and may call the Monitor itself.

func TestSilentKeyExpiresOnceAtItsDeadline(t *testing.T) {
	t.Run("uint64", func(t *testing.T) { testSilentKeyExpiresOnce(t, uint64(1)<<40|7) })
	t.Run("string", func(t *testing.T) { testSilentKeyExpiresOnce(t, "device-42") })
}

func testSilentKeyExpiresOnce[K comparable](t *testing.T, key K) {
	const timeout = 3 * time.Second
	schedtest.EachStrategy(t, 2, func(t *testing.T, s *schedule.Scheduler) {
		rec := newExpiries[K]()
		m := newMonitor(t, s, timeout, rec.expired)
		require.NoError(t, m.Beat(key))
		assert.Equal(t, 1, m.Len(), "Beat on an unwatched key starts a watch")

		schedtest.Advance(timeout - time.Nanosecond)
		assert.Empty(t, rec.list(), "not before the deadline")
		assert.Equal(t, 1, m.Len())

		schedtest.Advance(time.Nanosecond)
		assert.Equal(t, []expiry[K]{{key, timeout}}, rec.list(), "at exactly the deadline")
		assert.Equal(t, 0, m.Len(), "an expired key is no longer watched")

		schedtest.Advance(10 * timeout)
		assert.Len(t, rec.list(), 1, "a watch expires once")
	})
}

func TestExpiredRunsOnTheSchedulersPool(t *testing.T) {
	schedtest.EachStrategyBubble(t, func(t *testing.T, st schedtest.Strategy) {
		pool, err := ants.NewPool(1, ants.WithNonblocking(true))
		require.NoError(t, err)
		t.Cleanup(func() { assert.NoError(t, pool.ReleaseTimeout(time.Minute)) })
		s := st.Start(t, 1, schedule.WithPool(pool))

		running := make(chan int, 1)
		m := newMonitor(t, s, time.Second, func(uint64) { running <- pool.Running() })
		require.NoError(t, m.Beat(1))
		require.Equal(t, 0, pool.Running(), "nothing has run on the pool yet")
		schedtest.Advance(time.Second)
		select {
		case n := <-running:
			assert.Equal(t, 1, n, "expired runs on a worker of the scheduler's pool")
		default:
			assert.Fail(t, "expired did not run")
		}
	})
}

func TestManyKeysEachExpireAtTheirOwnDeadline(t *testing.T) {
	const timeout = 5 * time.Second
	const devices = 300
	name := func(d int) string { return "dev-" + strconv.Itoa(d) }
	schedtest.EachStrategy(t, 4, func(t *testing.T, s *schedule.Scheduler) {
		rec := newExpiries[string]()
		m := newMonitor(t, s, timeout, rec.expired)
		// Device d beats every second until second d%30, then falls silent.
		for sec := 0; sec <= 40; sec++ {
			for d := range devices {
				if sec <= d%30 {
					require.NoError(t, m.Beat(name(d)))
				}
			}
			schedtest.Advance(time.Second)
		}
		schedtest.Advance(10 * time.Second)
		got := map[string][]time.Duration{}
		for _, e := range rec.list() {
			got[e.Key] = append(got[e.Key], e.At)
		}
		require.Len(t, got, devices)
		for d := range devices {
			last := time.Duration(d%30) * time.Second
			assert.Equal(t, []time.Duration{last + timeout}, got[name(d)], "device %d", d)
		}
		assert.Equal(t, 0, m.Len())
	})
}

func TestCallsFromInsideExpiredWork(t *testing.T) {
	schedtest.EachStrategy(t, 1, func(t *testing.T, s *schedule.Scheduler) {
		rec := newExpiries[string]()
		var m *heartbeat.Monitor[string]
		var lenInside atomic.Int64
		var first sync.Once
		m = newMonitor(t, s, time.Second, func(key string) {
			rec.expired(key)
			if key != "a" {
				return
			}
			first.Do(func() {
				lenInside.Store(int64(m.Len()))
				assert.True(t, m.Forget("c"), "Forget of another key")
				assert.False(t, m.Forget("a"), "Forget of the key that expired")
				assert.False(t, m.Forget("unknown"))
				assert.NoError(t, m.Beat("b"), "Beat of another key")
				assert.NoError(t, m.Watch("d", 5*time.Second), "Watch of a new key")
				assert.NoError(t, m.Beat("a"), "Beat of the key that expired")
			})
		})
		require.NoError(t, m.Beat("a"))
		schedtest.Advance(500 * time.Millisecond)
		require.NoError(t, m.Beat("b"))
		require.NoError(t, m.Beat("c"))
		schedtest.Advance(time.Minute)

		assert.Equal(t, int64(2), lenInside.Load(), "Len inside expired: b and c, not the expired key")
		assert.Equal(t, []expiry[string]{
			{"a", time.Second},     // calls the rest
			{"a", 2 * time.Second}, // re-watched from inside expired
			{"b", 2 * time.Second}, // beaten from inside expired at 1s
			{"d", 6 * time.Second}, // watched from inside expired at 1s
		}, sortedByTime(rec.list()))
		assert.Equal(t, 0, m.Len())
	})
}

// sortedByTime orders expiries by time, then by key.
func sortedByTime(es []expiry[string]) []expiry[string] {
	for i := 1; i < len(es); i++ {
		for j := i; j > 0 && (es[j].At < es[j-1].At || es[j].At == es[j-1].At && es[j].Key < es[j-1].Key); j-- {
			es[j], es[j-1] = es[j-1], es[j]
		}
	}
	return es
}
