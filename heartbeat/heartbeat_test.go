package heartbeat_test

import (
	"context"
	"math"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/panjf2000/ants/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-schedule/schedule"
	"github.com/go-schedule/schedule/eagercancel"
	"github.com/go-schedule/schedule/heartbeat"
	"github.com/go-schedule/schedule/lazycancel"
)

// Every behavioural test runs against the three ways to build a scheduler.
var constructors = []struct {
	name string
	new  func(int, ...schedule.Option) (*schedule.Scheduler, error)
}{
	{"default", schedule.New},
	{"lazy", lazycancel.New},
	{"eager", eagercancel.New},
}

// eachScheduler runs f once per constructor, each time inside a fresh
// synctest bubble (fake clock) with a new scheduler of the given size, and
// shuts the scheduler down, waiting for its pool, before the bubble ends.
func eachScheduler(t *testing.T, workers int, f func(t *testing.T, s *schedule.Scheduler), opts ...schedule.Option) {
	t.Helper()
	for _, c := range constructors {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s, err := c.new(workers, opts...)
				require.NoError(t, err)
				t.Cleanup(func() { shutdown(t, s) })
				f(t, s)
			})
		})
	}
}

// shutdown stops s and waits for its jobs and its pool's goroutines.
func shutdown(t testing.TB, s *schedule.Scheduler) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	assert.NoError(t, s.ShutdownContext(ctx))
}

// advance moves the fake clock forward by d and waits until the scheduler
// and its workers have done everything due by then.
func advance(d time.Duration) {
	time.Sleep(d)
	synctest.Wait()
}

// expiry is one call of an expired function: the key, and the fake time
// of the call since the recorder was made.
type expiry[K comparable] struct {
	Key K
	At  time.Duration
}

// expiries records the calls of an expired function.
type expiries[K comparable] struct {
	start time.Time
	mu    sync.Mutex
	calls []expiry[K]
}

func newExpiries[K comparable]() *expiries[K] { return &expiries[K]{start: time.Now()} }

func (e *expiries[K]) expired(key K) {
	e.mu.Lock()
	e.calls = append(e.calls, expiry[K]{key, time.Since(e.start)})
	e.mu.Unlock()
}

func (e *expiries[K]) list() []expiry[K] {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]expiry[K](nil), e.calls...)
}

func newMonitor[K comparable](t testing.TB, s *schedule.Scheduler, timeout time.Duration, expired func(K)) *heartbeat.Monitor[K] {
	t.Helper()
	m, err := heartbeat.New(s, timeout, expired)
	require.NoError(t, err)
	return m
}

// occupy keeps all workers of s busy with jobs that block until release is
// called, so that due expiries wait in the scheduler's queue. Release runs
// at the latest when the test ends, before the scheduler is shut down.
func occupy(t *testing.T, s *schedule.Scheduler, workers int) (release func()) {
	t.Helper()
	block := make(chan struct{})
	for range workers {
		_, err := s.ScheduleOne(func() { <-block }, 0)
		require.NoError(t, err)
	}
	release = sync.OnceFunc(func() { close(block); synctest.Wait() })
	t.Cleanup(release)
	synctest.Wait()
	require.Equal(t, workers, s.Stats().Running, "every worker is busy")
	return release
}

func TestNewRejectsBadArguments(t *testing.T) {
	s, err := schedule.New(1)
	require.NoError(t, err)
	defer shutdown(t, s)
	expired := func(uint64) {}
	cases := []struct {
		name    string
		s       *schedule.Scheduler
		timeout time.Duration
		expired func(uint64)
		want    error
	}{
		{"nil scheduler", nil, time.Second, expired, heartbeat.ErrNilScheduler},
		{"zero timeout", s, 0, expired, heartbeat.ErrInvalidTimeout},
		{"negative timeout", s, -time.Second, expired, heartbeat.ErrInvalidTimeout},
		{"most negative timeout", s, math.MinInt64, expired, heartbeat.ErrInvalidTimeout},
		{"nil expired", s, time.Second, nil, heartbeat.ErrNilExpired},
	}
	for _, c := range cases {
		m, err := heartbeat.New(c.s, c.timeout, c.expired)
		assert.ErrorIs(t, err, c.want, c.name)
		assert.Nil(t, m, c.name)
	}
}

