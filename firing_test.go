package schedule_test

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/panjf2000/ants/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-schedule/schedule"
	"github.com/go-schedule/schedule/internal/schedtest"
)

// Tests of the firing path, from "due" to "running": due jobs start
// together on a bounded number of goroutines, and nothing a job does and
// nothing the pool does may stall later jobs.

// poolSpare is how many idle workers New's pool keeps beyond the jobs that
// may run at once, as New documents.
const poolSpare = 2

// TestJobsDueTogetherRunInParallel schedules as many slow jobs for the same
// instant as there are workers: they all start at that instant instead of
// one after another.
func TestJobsDueTogetherRunInParallel(t *testing.T) {
	const workers = 4
	schedtest.EachStrategy(t, workers, func(t *testing.T, s *schedule.Scheduler) {
		start := time.Now()
		var mu sync.Mutex
		var began []time.Duration
		for range workers {
			_, err := s.ScheduleOne(func() {
				mu.Lock()
				began = append(began, time.Since(start))
				mu.Unlock()
				time.Sleep(100 * time.Millisecond)
			}, 10*time.Millisecond)
			require.NoError(t, err)
		}
		schedtest.Advance(time.Second)
		mu.Lock()
		defer mu.Unlock()
		ms := 10 * time.Millisecond
		assert.Equal(t, []time.Duration{ms, ms, ms, ms}, began)
		assert.Zero(t, s.Stats().MaxLateness)
	})
}

// TestManySimultaneousDeadlinesRunOnBoundedGoroutines has many deadlines
// come due at one instant: all run, at most workers at a time, and the
// scheduler starts no more goroutines than its pool's workers.
func TestManySimultaneousDeadlinesRunOnBoundedGoroutines(t *testing.T) {
	const workers, n = 4, 20_000
	schedtest.EachStrategy(t, workers, func(t *testing.T, s *schedule.Scheduler) {
		var ran, peak, running atomic.Int64
		job := func() {
			if r := running.Add(1); r > peak.Load() {
				peak.Store(r)
			}
			ran.Add(1)
			running.Add(-1)
		}
		for range n {
			_, err := s.ScheduleOne(job, time.Second)
			require.NoError(t, err)
		}
		before := runtime.NumGoroutine()
		schedtest.Advance(time.Second)
		assert.Equal(t, int64(n), ran.Load())
		assert.LessOrEqual(t, peak.Load(), int64(workers))
		assert.LessOrEqual(t, runtime.NumGoroutine(), before+workers+poolSpare, "workers, and the spare workers of New's pool")
		assert.Equal(t, uint64(n), s.Stats().Started)
	})
}

// TestIdleWorkerExpiryDoesNotDelayDueJobs runs a task every second on a
// one-worker scheduler whose pool purges idle workers (New's pool does not,
// unless told to), so that the pool retires its idle worker (after ants'
// default expiry of one second) at the very instant the next run is due.
// Every run must still start on time: a free worker slot must never leave a
// due job waiting.
func TestIdleWorkerExpiryDoesNotDelayDueJobs(t *testing.T) {
	for _, st := range schedtest.Strategies {
		t.Run(st.String(), func(t *testing.T) {
			// The race it looks for is narrow and decided early in a
			// bubble's life: give it many short chances, each in a fresh
			// bubble.
			for range 10 {
				if !runsOnTimeAcrossWorkerExpiry(t, st, 5000) {
					return
				}
			}
		})
	}
}

func runsOnTimeAcrossWorkerExpiry(t *testing.T, st schedtest.Strategy, runs int) (ok bool) {
	synctest.Test(t, func(t *testing.T) {
		s := st.Start(t, 1, schedule.WithPoolOptions(ants.WithDisablePurge(false)))
		var n atomic.Int32
		_, err := s.Schedule(func() { n.Add(1) }, time.Second)
		require.NoError(t, err)
		schedtest.Advance(time.Duration(runs) * time.Second)
		stats := s.Stats()
		ok = assert.Equal(t, int32(runs), n.Load())
		ok = assert.Zero(t, stats.MaxLateness, "a run started late") && ok
		ok = assert.Zero(t, stats.Skipped, "a run was skipped") && ok
	})
	return ok
}

// stallSearch schedules, round after round, a job that ends its goroutine
// abnormally followed by a job that counts, on a one-worker scheduler of
// each strategy, and fails if a counting job does not run within a
// generous limit. It runs in real time, for many rounds: the stall it hunts
// comes from a lost wake-up between real goroutines (a worker goroutine of
// ants that exits can take a blocked Submit's wake-up with it; see
// runner.go), and it shows, if at all, only now and then.
func stallSearch(t *testing.T, bad func(), opts ...schedule.Option) {
	for _, st := range schedtest.Strategies {
		t.Run(st.String(), func(t *testing.T) {
			stallSearchOne(t, st.Start(t, 1, opts...), bad)
		})
	}
}

// stallLimit is how long stallSearch waits for a counting job before it
// calls the scheduler stalled: orders of magnitude longer than a round
// takes on a loaded machine under the race detector.
const stallLimit = 10 * time.Second

func stallSearchOne(t *testing.T, s *schedule.Scheduler, bad func()) {
	var done atomic.Int64
	deadline := time.Now().Add(2 * time.Second)
	if testing.Short() {
		deadline = time.Now().Add(300 * time.Millisecond)
	}
	for round := int64(1); time.Now().Before(deadline); round++ {
		_, err := s.ScheduleOne(bad, 0)
		require.NoError(t, err)
		_, err = s.ScheduleOne(func() { done.Add(1) }, 0)
		require.NoError(t, err)
		limit := time.Now().Add(stallLimit)
		for done.Load() < round {
			if time.Now().After(limit) {
				require.FailNowf(t, "stalled", "round %d: the counting job never ran; stats %+v", round, s.Stats())
			}
			runtime.Gosched()
		}
	}
}

func TestJobEndingItsGoroutineDoesNotStallLaterJobs(t *testing.T) {
	stallSearch(t, func() { runtime.Goexit() })
}

func TestRepanickingHandlerDoesNotStallLaterJobs(t *testing.T) {
	stallSearch(t, func() { panic("boom") },
		schedule.WithPanicHandler(func(_ schedule.TaskID, r any) { panic(r) }),
		schedule.WithPoolOptions(ants.WithPanicHandler(func(any) {})))
}
