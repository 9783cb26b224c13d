package schedule_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/go-schedule/schedule"
	"github.com/go-schedule/schedule/internal/schedtest"
)

// Tests of Shutdown and ShutdownContext: what they drop, what they wait
// for, and that they are safe from inside a job and concurrently with
// every other call, themselves included.

func TestShutdownDropsPendingTasksAndRejectsCalls(t *testing.T) {
	schedtest.EachStrategy(t, 2, func(t *testing.T, s *schedule.Scheduler) {
		rec := newRecorder()
		one, err := s.ScheduleOne(rec.job, time.Second)
		require.NoError(t, err)
		rep, err := s.Schedule(rec.job, time.Second)
		require.NoError(t, err)
		require.False(t, s.IsShutdown())

		s.Shutdown()
		s.Shutdown() // idempotent
		assert.True(t, s.IsShutdown())
		schedtest.Advance(5 * time.Second)
		assert.Empty(t, rec.times(), "no job starts after Shutdown")
		assert.Equal(t, 0, s.Len())

		_, err = s.ScheduleOne(nop, time.Second)
		assert.ErrorIs(t, err, schedule.ErrShutdown)
		_, err = s.Schedule(nop, time.Second)
		assert.ErrorIs(t, err, schedule.ErrShutdown)
		_, err = s.ScheduleOneWith(func(schedule.TaskID, any) {}, nil, time.Second)
		assert.ErrorIs(t, err, schedule.ErrShutdown)
		_, err = s.ScheduleWith(func(schedule.TaskID, any) {}, nil, time.Second)
		assert.ErrorIs(t, err, schedule.ErrShutdown)
		for _, id := range []schedule.TaskID{one, rep} {
			assert.False(t, s.CancelTask(id))
			assert.False(t, s.Reset(id, time.Second))
		}
	})
}

func TestShutdownCountsPendingTasksAsDropped(t *testing.T) {
	schedtest.EachStrategy(t, 1, func(t *testing.T, s *schedule.Scheduler) {
		for range 5 {
			_, err := s.ScheduleOne(nop, time.Hour)
			require.NoError(t, err)
		}
		_, err := s.Schedule(nop, time.Minute)
		require.NoError(t, err)
		id, err := s.ScheduleOne(nop, time.Hour)
		require.NoError(t, err)
		require.True(t, s.CancelTask(id))
		s.Shutdown()
		stats := s.Stats()
		assert.Equal(t, uint64(6), stats.Dropped, "five one-shots and a repeating task; the cancelled one is not dropped")
		assert.Equal(t, uint64(1), stats.Cancelled)
		assert.Equal(t, uint64(7), stats.Scheduled)
	})
}

// TestShutdownLeavesNoJobWaiting shuts down while due jobs wait for a
// busy pool: they never start, so Stats must stop reporting them as
// waiting once the scheduler has wound down.
func TestShutdownLeavesNoJobWaiting(t *testing.T) {
	for _, st := range schedtest.Strategies {
		t.Run(st.String(), func(t *testing.T) {
			// Which way the scheduler winds down depends on goroutine
			// scheduling; repeat, each time in a fresh bubble, to see both.
			for range 20 {
				if !shutdownWithJobsWaiting(t, st) {
					return
				}
			}
		})
	}
}

func shutdownWithJobsWaiting(t *testing.T, st schedtest.Strategy) (ok bool) {
	synctest.Test(t, func(t *testing.T) {
		s := st.Start(t, 1)
		block, release := blockingJob(t)
		_, err := s.ScheduleOne(block, 0)
		require.NoError(t, err)
		var late atomic.Int32
		for i := range 100 {
			_, err := s.ScheduleOne(func() { late.Add(1) }, time.Duration(i+1)*time.Millisecond)
			require.NoError(t, err)
		}
		schedtest.Advance(time.Second)
		require.Equal(t, 100, s.Stats().Waiting)

		s.Shutdown()
		release()
		synctest.Wait()
		stats := s.Stats()
		ok = assert.Zero(t, late.Load(), "a job started after Shutdown")
		ok = assert.Zero(t, stats.Waiting, "jobs dropped by Shutdown still counted as waiting") && ok
		ok = assert.Zero(t, stats.Running) && ok
		ok = assert.Equal(t, uint64(1), stats.Started) && ok
		ok = assert.Equal(t, uint64(100), stats.Dropped, "the jobs that waited are dropped") && ok
	})
	return ok
}

