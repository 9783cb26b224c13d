package schedule_test

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"weak"

	"github.com/panjf2000/ants/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-schedule/schedule"
	"github.com/go-schedule/schedule/lazycancel"
)

// Tests of the firing path: nothing a job does and nothing a pool does may
// stall it, lose a job silently, or keep a job alive that can no longer run.

// stallSearch schedules, round after round, a job that ends its goroutine
// abnormally followed by a job that counts, on a one-worker scheduler, and
// fails if a counting job does not run within a generous limit. It runs in
// real time: the stall it hunts comes from a lost wake-up between real
// goroutines. Under -race the old firing path stalled within a few
// thousand rounds, every run.
func stallSearch(t *testing.T, strategy schedule.CancelStrategy, bad func(), opts ...schedule.Option) {
	s, err := newForStrategy(strategy, 1, opts...)
	require.NoError(t, err)
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		assert.NoError(t, s.ShutdownContext(ctx))
	}()
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
		limit := time.Now().Add(10 * time.Second)
		for done.Load() < round {
			if time.Now().After(limit) {
				t.Fatalf("round %d: the counting job never ran; stats %+v", round, s.Stats())
			}
			runtime.Gosched()
		}
	}
}

func TestJobEndingItsGoroutineDoesNotStallLaterJobs(t *testing.T) {
	for _, strategy := range bothStrategies {
		t.Run(strategy.String(), func(t *testing.T) {
			stallSearch(t, strategy, func() { runtime.Goexit() })
		})
	}
}

func TestRepanickingHandlerDoesNotStallLaterJobs(t *testing.T) {
	for _, strategy := range bothStrategies {
		t.Run(strategy.String(), func(t *testing.T) {
			stallSearch(t, strategy, func() { panic("boom") },
				schedule.WithPanicHandler(func(_ schedule.TaskID, r any) { panic(r) }),
				schedule.WithPoolOptions(ants.WithPanicHandler(func(any) {})))
		})
	}
}

// Every pairing of concurrent Shutdown and ShutdownContext, hundreds of
// rounds, must be free of data races (the race detector fails the test).
func TestConcurrentShutdownCallsDoNotRace(t *testing.T) {
	calls := map[string]func(s *schedule.Scheduler){
		"Shutdown": func(s *schedule.Scheduler) { s.Shutdown() },
		"ShutdownContext": func(s *schedule.Scheduler) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			assert.NoError(t, s.ShutdownContext(ctx))
		},
	}
	for a, callA := range calls {
		for b, callB := range calls {
			t.Run(a+"+"+b, func(t *testing.T) {
				for range 300 {
					s, err := schedule.New(2)
					require.NoError(t, err)
					_, err = s.ScheduleOne(nop, 0)
					require.NoError(t, err)
					var wg sync.WaitGroup
					wg.Add(2)
					go func() { defer wg.Done(); callA(s) }()
					go func() { defer wg.Done(); callB(s) }()
					wg.Wait()
					callB(s) // and once more, after both
				}
			})
		}
	}
}

func TestWithPoolRejectsABlockingPool(t *testing.T) {
	blocking, err := ants.NewPool(1)
	require.NoError(t, err)
	defer blocking.Release()
	s, err := schedule.New(1, schedule.WithPool(blocking))
	assert.ErrorIs(t, err, schedule.ErrBlockingPool)
	assert.Nil(t, s)

	nonblocking, err := ants.NewPool(1, ants.WithNonblocking(true))
	require.NoError(t, err)
	defer nonblocking.Release()
	s, err = schedule.New(1, schedule.WithPool(nonblocking))
	require.NoError(t, err, "the layout of ants' options has changed: see poolcheck.go")
	s.Shutdown()
}

// A shared pool busy with work that is not the scheduler's: due jobs wait,
// shutdown does not wait for the pool, and the job is counted as dropped.
func TestShutdownDoesNotWaitForAForeignBusyPool(t *testing.T) {
	bubblePerStrategy(t, func(t *testing.T, strategy schedule.CancelStrategy) {
		pool, err := ants.NewPool(1, ants.WithNonblocking(true))
		require.NoError(t, err)
		foreign := make(chan struct{})
		require.NoError(t, pool.Submit(func() { <-foreign }))

		s, err := newForStrategy(strategy, 1, schedule.WithPool(pool))
		require.NoError(t, err)
		_, err = s.ScheduleOne(nop, time.Second)
		require.NoError(t, err)
		advance(time.Second + 10*time.Millisecond)
		assert.Equal(t, 1, s.Stats().Waiting, "the due job waits for the pool")

		start := time.Now()
		assert.NoError(t, s.ShutdownContext(context.Background()))
		assert.Zero(t, time.Since(start), "shutdown returned at once (fake clock)")
		st := s.Stats()
		assert.Zero(t, st.Waiting)
		assert.Equal(t, uint64(1), st.Dropped)
		assert.Zero(t, st.Fired)

		close(foreign)
		require.NoError(t, pool.ReleaseTimeout(time.Minute))
	})
}