func TestSilentKeyExpiresOnceAtItsDeadline(t *testing.T) {
	t.Run("uint64", func(t *testing.T) { testSilentKeyExpiresOnce(t, uint64(1)<<40|7) })
	t.Run("string", func(t *testing.T) { testSilentKeyExpiresOnce(t, "device-42") })
}

func testSilentKeyExpiresOnce[K comparable](t *testing.T, key K) {
	const timeout = 3 * time.Second
	eachScheduler(t, 2, func(t *testing.T, s *schedule.Scheduler) {
		rec := newExpiries[K]()
		m := newMonitor(t, s, timeout, rec.expired)
		require.NoError(t, m.Beat(key))
		assert.Equal(t, 1, m.Len(), "Beat on an unwatched key starts a watch")

		advance(timeout - time.Nanosecond)
		assert.Empty(t, rec.list(), "not before the deadline")
		assert.Equal(t, 1, m.Len())

		advance(time.Nanosecond)
		assert.Equal(t, []expiry[K]{{key, timeout}}, rec.list(), "at exactly the deadline")
		assert.Equal(t, 0, m.Len(), "an expired key is no longer watched")

		advance(10 * timeout)
		assert.Len(t, rec.list(), 1, "a watch expires once")
	})
}

func TestBeatOnAWatchedKeyMovesItsDeadline(t *testing.T) {
	eachScheduler(t, 2, func(t *testing.T, s *schedule.Scheduler) {
		rec := newExpiries[uint64]()
		m := newMonitor(t, s, time.Second, rec.expired)
		require.NoError(t, m.Beat(7))
		advance(700 * time.Millisecond)
		require.NoError(t, m.Beat(7))
		advance(700 * time.Millisecond) // past the first deadline
		require.NoError(t, m.Beat(7))
		assert.Equal(t, 1, m.Len(), "one watch, however many Beats")

		advance(time.Second - time.Nanosecond)
		assert.Empty(t, rec.list(), "each Beat moved the deadline to now + timeout")
		advance(time.Nanosecond)
		assert.Equal(t, []expiry[uint64]{{7, 2400 * time.Millisecond}}, rec.list())
	})
}

func TestBeatAfterExpiryStartsANewWatch(t *testing.T) {
	eachScheduler(t, 2, func(t *testing.T, s *schedule.Scheduler) {
		rec := newExpiries[string]()
		m := newMonitor(t, s, time.Second, rec.expired)
		require.NoError(t, m.Beat("k"))
		advance(1500 * time.Millisecond)
		require.Equal(t, 0, m.Len())

		require.NoError(t, m.Beat("k"))
		assert.Equal(t, 1, m.Len())
		advance(5 * time.Second)
		assert.Equal(t, []expiry[string]{{"k", time.Second}, {"k", 2500 * time.Millisecond}}, rec.list())
		assert.Equal(t, 0, m.Len())
	})
}

func TestExpiredRunsOnTheSchedulersPool(t *testing.T) {
	for _, c := range constructors {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				pool, err := ants.NewPool(1, ants.WithNonblocking(true))
				require.NoError(t, err)
				s, err := c.new(1, schedule.WithPool(pool))
				require.NoError(t, err)

				running := make(chan int, 1)
				m := newMonitor(t, s, time.Second, func(uint64) { running <- pool.Running() })
				require.NoError(t, m.Beat(1))
				require.Equal(t, 0, pool.Running(), "nothing has run on the pool yet")
				advance(time.Second)
				select {
				case n := <-running:
					assert.Equal(t, 1, n, "expired runs on a worker of the scheduler's pool")
				default:
					t.Error("expired did not run")
				}

				shutdown(t, s)
				require.NoError(t, pool.ReleaseTimeout(time.Minute))
			})
		})
	}
}

func TestWatchGivesAKeyItsOwnTimeoutThatBeatsKeep(t *testing.T) {
	eachScheduler(t, 2, func(t *testing.T, s *schedule.Scheduler) {
		rec := newExpiries[string]()
		m := newMonitor(t, s, time.Second, rec.expired)
		require.NoError(t, m.Watch("slow", 5*time.Second))
		require.NoError(t, m.Beat("fast"))
		advance(3 * time.Second)
		require.Equal(t, []expiry[string]{{"fast", time.Second}}, rec.list(), "other keys keep the Monitor's timeout")

		require.NoError(t, m.Beat("slow")) // keeps its 5s: due at 8s, not 4s
		advance(5*time.Second - time.Nanosecond)
		assert.Len(t, rec.list(), 1)
		advance(time.Nanosecond)
		assert.Equal(t, []expiry[string]{{"fast", time.Second}, {"slow", 8 * time.Second}}, rec.list())
	})
}

