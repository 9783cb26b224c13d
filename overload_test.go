package schedule_test

import (
	"bytes"
	"context"
	"fmt"
	"log"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-schedule/schedule"
	"github.com/panjf2000/ants/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// newBubbleScheduler builds a scheduler inside a synctest bubble and shuts it down
// (waiting for its goroutines) when the test ends.
func newBubbleScheduler(t *testing.T, strategy schedule.CancelStrategy, workers int, opts ...schedule.Option) *schedule.Scheduler {
	t.Helper()
	s, err := newForStrategy(strategy, workers, opts...)
	require.NoError(t, err)
	t.Cleanup(func() {
		assert.NoError(t, s.ShutdownContext(context.Background()))
	})
	return s
}

// bubblePerStrategy runs f once per cancel strategy, each time in a
// subtest of its own inside a fresh synctest bubble.
func bubblePerStrategy(t *testing.T, f func(t *testing.T, strategy schedule.CancelStrategy)) {
	t.Helper()
	for _, strategy := range bothStrategies {
		t.Run(strategy.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { f(t, strategy) })
		})
	}
}

// blockingJob returns a job that blocks until release is called, and release.
// The release runs at cleanup too, so a failing test does not hang.
func blockingJob(t *testing.T) (job func(), release func()) {
	ch := make(chan struct{})
	var once sync.Once
	release = func() { once.Do(func() { close(ch) }) }
	t.Cleanup(release) // runs before the scheduler's cleanup (LIFO)
	return func() { <-ch }, release
}

// TestOverloadedPoolRunsEveryDueJobInDeadlineOrder blocks the only worker
// while a large number of tasks come due: none may be lost, they must start
// in deadline order once the worker frees up, and scheduling calls must not
// wait for the pool meanwhile.
func TestOverloadedPoolRunsEveryDueJobInDeadlineOrder(t *testing.T) {
	n := 100_000
	if testing.Short() {
		n = 10_000
	}
	bubblePerStrategy(t, func(t *testing.T, strategy schedule.CancelStrategy) {
		block, release := blockingJob(t)
		s := newBubbleScheduler(t, strategy, 1)
		_, err := s.ScheduleOne(block, 0)
		require.NoError(t, err)

		// Deadlines 1ms + i·10µs, scheduled in random order so that
		// only the heap can put them back in order.
		var mu sync.Mutex
		order := make([]int, 0, n)
		ids := make([]schedule.TaskID, n)
		perm := rand.New(rand.NewPCG(1, 2)).Perm(n)
		for _, i := range perm {
			ids[i], err = s.ScheduleOne(func() {
				mu.Lock()
				order = append(order, i)
				mu.Unlock()
			}, time.Millisecond+time.Duration(i)*10*time.Microsecond)
			require.NoError(t, err)
		}
		time.Sleep(time.Millisecond + time.Duration(n)*10*time.Microsecond)
		synctest.Wait()

		st := s.Stats()
		assert.Equal(t, n, st.Waiting, "every due job waits for the worker")
		assert.Equal(t, 1, st.Running)
		assert.Equal(t, uint64(1), st.Fired)
		assert.Zero(t, s.Len(), "due one-shots are no longer pending")
		// A one-shot handed to the pool can no longer be stopped or
		// moved; it still runs (checked below).
		assert.False(t, s.CancelTask(ids[n-1]), "CancelTask of a dispatched one-shot")
		assert.False(t, s.Reset(ids[n-1], time.Hour), "Reset of a dispatched one-shot")

		// Scheduling, cancelling and resetting must not wait for the
		// pool. A call that blocked would leave done false here.
		var done atomic.Bool
		go func() {
			for range 1000 {
				id, err := s.ScheduleOne(func() {}, time.Hour)
				if err != nil || !s.Reset(id, 2*time.Hour) || !s.CancelTask(id) {
					return
				}
			}
			done.Store(true)
		}()
		synctest.Wait()
		assert.True(t, done.Load(), "ScheduleOne/Reset/CancelTask blocked while the pool was full")

		release()
		synctest.Wait()
		st = s.Stats()
		assert.Equal(t, uint64(n+1), st.Fired, "no due job is lost")
		assert.Zero(t, st.Waiting)
		assert.Zero(t, st.Running)
		assert.Greater(t, st.MaxLateness, time.Duration(0), "jobs that waited for the worker were late")
		mu.Lock()
		defer mu.Unlock()
		require.Len(t, order, n)
		for k, i := range order {
			if i != k {
				assert.Failf(t, "deadline order broken", "position %d ran task %d", k, i)
				break
			}
		}
	})
}