// When the shared pool frees up, the waiting job runs without any help:
// the scheduler retries on its own timer.
func TestJobsWaitingForAForeignBusyPoolRunWhenItFrees(t *testing.T) {
	bubblePerStrategy(t, func(t *testing.T, strategy schedule.CancelStrategy) {
		pool, err := ants.NewPool(1, ants.WithNonblocking(true))
		require.NoError(t, err)
		defer func() { require.NoError(t, pool.ReleaseTimeout(time.Minute)) }()
		foreign := make(chan struct{})
		require.NoError(t, pool.Submit(func() { <-foreign }))

		s := newBubbleScheduler(t, strategy, 1, schedule.WithPool(pool))
		ran := make(chan time.Time, 1)
		_, err = s.ScheduleOne(func() { ran <- time.Now() }, time.Second)
		require.NoError(t, err)
		advance(2 * time.Second)
		require.Empty(t, ran)

		freed := time.Now()
		close(foreign)
		advance(10 * time.Millisecond)
		require.Len(t, ran, 1)
		assert.LessOrEqual(t, (<-ran).Sub(freed), 5*time.Millisecond, "retried within the longest back-off")
	})
}

func TestJobsDueOnAReleasedPoolAreCountedAsDropped(t *testing.T) {
	bubblePerStrategy(t, func(t *testing.T, strategy schedule.CancelStrategy) {
		pool, err := ants.NewPool(1, ants.WithNonblocking(true))
		require.NoError(t, err)
		s := newBubbleScheduler(t, strategy, 1, schedule.WithPool(pool))
		for range 3 {
			_, err := s.ScheduleOne(nop, time.Second)
			require.NoError(t, err)
		}
		require.NoError(t, pool.ReleaseTimeout(time.Minute))
		advance(2 * time.Second)
		st := s.Stats()
		assert.Equal(t, uint64(3), st.Dropped)
		assert.Zero(t, st.Fired)
		assert.Zero(t, st.Waiting)
	})
}

func TestShutdownCountsPendingTasksAsDropped(t *testing.T) {
	eachScheduler(t, 1, func(t *testing.T, s *schedule.Scheduler) {
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
		st := s.Stats()
		assert.Equal(t, uint64(6), st.Dropped, "five one-shots and a repeating task; the cancelled one is not dropped")
		assert.Equal(t, uint64(1), st.Cancelled)
		assert.Equal(t, uint64(7), st.Scheduled)
	})
}

// payload stands for what a job captures: a per-device buffer, a
// connection.
type payload struct{ buf [64]byte }

// holding returns a job that holds p, as a job holds what it captures.
func holding(p *payload) func() { return func() { _ = p.buf[0] } }

// collected reports whether the garbage collector has reclaimed the value
// behind p.
func collected[T any](p weak.Pointer[T]) bool {
	for range 5 {
		runtime.GC()
		if p.Value() == nil {
			return true
		}
	}
	return false
}

func TestCancelledTaskLetsItsJobGo(t *testing.T) {
	for _, c := range constructors {
		for _, repeating := range []bool{false, true} {
			name := c.name + "/one-shot"
			if repeating {
				name = c.name + "/repeating"
			}
			t.Run(name, func(t *testing.T) {
				s, err := c.new(1)
				require.NoError(t, err)
				defer s.Shutdown()
				// A second, live task keeps the heap from emptying, so that a
				// lazy tombstone stays in it.
				_, err = s.ScheduleOne(nop, time.Hour)
				require.NoError(t, err)

				p := &payload{}
				w := weak.Make(p)
				job := holding(p)
				var id schedule.TaskID
				if repeating {
					id, err = s.Schedule(job, time.Hour)
				} else {
					id, err = s.ScheduleOne(job, time.Hour)
				}
				require.NoError(t, err)
				p, job = nil, nil
				require.True(t, s.CancelTask(id))
				assert.True(t, collected(w), "the cancelled task's job is still reachable")
			})
		}
	}
}

func TestRepeatingTaskCancelledWhileRunningLetsItsJobGoWhenTheRunEnds(t *testing.T) {
	for _, c := range constructors {
		t.Run(c.name, func(t *testing.T) {
			s, err := c.new(1)
			require.NoError(t, err)
			defer s.Shutdown()
			_, err = s.ScheduleOne(nop, time.Hour)
			require.NoError(t, err)

			started, finish, ended := make(chan struct{}), make(chan struct{}), make(chan struct{})
			p := &payload{}
			w := weak.Make(p)
			var once sync.Once
			hold := holding(p)
			id, err := s.Schedule(func() {
				hold()
				once.Do(func() { close(started); <-finish; close(ended) })
			}, time.Millisecond)
			require.NoError(t, err)
			p = nil
			<-started
			require.True(t, s.CancelTask(id))
			close(finish)
			<-ended
			require.Eventually(t, func() bool { return collected(w) }, 10*time.Second, time.Millisecond,
				"the job is still reachable after its last run ended")
		})
	}
}