// TestShutdownWorksFromInsideAJob shuts the scheduler down from one of its
// own jobs: the job goes on to its end, later tasks never run, and every
// call afterwards, from the job or not, fails cleanly.
func TestShutdownWorksFromInsideAJob(t *testing.T) {
	schedtest.EachStrategy(t, 2, func(t *testing.T, s *schedule.Scheduler) {
		var later atomic.Bool
		_, err := s.ScheduleOne(func() { later.Store(true) }, 20*time.Millisecond)
		require.NoError(t, err)
		rep, err := s.Schedule(func() { later.Store(true) }, 15*time.Millisecond)
		require.NoError(t, err)

		type result struct {
			err                error
			cancelled, wasDown bool
		}
		results := make(chan result, 1)
		_, err = s.ScheduleOne(func() {
			s.Shutdown()
			s.Shutdown() // idempotent, also from inside
			_, err := s.ScheduleOne(func() {}, 0)
			results <- result{err, s.CancelTask(rep), s.IsShutdown()}
		}, 10*time.Millisecond)
		require.NoError(t, err)

		schedtest.Advance(time.Second)
		require.Len(t, results, 1, "the job went on after Shutdown")
		r := <-results
		assert.ErrorIs(t, r.err, schedule.ErrShutdown)
		assert.False(t, r.cancelled, "CancelTask after Shutdown")
		assert.True(t, r.wasDown)
		assert.False(t, later.Load(), "a job started after Shutdown")
		assert.True(t, s.IsShutdown())
		assert.Zero(t, s.Len())
	})
}

// TestShutdownContextFromInsideJobTimesOut documents that a job waiting for
// all jobs to finish waits for itself, so only the context ends the wait;
// the scheduler is shut down all the same.
func TestShutdownContextFromInsideJobTimesOut(t *testing.T) {
	schedtest.EachStrategy(t, 1, func(t *testing.T, s *schedule.Scheduler) {
		errs := make(chan error, 1)
		_, err := s.ScheduleOne(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer cancel()
			errs <- s.ShutdownContext(ctx)
		}, time.Millisecond)
		require.NoError(t, err)
		schedtest.Advance(time.Second)
		require.Len(t, errs, 1, "ShutdownContext returned")
		assert.ErrorIs(t, <-errs, context.DeadlineExceeded)
		assert.True(t, s.IsShutdown())
	})
}

func TestShutdownContextWaitsForRunningJobs(t *testing.T) {
	schedtest.EachStrategy(t, 2, func(t *testing.T, s *schedule.Scheduler) {
		var finished atomic.Bool
		_, err := s.ScheduleOne(func() { time.Sleep(3 * time.Second); finished.Store(true) }, 0)
		require.NoError(t, err)
		synctest.Wait()

		start := time.Now()
		require.NoError(t, s.ShutdownContext(context.Background()))
		assert.True(t, finished.Load())
		assert.Equal(t, 3*time.Second, time.Since(start))
		assert.NoError(t, s.ShutdownContext(context.Background()), "nothing left to wait for")
	})
}

func TestShutdownContextGivesUpWhenTheContextEnds(t *testing.T) {
	schedtest.EachStrategy(t, 2, func(t *testing.T, s *schedule.Scheduler) {
		_, err := s.ScheduleOne(func() { time.Sleep(time.Hour) }, 0)
		require.NoError(t, err)
		synctest.Wait()

		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		start := time.Now()
		assert.ErrorIs(t, s.ShutdownContext(ctx), context.DeadlineExceeded)
		assert.Equal(t, time.Second, time.Since(start))
		assert.True(t, s.IsShutdown())
		schedtest.Advance(time.Hour) // let the job end before the bubble does
	})
}

// Every pairing of concurrent Shutdown and ShutdownContext, hundreds of
// rounds, must be free of data races (the race detector fails the test).
func TestConcurrentShutdownCallsDoNotRace(t *testing.T) {
	calls := map[string]func(t *testing.T, s *schedule.Scheduler){
		"Shutdown": func(_ *testing.T, s *schedule.Scheduler) { s.Shutdown() },
		"ShutdownContext": func(t *testing.T, s *schedule.Scheduler) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			assert.NoError(t, s.ShutdownContext(ctx))
		},
	}
	for _, st := range schedtest.Strategies {
		for a, callA := range calls {
			for b, callB := range calls {
				t.Run(st.String()+"/"+a+"+"+b, func(t *testing.T) {
					for range 300 {
						s := st.Start(t, 2)
						_, err := s.ScheduleOne(nop, 0)
						require.NoError(t, err)
						var wg sync.WaitGroup
						wg.Go(func() { callA(t, s) })
						wg.Go(func() { callB(t, s) })
						wg.Wait()
						callB(t, s) // and once more, after both
					}
				})
			}
		}
	}
}