// TestCancelledRepeatingTaskDoesNotStartQueuedRun cancels a repeating task
// whose run came due while every worker was busy. CancelTask reports true,
// so the task must start no further run; the queued one included.
func TestCancelledRepeatingTaskDoesNotStartQueuedRun(t *testing.T) {
	bubblePerStrategy(t, func(t *testing.T, strategy schedule.CancelStrategy) {
		block, release := blockingJob(t)
		s := newBubbleScheduler(t, strategy, 1)
		_, err := s.ScheduleOne(block, 0)
		require.NoError(t, err)
		var runs atomic.Int32
		id, err := s.Schedule(func() { runs.Add(1) }, 10*time.Millisecond)
		require.NoError(t, err)

		time.Sleep(15 * time.Millisecond)
		synctest.Wait()
		require.Equal(t, 1, s.Stats().Waiting, "the run due at 10ms waits for the worker")

		assert.True(t, s.CancelTask(id))
		release()
		time.Sleep(time.Second)
		synctest.Wait()
		assert.Zero(t, runs.Load(), "a cancelled repeating task started a run")
		assert.Equal(t, uint64(1), s.Stats().Fired, "only the blockingJob started")
	})
}

// TestRepeatingTaskNeverOverlapsItself uses a job that lasts 2.5 intervals:
// the deadlines that arrive while it runs are skipped and counted, and the
// runs stay on the start + k·interval grid.
func TestRepeatingTaskNeverOverlapsItself(t *testing.T) {
	bubblePerStrategy(t, func(t *testing.T, strategy schedule.CancelStrategy) {
		s := newBubbleScheduler(t, strategy, 4)
		start := time.Now()
		var mu sync.Mutex
		var at []time.Duration
		var active, maxActive atomic.Int32
		_, err := s.Schedule(func() {
			n := active.Add(1)
			if n > maxActive.Load() {
				maxActive.Store(n)
			}
			mu.Lock()
			at = append(at, time.Since(start))
			mu.Unlock()
			time.Sleep(250 * time.Millisecond)
			active.Add(-1)
		}, 100*time.Millisecond)
		require.NoError(t, err)

		time.Sleep(time.Second)
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		ms := time.Millisecond
		assert.Equal(t, []time.Duration{100 * ms, 400 * ms, 700 * ms, 1000 * ms}, at)
		assert.Equal(t, int32(1), maxActive.Load(), "runs overlapped")
		assert.Equal(t, uint64(6), s.Stats().Skipped, "deadlines 200,300,500,600,800,900ms are skipped")
	})
}

// TestRepeatingTaskDoesNotBurstAfterStall keeps the only worker busy for a
// second while a 100ms task comes due ten times: afterwards it runs once,
// late, and then back on its grid; the missed deadlines are skipped.
func TestRepeatingTaskDoesNotBurstAfterStall(t *testing.T) {
	bubblePerStrategy(t, func(t *testing.T, strategy schedule.CancelStrategy) {
		block, release := blockingJob(t)
		s := newBubbleScheduler(t, strategy, 1)
		start := time.Now()
		_, err := s.ScheduleOne(block, 0)
		require.NoError(t, err)
		var mu sync.Mutex
		var at []time.Duration
		_, err = s.Schedule(func() {
			mu.Lock()
			at = append(at, time.Since(start))
			mu.Unlock()
		}, 100*time.Millisecond)
		require.NoError(t, err)

		time.Sleep(1050 * time.Millisecond)
		release()
		time.Sleep(200 * time.Millisecond)
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		ms := time.Millisecond
		assert.Equal(t, []time.Duration{1050 * ms, 1100 * ms, 1200 * ms}, at)
		assert.Equal(t, uint64(9), s.Stats().Skipped, "deadlines 200..1000ms are skipped")
	})
}