func TestShutdownLetsPendingJobsGo(t *testing.T) {
	for _, c := range constructors {
		t.Run(c.name, func(t *testing.T) {
			s, err := c.new(1)
			require.NoError(t, err)
			var ws []weak.Pointer[payload]
			for i := range 100 {
				p := &payload{}
				ws = append(ws, weak.Make(p))
				job := holding(p)
				if i%2 == 0 {
					_, err = s.ScheduleOne(job, time.Hour)
				} else {
					_, err = s.Schedule(job, time.Hour)
				}
				require.NoError(t, err)
			}
			s.Shutdown()
			for i, w := range ws {
				assert.True(t, collected(w), "job %d is reachable after Shutdown", i)
			}
			runtime.KeepAlive(s)
		})
	}
}

// Two goroutines building schedulers from one options slice that has spare
// capacity must not race (the race detector fails the test).
func TestStrategyConstructorsDoNotWriteTheCallersOptions(t *testing.T) {
	opts := make([]schedule.Option, 1, 8)
	opts[0] = schedule.WithPanicHandler(func(schedule.TaskID, any) {})
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				s, err := lazycancel.New(1, opts...)
				if assert.NoError(t, err) {
					s.Shutdown()
				}
			}
		}()
	}
	wg.Wait()
	assert.Len(t, opts, 1)
}

func TestIDsOfOneSchedulerDoNotNameTasksOfAnother(t *testing.T) {
	for _, c := range constructors {
		t.Run(c.name, func(t *testing.T) {
			a, err := c.new(1)
			require.NoError(t, err)
			defer a.Shutdown()
			b, err := c.new(1)
			require.NoError(t, err)
			defer b.Shutdown()
			const n = 1000
			idsA := make([]schedule.TaskID, n)
			for i := range n {
				idsA[i], err = a.ScheduleOne(nop, time.Hour)
				require.NoError(t, err)
				_, err = b.ScheduleOne(nop, time.Hour)
				require.NoError(t, err)
			}
			for _, id := range idsA {
				assert.False(t, b.Reset(id, time.Minute), "b.Reset(%#x) of a's ID", id)
				assert.False(t, b.CancelTask(id), "b.CancelTask(%#x) of a's ID", id)
			}
			assert.Equal(t, n, b.Len())
			assert.Equal(t, n, a.Len())
		})
	}
}

func TestScheduleOneWithHandsTheJobItsIDAndValue(t *testing.T) {
	eachScheduler(t, 1, func(t *testing.T, s *schedule.Scheduler) {
		type got struct {
			id  schedule.TaskID
			arg any
		}
		ch := make(chan got, 4)
		job := func(id schedule.TaskID, arg any) { ch <- got{id, arg} }
		p := &payload{}
		one, err := s.ScheduleOneWith(job, p, time.Second)
		require.NoError(t, err)
		rep, err := s.ScheduleWith(job, "every", 3*time.Second)
		require.NoError(t, err)
		nilArg, err := s.ScheduleOneWith(job, nil, 2*time.Second)
		require.NoError(t, err)
		advance(3 * time.Second)
		require.Len(t, ch, 3)
		assert.Equal(t, got{one, p}, <-ch)
		assert.Equal(t, got{nilArg, nil}, <-ch)
		assert.Equal(t, got{rep, "every"}, <-ch)
		require.True(t, s.CancelTask(rep))

		_, err = s.ScheduleOneWith(nil, p, time.Second)
		assert.ErrorIs(t, err, schedule.ErrNilJob)
		_, err = s.ScheduleWith(nil, p, time.Second)
		assert.ErrorIs(t, err, schedule.ErrNilJob)
		_, err = s.ScheduleWith(job, p, 0)
		assert.ErrorIs(t, err, schedule.ErrInvalidInterval)
	})
}

func TestScheduleOneWithAPointerAllocatesNothing(t *testing.T) {
	s, err := schedule.New(1)
	require.NoError(t, err)
	defer s.Shutdown()
	job := func(schedule.TaskID, any) {}
	p := &payload{}
	// Warm up: the slab and the inbox grow once.
	for range 4096 {
		id, err := s.ScheduleOneWith(job, p, time.Hour)
		require.NoError(t, err)
		s.CancelTask(id)
	}
	allocs := testing.AllocsPerRun(1000, func() {
		id, _ := s.ScheduleOneWith(job, p, time.Hour)
		s.CancelTask(id)
	})
	assert.Zero(t, allocs)
}

// The first of many deadlines due at the same instant starts while the
// owner is still handing the rest over, and all run on at most workers
// goroutines.
func TestManySimultaneousDeadlinesStartPromptlyOnBoundedGoroutines(t *testing.T) {
	bubblePerStrategy(t, func(t *testing.T, strategy schedule.CancelStrategy) {
		const workers, n = 4, 20_000
		s := newBubbleScheduler(t, strategy, workers)
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
		advance(time.Second)
		assert.Equal(t, int64(n), ran.Load())
		assert.LessOrEqual(t, peak.Load(), int64(workers))
		assert.LessOrEqual(t, runtime.NumGoroutine(), before+workers+2, "workers, and the two spare workers of the pool")
		assert.Equal(t, uint64(n), s.Stats().Fired)
	})
}