func TestWatchOnAWatchedKeyMovesItsDeadlineEitherWay(t *testing.T) {
	eachScheduler(t, 2, func(t *testing.T, s *schedule.Scheduler) {
		rec := newExpiries[uint64]()
		m := newMonitor(t, s, 10*time.Second, rec.expired)
		require.NoError(t, m.Beat(3))
		advance(time.Second)
		require.NoError(t, m.Watch(3, 30*time.Second)) // later: due at 31s
		advance(time.Second)
		require.NoError(t, m.Watch(3, 2*time.Second)) // earlier: due at 4s
		advance(time.Second)
		require.NoError(t, m.Beat(3)) // keeps 2s: due at 5s
		assert.Equal(t, 1, m.Len())
		advance(time.Minute)
		assert.Equal(t, []expiry[uint64]{{3, 5 * time.Second}}, rec.list())
	})
}

func TestBeatUsesTheMonitorsTimeoutOnceAWatchHasEnded(t *testing.T) {
	eachScheduler(t, 2, func(t *testing.T, s *schedule.Scheduler) {
		rec := newExpiries[string]()
		m := newMonitor(t, s, time.Second, rec.expired)
		require.NoError(t, m.Watch("expires", 5*time.Second))
		require.NoError(t, m.Watch("forgotten", 5*time.Second))
		advance(time.Second)
		require.True(t, m.Forget("forgotten"))
		advance(5 * time.Second)
		require.Equal(t, []expiry[string]{{"expires", 5 * time.Second}}, rec.list())

		// At 6s both watches have ended: new ones get the Monitor's 1s.
		require.NoError(t, m.Beat("expires"))
		require.NoError(t, m.Beat("forgotten"))
		advance(time.Minute)
		assert.ElementsMatch(t, []expiry[string]{
			{"expires", 5 * time.Second},
			{"expires", 7 * time.Second},
			{"forgotten", 7 * time.Second},
		}, rec.list())
	})
}

func TestWatchRejectsNonPositiveTimeout(t *testing.T) {
	eachScheduler(t, 1, func(t *testing.T, s *schedule.Scheduler) {
		rec := newExpiries[string]()
		m := newMonitor(t, s, time.Second, rec.expired)
		for _, d := range []time.Duration{0, -time.Nanosecond, math.MinInt64} {
			assert.ErrorIs(t, m.Watch("new", d), heartbeat.ErrInvalidTimeout, "timeout %v", d)
		}
		assert.Equal(t, 0, m.Len(), "a rejected Watch does not start a watch")

		require.NoError(t, m.Watch("watched", 3*time.Second))
		advance(time.Second)
		assert.ErrorIs(t, m.Watch("watched", 0), heartbeat.ErrInvalidTimeout)
		advance(1500 * time.Millisecond) // 2.5s: a rejected Watch neither moved the deadline nor dropped the 3s
		require.Empty(t, rec.list())
		require.NoError(t, m.Beat("watched"))
		advance(time.Minute)
		assert.Equal(t, []expiry[string]{{"watched", 5500 * time.Millisecond}}, rec.list())
	})
}

func TestForgetStopsAWatchWithoutCallingExpired(t *testing.T) {
	eachScheduler(t, 2, func(t *testing.T, s *schedule.Scheduler) {
		rec := newExpiries[uint64]()
		m := newMonitor(t, s, time.Second, rec.expired)
		require.NoError(t, m.Beat(5))
		require.NoError(t, m.Beat(6))
		advance(500 * time.Millisecond)
		assert.True(t, m.Forget(5))
		assert.Equal(t, 1, m.Len())
		advance(time.Hour)
		assert.Equal(t, []expiry[uint64]{{6, time.Second}}, rec.list(), "only the key not forgotten expires")
	})
}