// TestPanickingJobsAreIsolated runs jobs that panic on every run next to an
// ordinary one, on a pool the test owns: panics are counted, the handler
// gets the panicking task's ID, and neither the scheduler nor the pool
// loses anything.
func TestPanickingJobsAreIsolated(t *testing.T) {
	bubblePerStrategy(t, func(t *testing.T, strategy schedule.CancelStrategy) {
		pool, err := ants.NewPool(2, ants.WithNonblocking(true))
		require.NoError(t, err)
		t.Cleanup(func() { assert.NoError(t, pool.ReleaseTimeout(time.Minute)) })

		var mu sync.Mutex
		handled := map[schedule.TaskID]int{}
		values := map[any]bool{}
		s := newBubbleScheduler(t, strategy, 2, schedule.WithPool(pool),
			schedule.WithPanicHandler(func(id schedule.TaskID, v any) {
				mu.Lock()
				handled[id]++
				values[v] = true
				mu.Unlock()
			}))
		rep, err := s.Schedule(func() { panic("repeating") }, 10*time.Millisecond)
		require.NoError(t, err)
		var oneShots []schedule.TaskID
		for i := range 5 {
			id, err := s.ScheduleOne(func() { panic(fmt.Errorf("one-shot %d", i)) }, time.Duration(i+1)*time.Millisecond)
			require.NoError(t, err)
			oneShots = append(oneShots, id)
		}
		var ok atomic.Int32
		_, err = s.Schedule(func() { ok.Add(1) }, 10*time.Millisecond)
		require.NoError(t, err)

		time.Sleep(time.Second)
		synctest.Wait()

		st := s.Stats()
		assert.Equal(t, uint64(105), st.Panics)
		assert.Equal(t, uint64(205), st.Fired)
		assert.Equal(t, int32(100), ok.Load(), "the ordinary task kept its schedule")
		assert.Equal(t, 2, s.Len(), "both repeating tasks are still pending")
		mu.Lock()
		assert.Equal(t, 100, handled[rep], "handler calls for the repeating task")
		for _, id := range oneShots {
			assert.Equal(t, 1, handled[id], "handler calls for one-shot %#x", id)
		}
		assert.Len(t, handled, 6, "no handler call names another task")
		assert.True(t, values["repeating"], "the handler gets the panic value")
		mu.Unlock()

		assert.Equal(t, 2, pool.Cap(), "the pool keeps its size")
		assert.False(t, pool.IsClosed(), "the scheduler never releases a pool it was given")
		var direct atomic.Bool
		require.NoError(t, pool.Submit(func() { direct.Store(true) }))
		synctest.Wait()
		assert.True(t, direct.Load(), "the pool still runs jobs")
		assert.True(t, s.CancelTask(rep))
	})
}

// TestPanicWithoutHandlerIsLogged checks the default: the panic is logged
// with the task's ID, and the scheduler carries on.
func TestPanicWithoutHandlerIsLogged(t *testing.T) {
	var buf bytes.Buffer
	var mu sync.Mutex
	prev, flags := log.Writer(), log.Flags()
	log.SetOutput(logSink(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return buf.Write(p)
	}))
	log.SetFlags(0)
	t.Cleanup(func() { log.SetOutput(prev); log.SetFlags(flags) })

	bubblePerStrategy(t, func(t *testing.T, strategy schedule.CancelStrategy) {
		s := newBubbleScheduler(t, strategy, 1)
		id, err := s.ScheduleOne(func() { panic("boom") }, time.Millisecond)
		require.NoError(t, err)
		var ran atomic.Bool
		_, err = s.ScheduleOne(func() { ran.Store(true) }, 2*time.Millisecond)
		require.NoError(t, err)
		time.Sleep(10 * time.Millisecond)
		synctest.Wait()
		assert.True(t, ran.Load(), "the next job still ran")
		assert.Equal(t, uint64(1), s.Stats().Panics)
		mu.Lock()
		defer mu.Unlock()
		assert.Contains(t, buf.String(), strconv.FormatUint(uint64(id), 10))
		assert.Contains(t, buf.String(), "boom")
	})
}

