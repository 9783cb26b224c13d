package heartbeat_test

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-schedule/schedule"
	"github.com/go-schedule/schedule/heartbeat"
)

// Helpers shared by the Monitor's tests. The strategies and the harness
// that runs a test once per strategy are in internal/schedtest.

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