func TestForgetOfAKeyNotWatchedReturnsFalse(t *testing.T) {
	eachScheduler(t, 1, func(t *testing.T, s *schedule.Scheduler) {
		m := newMonitor(t, s, time.Second, func(string) {})
		assert.False(t, m.Forget("never seen"))

		require.NoError(t, m.Beat("forgotten"))
		require.True(t, m.Forget("forgotten"))
		assert.False(t, m.Forget("forgotten"), "forgotten twice")

		require.NoError(t, m.Beat("expired"))
		advance(2 * time.Second)
		assert.False(t, m.Forget("expired"), "its watch ended when it expired")
	})
}

// The races below hold the only worker with a blocking job, so that a
// deadline passes and its expiry waits in the scheduler's queue: the
// window between "deadline passed" and "expired runs" that a Beat or a
// Forget can fall into.

func TestBeatThatRacesAQueuedExpiryWins(t *testing.T) {
	eachScheduler(t, 1, func(t *testing.T, s *schedule.Scheduler) {
		rec := newExpiries[string]()
		m := newMonitor(t, s, time.Second, rec.expired)
		require.NoError(t, m.Beat("k"))
		release := occupy(t, s, 1)
		advance(1500 * time.Millisecond)
		require.Equal(t, 1, s.Stats().Waiting, "the deadline passed; its expiry waits for the worker")

		require.NoError(t, m.Beat("k")) // new deadline 2.5s
		assert.Equal(t, 1, m.Len())
		release()
		assert.Empty(t, rec.list(), "expired is not called for the deadline the Beat overtook")
		assert.Equal(t, 1, m.Len(), "the key is still watched")

		advance(time.Second - time.Nanosecond)
		assert.Empty(t, rec.list())
		advance(time.Nanosecond)
		assert.Equal(t, []expiry[string]{{"k", 2500 * time.Millisecond}}, rec.list(), "the watch expires once, at the Beat's deadline")
		advance(time.Hour)
		assert.Len(t, rec.list(), 1)
	})
}

func TestWatchThatRacesAQueuedExpiryWins(t *testing.T) {
	eachScheduler(t, 1, func(t *testing.T, s *schedule.Scheduler) {
		rec := newExpiries[uint64]()
		m := newMonitor(t, s, time.Second, rec.expired)
		require.NoError(t, m.Beat(9))
		release := occupy(t, s, 1)
		advance(1500 * time.Millisecond)
		require.Equal(t, 1, s.Stats().Waiting)

		require.NoError(t, m.Watch(9, 3*time.Second)) // due at 4.5s
		release()
		advance(time.Second)
		require.Empty(t, rec.list())
		require.NoError(t, m.Beat(9)) // at 2.5s, keeps 3s: due at 5.5s
		advance(time.Hour)
		assert.Equal(t, []expiry[uint64]{{9, 5500 * time.Millisecond}}, rec.list())
	})
}

func TestForgetThatRacesAQueuedExpiryWins(t *testing.T) {
	eachScheduler(t, 1, func(t *testing.T, s *schedule.Scheduler) {
		rec := newExpiries[string]()
		m := newMonitor(t, s, time.Second, rec.expired)
		require.NoError(t, m.Beat("k"))
		release := occupy(t, s, 1)
		advance(1500 * time.Millisecond)
		require.Equal(t, 1, s.Stats().Waiting)

		assert.True(t, m.Forget("k"), "the key was still watched")
		assert.Equal(t, 0, m.Len())
		release()
		advance(time.Hour)
		assert.Empty(t, rec.list(), "a forgotten watch never expires")
		assert.False(t, m.Forget("k"))
	})
}