type logSink func([]byte) (int, error)

func (f logSink) Write(p []byte) (int, error) { return f(p) }

// TestShutdownRacesWithConcurrentCalls hammers a scheduler from many
// goroutines while several others shut it down. Nothing may panic or
// deadlock, no job may start once ShutdownContext has returned, every call
// after it must fail cleanly, and no goroutine may be left behind.
func TestShutdownRacesWithConcurrentCalls(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	rounds := 10
	if testing.Short() {
		rounds = 3
	}
	for _, strategy := range bothStrategies {
		for round := range rounds {
			t.Run(fmt.Sprintf("%v/%d", strategy, round), func(t *testing.T) {
				shutdownRace(t, strategy, uint64(round))
			})
		}
	}
}

func shutdownRace(t *testing.T, strategy schedule.CancelStrategy, seed uint64) {
	s, err := newForStrategy(strategy, 4)
	require.NoError(t, err)

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
	_, err = s.ScheduleOne(job, 0)
	assert.ErrorIs(t, err, schedule.ErrShutdown)
	_, err = s.Schedule(job, time.Millisecond)
	assert.ErrorIs(t, err, schedule.ErrShutdown)
	s.Shutdown()
	assert.NoError(t, s.ShutdownContext(context.Background()), "repeated ShutdownContext")
}

// TestShutdownFromInsideJob shuts the scheduler down from one of its own
// jobs: later tasks never run and every call afterwards fails cleanly.
func TestShutdownFromInsideJob(t *testing.T) {
	bubblePerStrategy(t, func(t *testing.T, strategy schedule.CancelStrategy) {
		s := newBubbleScheduler(t, strategy, 2)
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

		time.Sleep(time.Second)
		synctest.Wait()
		r := <-results
		assert.ErrorIs(t, r.err, schedule.ErrShutdown)
		assert.False(t, r.cancelled, "CancelTask after Shutdown")
		assert.True(t, r.wasDown)
		assert.False(t, later.Load(), "a job started after Shutdown")
		assert.Zero(t, s.Len())
	})
}

// TestShutdownContextFromInsideJobTimesOut documents that a job waiting for
// all jobs to finish waits for itself, so only the context ends the wait;
// the scheduler is shut down all the same.
func TestShutdownContextFromInsideJobTimesOut(t *testing.T) {
	bubblePerStrategy(t, func(t *testing.T, strategy schedule.CancelStrategy) {
		s := newBubbleScheduler(t, strategy, 1)
		errs := make(chan error, 1)
		_, err := s.ScheduleOne(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer cancel()
			errs <- s.ShutdownContext(ctx)
		}, time.Millisecond)
		require.NoError(t, err)
		time.Sleep(time.Second)
		synctest.Wait()
		assert.ErrorIs(t, <-errs, context.DeadlineExceeded)
		assert.True(t, s.IsShutdown())
	})
}