// TestShutdownRacesWithConcurrentCalls hammers a scheduler from many
// goroutines, with every method, while several others shut it down.
// Nothing may panic or deadlock, no job may start once ShutdownContext has
// returned, every call after it must fail cleanly, and no goroutine may be
// left behind.
func TestShutdownRacesWithConcurrentCalls(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	rounds := 10
	if testing.Short() {
		rounds = 3
	}
	for _, st := range schedtest.Strategies {
		for round := range rounds {
			t.Run(fmt.Sprintf("%v/%d", st, round), func(t *testing.T) {
				shutdownRace(t, st, uint64(round))
			})
		}
	}
}

func shutdownRace(t *testing.T, st schedtest.Strategy, seed uint64) {
	s := st.Start(t, 4)

	var down atomic.Bool        // set once ShutdownContext returned
	var lateStarts atomic.Int32 // jobs that started after that
	job := func() {
		if down.Load() {
			lateStarts.Add(1)
		}
	}
	const callers = 16
	var calls sync.WaitGroup
	var scheduled atomic.Int64
	for g := range callers {
		calls.Add(1)
		go func() {
			defer calls.Done()
			r := rand.New(rand.NewPCG(seed, uint64(g)))
			var ids []schedule.TaskID
			for i := 0; ; i++ {
				var id schedule.TaskID
				var err error
				if i%10 == 0 {
					id, err = s.Schedule(job, time.Duration(1+r.IntN(3))*time.Millisecond)
				} else {
					id, err = s.ScheduleOne(job, time.Duration(r.IntN(3000))*time.Microsecond)
				}
				if err != nil {
					if !assert.ErrorIs(t, err, schedule.ErrShutdown) {
						return
					}
					break
				}
				scheduled.Add(1)
				ids = append(ids, id)
				victim := ids[r.IntN(len(ids))]
				if r.IntN(2) == 0 {
					s.CancelTask(victim)
				} else {
					s.Reset(victim, time.Duration(r.IntN(2000))*time.Microsecond)
				}
				// The read-only methods race with Shutdown too.
				_ = s.Len()
				_ = s.Stats()
				if len(ids) > 256 {
					ids = ids[128:]
				}
			}
			// After Shutdown every call fails cleanly.
			for _, id := range ids {
				assert.False(t, s.CancelTask(id))
				assert.False(t, s.Reset(id, 0))
			}
		}()
	}

	// Let the callers get going, then shut down from several goroutines at
	// once, both ways.
	for deadline := time.Now().Add(10 * time.Second); scheduled.Load() < 2000 && time.Now().Before(deadline); {
		time.Sleep(100 * time.Microsecond)
	}
	var stops sync.WaitGroup
	for i := range 4 {
		stops.Add(1)
		go func() {
			defer stops.Done()
			if i%2 == 0 {
				s.Shutdown()
				return
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if assert.NoError(t, s.ShutdownContext(ctx)) {
				down.Store(true)
			}
		}()
	}
	finished := make(chan struct{})
	go func() {
		stops.Wait()
		calls.Wait()
		close(finished)
	}()
	select {
	case <-finished:
	case <-time.After(60 * time.Second):
		require.FailNow(t, "deadlock: Shutdown or a concurrent call never returned")
	}
	require.True(t, down.Load())
	time.Sleep(10 * time.Millisecond) // give a wrongly started job the chance to show
	assert.Zero(t, lateStarts.Load(), "jobs started after ShutdownContext returned")
	assert.True(t, s.IsShutdown())
	assert.Zero(t, s.Len())
	_, err := s.ScheduleOne(job, 0)
	assert.ErrorIs(t, err, schedule.ErrShutdown)
	_, err = s.Schedule(job, time.Millisecond)
	assert.ErrorIs(t, err, schedule.ErrShutdown)
	s.Shutdown()
	assert.NoError(t, s.ShutdownContext(context.Background()), "repeated ShutdownContext")
}