func TestAWatchThatOvertookItsExpiryExpiresOnce(t *testing.T) {
	eachScheduler(t, 1, func(t *testing.T, s *schedule.Scheduler) {
		rec := newExpiries[string]()
		m := newMonitor(t, s, time.Second, rec.expired)
		require.NoError(t, m.Beat("k"))
		release := occupy(t, s, 1)
		advance(1500 * time.Millisecond)
		require.NoError(t, m.Beat("k")) // due at 2.5s, also while the worker is busy
		advance(1500 * time.Millisecond)
		require.Equal(t, 2, s.Stats().Waiting, "both deadlines passed")

		release() // at 3s
		assert.Equal(t, []expiry[string]{{"k", 3 * time.Second}}, rec.list(), "one watch, one expiry, as soon as the worker is free")
		assert.Equal(t, 0, m.Len())
		advance(time.Hour)
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
	eachScheduler(t, 4, func(t *testing.T, s *schedule.Scheduler) {
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

		advance(time.Hour)
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

func TestCallsFromInsideExpiredWork(t *testing.T) {
	eachScheduler(t, 1, func(t *testing.T, s *schedule.Scheduler) {
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
		advance(500 * time.Millisecond)
		require.NoError(t, m.Beat("b"))
		require.NoError(t, m.Beat("c"))
		advance(time.Minute)

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

func TestManyKeysEachExpireAtTheirOwnDeadline(t *testing.T) {
	const timeout = 5 * time.Second
	const devices = 300
	name := func(d int) string { return "dev-" + strconv.Itoa(d) }
	eachScheduler(t, 4, func(t *testing.T, s *schedule.Scheduler) {
		rec := newExpiries[string]()
		m := newMonitor(t, s, timeout, rec.expired)
		// Device d beats every second until second d%30, then falls silent.
		for sec := 0; sec <= 40; sec++ {
			for d := range devices {
				if sec <= d%30 {
					require.NoError(t, m.Beat(name(d)))
				}
			}
			advance(time.Second)
		}
		advance(10 * time.Second)
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

func TestPointerKeysAreWatchedByIdentity(t *testing.T) {
	type conn struct{ clientID string }
	eachScheduler(t, 2, func(t *testing.T, s *schedule.Scheduler) {
		rec := newExpiries[*conn]()
		m := newMonitor(t, s, time.Second, rec.expired)
		old, taken := &conn{"c1"}, &conn{"c1"} // a takeover: same client ID, new connection
		require.NoError(t, m.Beat(old))
		require.NoError(t, m.Beat(taken))
		assert.Equal(t, 2, m.Len())
		assert.True(t, m.Forget(old))
		advance(time.Hour)
		require.Len(t, rec.list(), 1)
		assert.Same(t, taken, rec.list()[0].Key)
	})
}

func TestBeatAndWatchAfterShutdownReturnErrShutdown(t *testing.T) {
	eachScheduler(t, 1, func(t *testing.T, s *schedule.Scheduler) {
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
		advance(time.Hour)
		assert.Empty(t, rec.list())
	})
}

func TestShutdownEndsWatchesWithoutCallingExpired(t *testing.T) {
	eachScheduler(t, 2, func(t *testing.T, s *schedule.Scheduler) {
		rec := newExpiries[uint64]()
		m := newMonitor(t, s, time.Second, rec.expired)
		for k := range uint64(10) {
			require.NoError(t, m.Beat(k))
		}
		require.NoError(t, m.Watch(10, time.Minute))
		advance(500 * time.Millisecond)
		s.Shutdown()
		advance(time.Hour)
		assert.Empty(t, rec.list())
	})
}

func TestShutdownLeavesNoKeyWatched(t *testing.T) {
	// The package promises that Shutdown of the scheduler ends every watch:
	// afterwards Len counts no key and Forget finds none to stop.
	eachScheduler(t, 1, func(t *testing.T, s *schedule.Scheduler) {
		m := newMonitor(t, s, time.Second, func(string) {})
		require.NoError(t, m.Beat("a"))
		require.NoError(t, m.Beat("b"))
		s.Shutdown()
		assert.Equal(t, 0, m.Len(), "no key is watched once the scheduler is shut down")
		assert.False(t, m.Forget("a"), "the watch of a already ended with the scheduler")
	})
}

func TestBeatOnAWatchedKeyAllocatesNothing(t *testing.T) {
	// Real time, real scheduler; the timeout is long enough that nothing
	// expires while the test runs.
	for _, c := range constructors {
		t.Run(c.name, func(t *testing.T) {
			s, err := c.new(1)
			require.NoError(t, err)
			defer shutdown(t, s)
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

// The model test: goroutines make random Beat, Watch and Forget calls on a
// set of keys while expiries run on the workers, and every outcome is
// checked against a model of each key's watch.
//
// It runs in a synctest bubble, so fake time moves only when every
// goroutine is blocked. Calls are made at whole milliseconds and every
// timeout is a whole number of milliseconds, so deadlines, and the
// expiries that keep to them, also fall on whole milliseconds, and the
// expiries due at an instant run while calls are made at that instant.
// From time to time the test holds every worker with a job that sleeps
// from one half millisecond to another: deadlines that pass meanwhile wait
// in the queue, calls made meanwhile meet those queued expiries, and the
// queue drains at the end of the hold, when no call is being made.
//
// Each key's model and its calls are serialized by the key's mutex, which
// expired also takes. Every outcome is then determined, except for a call
// on a key whose deadline is that very instant outside a hold (the expiry
// may or may not have taken the key yet); such calls are skipped.
// TestBeatsAtTheDeadlineInstantNeitherLoseAWatchNorExpireItTwice covers
// that instant.

const (
	modelKeys       = 64
	modelGoroutines = 8
	modelDuration   = 2 * time.Second
	modelTimeout    = 12 * time.Millisecond
	modelWorkers    = 2
	// betweenInstants is a quarter millisecond: calls and on-time expiries
	// happen at whole milliseconds, holds start and end half a millisecond
	// after one, and the checks run a quarter millisecond after one, when
	// nothing else does.
	betweenInstants = 250 * time.Microsecond
)

var modelOwnTimeouts = []time.Duration{3 * time.Millisecond, 7 * time.Millisecond, modelTimeout, 25 * time.Millisecond}

func TestModelConcurrentBeatsWatchesAndForgets(t *testing.T) {
	t.Run("uint64", func(t *testing.T) {
		runModel(t, func(i int) uint64 { return uint64(i) * 0x9e3779b97f4a7c15 })
	})
	t.Run("string", func(t *testing.T) {
		runModel(t, func(i int) string { return "device-" + strconv.Itoa(i) })
	})
}

// watchModel is the expected state of one key.
type watchModel struct {
	mu       sync.Mutex
	watched  bool
	deadline time.Time
	timeout  time.Duration // of the current watch
	rng      *rand.Rand    // for decisions inside expired

	// Watches of the key: started, and ended by expiry or by Forget.
	started, expired, forgotten int
}

// hold is a span of fake time during which every worker was busy.
type hold struct{ start, end time.Time }

type model[K comparable] struct {
	t     *testing.T
	m     *heartbeat.Monitor[K]
	keys  []K
	index map[K]int
	state []watchModel

	holdMu sync.Mutex
	holds  []hold

	// What the run exercised, to show it covered the interesting cases.
	skipped, wonInHold, forgotInHold, lateExpiries, rewatched atomic.Int64
}

func runModel[K comparable](t *testing.T, key func(int) K) {
	eachScheduler(t, modelWorkers, func(t *testing.T, s *schedule.Scheduler) {
		md := &model[K]{t: t, index: map[K]int{}, state: make([]watchModel, modelKeys)}
		for i := range modelKeys {
			md.keys = append(md.keys, key(i))
			md.index[key(i)] = i
			md.state[i].rng = rand.New(rand.NewPCG(uint64(i), 1))
		}
		md.m = newMonitor(t, s, modelTimeout, md.expired)
		start := time.Now()

		var wg sync.WaitGroup
		for g := range modelGoroutines {
			r := rand.New(rand.NewPCG(uint64(g), 2))
			wg.Go(func() {
				for time.Since(start) < modelDuration {
					time.Sleep(time.Duration(r.IntN(5)) * time.Millisecond)
					md.call(r)
				}
			})
		}

		// This goroutine checks Len between instants and starts the holds,
		// one at a time.
		r := rand.New(rand.NewPCG(99, 3))
		var lastEnd time.Time
		time.Sleep(betweenInstants)
		for time.Since(start) < modelDuration {
			md.checkLen(s)
			if time.Now().After(lastEnd) && r.IntN(30) == 0 {
				time.Sleep(betweenInstants) // to half a millisecond past
				d := time.Duration(3+r.IntN(25)) * time.Millisecond
				lastEnd = time.Now().Add(d)
				md.holdMu.Lock()
				md.holds = append(md.holds, hold{time.Now(), lastEnd})
				md.holdMu.Unlock()
				for range modelWorkers {
					_, err := s.ScheduleOne(func() { time.Sleep(d) }, 0)
					assert.NoError(t, err)
				}
				synctest.Wait()
				assert.Equal(t, modelWorkers, s.Stats().Running, "the hold occupies every worker")
				time.Sleep(3 * betweenInstants) // to the next quarter past
				continue
			}
			time.Sleep(time.Millisecond)
		}
		wg.Wait()
		advance(100 * time.Millisecond) // past every deadline and every hold
		md.checkLen(s)

		var total struct{ started, expired, forgotten int }
		for i := range md.state {
			st := &md.state[i]
			st.mu.Lock()
			assert.False(t, st.watched, "key %v still watched", md.keys[i])
			assert.Equal(t, st.started, st.expired+st.forgotten,
				"key %v: every watch ends exactly one way", md.keys[i])
			total.started += st.started
			total.expired += st.expired
			total.forgotten += st.forgotten
			st.mu.Unlock()
		}
		assert.Equal(t, 0, md.m.Len())
		assert.Equal(t, 0, s.Len())
		t.Logf("watches %d: expired %d, forgotten %d; Beat or Watch won over a queued expiry %d, Forget %d; late expiries %d; re-watched from expired %d; calls skipped %d; holds %d",
			total.started, total.expired, total.forgotten, md.wonInHold.Load(), md.forgotInHold.Load(),
			md.lateExpiries.Load(), md.rewatched.Load(), md.skipped.Load(), len(md.holds))
		for name, n := range map[string]int64{
			"expiries":                   int64(total.expired),
			"forgotten watches":          int64(total.forgotten),
			"wins over a queued expiry":  md.wonInHold.Load(),
			"forgets of a queued expiry": md.forgotInHold.Load(),
			"late expiries":              md.lateExpiries.Load(),
			"re-watches from expired":    md.rewatched.Load(),
		} {
			assert.Positive(t, n, "the run must exercise %s", name)
		}
	})
}

// heldAt returns the hold that spans the instant at, if any.
func (md *model[K]) heldAt(at time.Time) (hold, bool) {
	md.holdMu.Lock()
	defer md.holdMu.Unlock()
	for _, h := range md.holds {
		if h.start.Before(at) && at.Before(h.end) {
			return h, true
		}
	}
	return hold{}, false
}

// call makes one random call on a random key and checks it against the model.
func (md *model[K]) call(r *rand.Rand) {
	i := r.IntN(len(md.keys))
	key, st := md.keys[i], &md.state[i]
	now := time.Now()
	st.mu.Lock()
	defer st.mu.Unlock()

	h, held := md.heldAt(now)
	queued := st.watched && !st.deadline.After(now) // its expiry is due
	switch {
	case !queued:
	case !held && st.deadline.Equal(now):
		md.skipped.Add(1) // the expiry may or may not have taken the key yet
		return
	case !held || st.deadline.Before(h.start):
		md.t.Errorf("key %v: deadline passed %v ago without expiry", key, now.Sub(st.deadline))
		return
	}
	switch p := r.IntN(10); {
	case p < 6:
		if err := md.m.Beat(key); err != nil {
			md.t.Errorf("Beat(%v): %v", key, err)
			return
		}
		if !st.watched {
			st.begin(now, modelTimeout)
		} else {
			st.deadline = now.Add(st.timeout)
		}
	case p < 8:
		timeout := modelOwnTimeouts[r.IntN(len(modelOwnTimeouts))]
		if err := md.m.Watch(key, timeout); err != nil {
			md.t.Errorf("Watch(%v): %v", key, err)
			return
		}
		if !st.watched {
			st.begin(now, timeout)
		} else {
			st.timeout, st.deadline = timeout, now.Add(timeout)
		}
	default:
		if got := md.m.Forget(key); got != st.watched {
			md.t.Errorf("Forget(%v) = %v, want %v", key, got, st.watched)
		}
		if st.watched {
			st.watched = false
			st.forgotten++
		}
		if queued {
			md.forgotInHold.Add(1)
		}
		return
	}
	if queued {
		md.wonInHold.Add(1)
	}
}

func (st *watchModel) begin(now time.Time, timeout time.Duration) {
	st.watched = true
	st.started++
	st.timeout, st.deadline = timeout, now.Add(timeout)
}

// expired is the Monitor's expired function: the key must be watched and
// due, either at exactly its deadline or, for a deadline that passed
// during a hold, at the end of the hold.
func (md *model[K]) expired(key K) {
	now := time.Now()
	st := &md.state[md.index[key]]
	st.mu.Lock()
	defer st.mu.Unlock()
	if !st.watched {
		md.t.Errorf("expired(%v) with no watch, or twice for one", key)
		return
	}
	if now.Before(st.deadline) {
		md.t.Errorf("expired(%v) %v before its deadline", key, st.deadline.Sub(now))
		return
	}
	if now.After(st.deadline) {
		h, held := md.heldAt(st.deadline)
		if !held || !now.Equal(h.end) {
			md.t.Errorf("expired(%v) %v late, not at the end of a hold", key, now.Sub(st.deadline))
		}
		md.lateExpiries.Add(1)
	}
	st.watched = false
	st.expired++
	if now.Equal(st.deadline) && st.rng.IntN(4) == 0 {
		// Watch the key again from inside expired (only on a whole
		// millisecond, so that its next deadline is one too).
		if err := md.m.Beat(key); err != nil {
			md.t.Errorf("Beat(%v) inside expired: %v", key, err)
			return
		}
		st.begin(now, modelTimeout)
		md.rewatched.Add(1)
	}
}

// checkLen compares Len with the model at an instant when no call is made
// and no expiry runs.
func (md *model[K]) checkLen(s *schedule.Scheduler) {
	now := time.Now()
	watched, pending := 0, 0
	for i := range md.state {
		st := &md.state[i]
		st.mu.Lock()
		if st.watched {
			watched++
			if st.deadline.After(now) {
				pending++
			}
		}
		st.mu.Unlock()
	}
	assert.Equal(md.t, watched, md.m.Len(), "Len")
	assert.Equal(md.t, pending, s.Len(), "the scheduler's pending tasks: one per watch not yet due")
}

func TestRefreshMovesTheDeadlineOfAWatchedKey(t *testing.T) {
	eachScheduler(t, 2, func(t *testing.T, s *schedule.Scheduler) {
		rec := newExpiries[uint64]()
		m := newMonitor(t, s, time.Second, rec.expired)
		require.NoError(t, m.Watch(7, 2*time.Second))
		advance(1500 * time.Millisecond)
		assert.True(t, m.Refresh(7), "7 is watched")

		advance(2*time.Second - time.Nanosecond)
		assert.Empty(t, rec.list(), "the deadline moved to now + the key's own timeout")
		advance(time.Nanosecond)
		assert.Equal(t, []expiry[uint64]{{7, 3500 * time.Millisecond}}, rec.list())
	})
}

func TestRefreshNeverStartsAWatch(t *testing.T) {
	eachScheduler(t, 2, func(t *testing.T, s *schedule.Scheduler) {
		rec := newExpiries[string]()
		m := newMonitor(t, s, time.Second, rec.expired)
		assert.False(t, m.Refresh("new"), "a key never watched")

		require.NoError(t, m.Beat("forgotten"))
		require.True(t, m.Forget("forgotten"))
		assert.False(t, m.Refresh("forgotten"), "a key forgotten")

		require.NoError(t, m.Beat("expired"))
		advance(time.Second)
		require.Len(t, rec.list(), 1)
		assert.False(t, m.Refresh("expired"), "a key whose watch expired")

		assert.Equal(t, 0, m.Len(), "no Refresh started a watch")
		advance(time.Hour)
		assert.Len(t, rec.list(), 1, "nothing more expires")
	})
}

func TestRefreshThatRacesAQueuedExpiryWins(t *testing.T) {
	eachScheduler(t, 1, func(t *testing.T, s *schedule.Scheduler) {
		rec := newExpiries[string]()
		m := newMonitor(t, s, time.Second, rec.expired)
		require.NoError(t, m.Beat("k"))
		release := occupy(t, s, 1)
		advance(1500 * time.Millisecond)
		require.Equal(t, 1, s.Stats().Waiting, "the deadline passed; its expiry waits for the worker")

		assert.True(t, m.Refresh("k"), "k is watched until expired runs") // new deadline 2.5s
		release()
		assert.Empty(t, rec.list(), "expired is not called for the deadline the Refresh overtook")
		advance(time.Second)
		assert.Equal(t, []expiry[string]{{"k", 2500 * time.Millisecond}}, rec.list())
	})
}

func TestRefreshAfterShutdownReturnsFalse(t *testing.T) {
	s, err := schedule.New(1)
	require.NoError(t, err)
	m := newMonitor(t, s, time.Second, func(uint64) {})
	require.NoError(t, m.Beat(1))
	shutdown(t, s)
	assert.False(t, m.Refresh(1))
}