// TestCancelFromInsideJob cancels other tasks and the running task itself
// from inside a job.
func TestCancelFromInsideJob(t *testing.T) {
	bubblePerStrategy(t, func(t *testing.T, strategy schedule.CancelStrategy) {
		s := newBubbleScheduler(t, strategy, 2)
		var otherRan atomic.Bool
		other, err := s.ScheduleOne(func() { otherRan.Store(true) }, 50*time.Millisecond)
		require.NoError(t, err)
		otherRep, err := s.Schedule(func() { otherRan.Store(true) }, 30*time.Millisecond)
		require.NoError(t, err)

		var self atomic.Uint64
		var runs atomic.Int32
		results := make(chan [3]bool, 1)
		id, err := s.Schedule(func() {
			if runs.Add(1) == 2 {
				me := schedule.TaskID(self.Load())
				results <- [3]bool{s.CancelTask(other), s.CancelTask(otherRep), s.CancelTask(me)}
			}
		}, 10*time.Millisecond)
		require.NoError(t, err)
		self.Store(uint64(id))

		time.Sleep(time.Second)
		synctest.Wait()
		assert.Equal(t, [3]bool{true, true, true}, <-results)
		assert.Equal(t, int32(2), runs.Load(), "no run after cancelling itself")
		assert.False(t, otherRan.Load())
		assert.False(t, s.CancelTask(id), "already cancelled")
		assert.Zero(t, s.Len())
		assert.Equal(t, uint64(3), s.Stats().Cancelled)
	})
}

// TestConcurrentResetAndCancelNeverRunATaskTwice races heartbeats and
// cancels from many goroutines against tasks that are coming due, in real
// time. Every one-shot must end exactly one way: it ran once, or one
// CancelTask reported stopping it; never both, never twice, never lost.
// Repeating tasks reset at random must never overlap themselves.
func TestConcurrentResetAndCancelNeverRunATaskTwice(t *testing.T) {
	n := 20_000
	if testing.Short() {
		n = 4_000
	}
	for _, strategy := range bothStrategies {
		t.Run(strategy.String(), func(t *testing.T) {
			s, err := newForStrategy(strategy, 4)
			require.NoError(t, err)
			defer func() { assert.NoError(t, s.ShutdownContext(context.Background())) }()

			runs := make([]atomic.Int32, n)
			cancels := make([]atomic.Int32, n)
			ids := make([]schedule.TaskID, n)
			// A run must not start before the deadline the last successful
			// ScheduleOne or Reset asked for: base-relative nanoseconds.
			base := time.Now()
			notBefore := make([]atomic.Int64, n)
			ranAt := make([]atomic.Int64, n)
			var ended atomic.Int64 // one-shots that ran or were cancelled
			r := rand.New(rand.NewPCG(3, 4))
			for i := range ids {
				delay := time.Duration(r.IntN(5000)) * time.Microsecond
				notBefore[i].Store(int64(time.Since(base) + delay))
				ids[i], err = s.ScheduleOne(func() {
					ranAt[i].Store(int64(time.Since(base)))
					runs[i].Add(1)
					ended.Add(1)
				}, delay)
				require.NoError(t, err)
			}

			const repeating = 8
			var overlaps atomic.Int32
			var repRuns atomic.Int64
			repIDs := make([]schedule.TaskID, repeating)
			for k := range repIDs {
				var active atomic.Bool
				repIDs[k], err = s.Schedule(func() {
					if !active.CompareAndSwap(false, true) {
						overlaps.Add(1)
						return
					}
					repRuns.Add(1)
					time.Sleep(time.Duration(rand.IntN(1500)) * time.Microsecond)
					active.Store(false)
				}, time.Millisecond)
				require.NoError(t, err)
			}

			const mutators = 8
			var wg sync.WaitGroup
			for g := range mutators {
				wg.Add(1)
				go func() {
					defer wg.Done()
					r := rand.New(rand.NewPCG(5, uint64(g)))
					var mine []int // tasks this goroutine still works on
					for i := g; i < n; i += mutators {
						mine = append(mine, i)
					}
					for len(mine) > 0 {
						k := r.IntN(len(mine))
						i := mine[k]
						done := false
						switch p := r.IntN(100); {
						case p < 10:
							if s.CancelTask(ids[i]) {
								cancels[i].Add(1)
								ended.Add(1)
							}
							done = true // ran, or cancelled by this call
						default:
							// False: it has started (or was cancelled).
							delay := time.Duration(r.IntN(3000)) * time.Microsecond
							earliest := int64(time.Since(base) + delay)
							done = !s.Reset(ids[i], delay)
							if !done {
								notBefore[i].Store(earliest)
							}
						}
						if done {
							mine[k] = mine[len(mine)-1]
							mine = mine[:len(mine)-1]
						}
					}
				}()
			}
			// Meanwhile, and for a while after every one-shot has ended,
			// heartbeats move the repeating tasks around while their runs
			// are due, queued or running.
			repDone := make(chan struct{})
			go func() {
				defer close(repDone)
				r := rand.New(rand.NewPCG(6, 6))
				var quiet time.Time // when the one-shots had all ended
				for quiet.IsZero() || time.Since(quiet) < 300*time.Millisecond {
					if quiet.IsZero() && ended.Load() == int64(n) {
						quiet = time.Now()
					}
					time.Sleep(time.Duration(r.IntN(500)) * time.Microsecond)
					assert.True(t, s.Reset(repIDs[r.IntN(repeating)], time.Duration(r.IntN(2000))*time.Microsecond))
				}
			}()
			wg.Wait()
			select {
			case <-repDone:
			case <-time.After(60 * time.Second):
				require.FailNow(t, "one-shots never all ended", "%d of %d", ended.Load(), n)
			}
			for _, id := range repIDs {
				assert.True(t, s.CancelTask(id))
			}
			for wait := time.Now(); ; {
				st := s.Stats()
				if st.Pending == 0 && st.Waiting == 0 && st.Running == 0 {
					break
				}
				require.Less(t, time.Since(wait), 30*time.Second, "tasks never finished: %+v", st)
				time.Sleep(time.Millisecond)
			}
			s.Settle()

			var ran, cancelled int
			for i := range n {
				r, c := runs[i].Load(), cancels[i].Load()
				ran += int(r)
				cancelled += int(c)
				if r+c != 1 {
					assert.Failf(t, "one-shot ended wrongly", "task %d ran %d times and was cancelled %d times", i, r, c)
					break
				}
				if r == 1 && ranAt[i].Load() < notBefore[i].Load() {
					assert.Failf(t, "one-shot ran early", "task %d ran %v before its deadline",
						i, time.Duration(notBefore[i].Load()-ranAt[i].Load()))
					break
				}
			}
			assert.Zero(t, overlaps.Load(), "a repeating task overlapped itself")
			assert.Positive(t, repRuns.Load())
			st := s.Stats()
			assert.Equal(t, uint64(ran)+uint64(repRuns.Load()), st.Fired)
			assert.Equal(t, uint64(cancelled+repeating), st.Cancelled)
			t.Logf("%d one-shots: %d ran, %d cancelled; %d repeating runs, %d skipped", n, ran, cancelled, repRuns.Load(), st.Skipped)
		})
	}
}

// TestNonBlockingPoolOverloadLosesNothing gives the scheduler a pool that
// refuses work when full (ants.WithNonblocking): due jobs are retried until
// a worker is free, none is lost and the order is kept.
func TestNonBlockingPoolOverloadLosesNothing(t *testing.T) {
	const n = 1000
	for _, strategy := range bothStrategies {
		t.Run(strategy.String(), func(t *testing.T) {
			nonBlockingOverload(t, strategy, n)
		})
	}
}

func nonBlockingOverload(t *testing.T, strategy schedule.CancelStrategy, n int) {
	synctest.Test(t, func(t *testing.T) {
		pool, err := ants.NewPool(1, ants.WithNonblocking(true))
		require.NoError(t, err)
		t.Cleanup(func() { assert.NoError(t, pool.ReleaseTimeout(time.Minute)) })
		block, release := blockingJob(t)
		s := newBubbleScheduler(t, strategy, 1, schedule.WithPool(pool))
		_, err = s.ScheduleOne(block, 0)
		require.NoError(t, err)
		var mu sync.Mutex
		var order []int
		for i := range n {
			_, err := s.ScheduleOne(func() {
				mu.Lock()
				order = append(order, i)
				mu.Unlock()
			}, time.Duration(i+1)*time.Millisecond)
			require.NoError(t, err)
		}
		time.Sleep(time.Duration(2*n) * time.Millisecond)
		synctest.Wait()
		assert.Equal(t, n, s.Stats().Waiting)
		release()
		time.Sleep(time.Second) // the dispatcher retries with a back-off
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		require.Len(t, order, n, "no due job is lost")
		assert.True(t, slices.IsSorted(order), "deadline order kept")
		assert.Equal(t, uint64(n+1), s.Stats().Fired)
	})
}

// TestShutdownLeavesNoJobWaiting shuts down while due jobs wait for a
// busy pool: they never start, so Stats must stop reporting them as
// waiting once the scheduler has wound down.
func TestShutdownLeavesNoJobWaiting(t *testing.T) {
	for _, strategy := range bothStrategies {
		t.Run(strategy.String(), func(t *testing.T) {
			// Which way the scheduler winds down depends on goroutine
			// scheduling; repeat to see both.
			for range 20 {
				if !shutdownWithJobsWaiting(t, strategy) {
					return
				}
			}
		})
	}
}

func shutdownWithJobsWaiting(t *testing.T, strategy schedule.CancelStrategy) (ok bool) {
	synctest.Test(t, func(t *testing.T) {
		block, release := blockingJob(t)
		s := newBubbleScheduler(t, strategy, 1)
		_, err := s.ScheduleOne(block, 0)
		require.NoError(t, err)
		var late atomic.Int32
		for i := range 100 {
			_, err := s.ScheduleOne(func() { late.Add(1) }, time.Duration(i+1)*time.Millisecond)
			require.NoError(t, err)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		require.Equal(t, 100, s.Stats().Waiting)

		s.Shutdown()
		release()
		synctest.Wait()
		st := s.Stats()
		ok = assert.Zero(t, late.Load(), "a job started after Shutdown")
		ok = assert.Zero(t, st.Waiting, "jobs dropped by Shutdown still counted as waiting") && ok
		ok = assert.Zero(t, st.Running) && ok
		ok = assert.Equal(t, uint64(1), st.Fired) && ok
	})
	return ok
}

// TestJobsDueTogetherRunInParallel schedules as many slow jobs for the same
// instant as there are workers: they all start at that instant instead of
// one after another.
func TestJobsDueTogetherRunInParallel(t *testing.T) {
	const workers = 4
	bubblePerStrategy(t, func(t *testing.T, strategy schedule.CancelStrategy) {
		s := newBubbleScheduler(t, strategy, workers)
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
		time.Sleep(time.Second)
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		ms := 10 * time.Millisecond
		assert.Equal(t, []time.Duration{ms, ms, ms, ms}, began)
		assert.Zero(t, s.Stats().MaxLateness)
	})
}

// TestIdleWorkerExpiryDoesNotDelayDueJobs runs a task every second on a
// one-worker pool, so that the pool retires its idle worker (after ants'
// default expiry of one second) at the very instant the next run is due.
// Every run must still start on time: a free worker slot must never leave a
// due job waiting.
func TestIdleWorkerExpiryDoesNotDelayDueJobs(t *testing.T) {
	for _, strategy := range bothStrategies {
		t.Run(strategy.String(), func(t *testing.T) {
			// The race it looks for is narrow and decided early in a
			// bubble's life: give it many short chances.
			for range 10 {
				if !runsOnTimeAcrossWorkerExpiry(t, strategy, 5000) {
					return
				}
			}
		})
	}
}

func runsOnTimeAcrossWorkerExpiry(t *testing.T, strategy schedule.CancelStrategy, runs int) (ok bool) {
	synctest.Test(t, func(t *testing.T) {
		s := newBubbleScheduler(t, strategy, 1)
		var n atomic.Int32
		_, err := s.Schedule(func() { n.Add(1) }, time.Second)
		require.NoError(t, err)
		time.Sleep(time.Duration(runs) * time.Second)
		synctest.Wait()
		st := s.Stats()
		ok = assert.Equal(t, int32(runs), n.Load())
		ok = assert.Zero(t, st.MaxLateness, "a run started late") && ok
		ok = assert.Zero(t, st.Skipped, "a run was skipped") && ok
	})
	return ok
}
