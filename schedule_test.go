package schedule_test

import (
	"context"
	"math"
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
// shuts the scheduler down when f returns.
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
func shutdown(t *testing.T, s *schedule.Scheduler) {
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

// settledStats returns s.Stats() once the owner has applied every request,
// in a synctest bubble: the owner leaves requests for deadlines after its
// next wake-up until then, and a first Stats call has it apply them.
func settledStats(s *schedule.Scheduler) schedule.Stats {
	synctest.Wait()
	s.Stats()
	synctest.Wait()
	return s.Stats()
}

// recorder is a job that notes the fake time of each run, relative to the
// moment the recorder was made.
type recorder struct {
	start time.Time
	mu    sync.Mutex
	runs  []time.Duration
}

func newRecorder() *recorder { return &recorder{start: time.Now()} }

func (r *recorder) job() {
	r.mu.Lock()
	r.runs = append(r.runs, time.Since(r.start))
	r.mu.Unlock()
}

func (r *recorder) times() []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]time.Duration(nil), r.runs...)
}

func nop() {}

func TestNewRejectsNonPositiveWorkers(t *testing.T) {
	for _, c := range constructors {
		for _, workers := range []int{0, -1, math.MinInt} {
			s, err := c.new(workers)
			assert.ErrorIs(t, err, schedule.ErrInvalidWorkers, "%s workers=%d", c.name, workers)
			assert.Nil(t, s)
		}
	}
}

func TestNewRejectsInvalidOptions(t *testing.T) {
	cases := map[string]struct {
		opt  schedule.Option
		want error
	}{
		"nil pool":         {schedule.WithPool(nil), schedule.ErrNilPool},
		"nil logger":       {schedule.WithLogger(nil), schedule.ErrNilLogger},
		"unknown strategy": {schedule.WithCancelStrategy(0), schedule.ErrUnknownStrategy},
		"strategy 9":       {schedule.WithCancelStrategy(9), schedule.ErrUnknownStrategy},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			s, err := schedule.New(1, c.opt)
			assert.ErrorIs(t, err, c.want)
			assert.Nil(t, s)
		})
	}
}

func TestConstructorsSelectTheirStrategy(t *testing.T) {
	want := map[string]schedule.CancelStrategy{
		"default": schedule.LazyCancel,
		"lazy":    schedule.LazyCancel,
		"eager":   schedule.EagerCancel,
	}
	for _, c := range constructors {
		s, err := c.new(1)
		require.NoError(t, err)
		assert.Equal(t, want[c.name], schedule.CancelStrategyOf(s), c.name)
		s.Shutdown()
	}
	// The strategy packages win over an option asking for the other one.
	s, err := lazycancel.New(1, schedule.WithCancelStrategy(schedule.EagerCancel))
	require.NoError(t, err)
	assert.Equal(t, schedule.LazyCancel, schedule.CancelStrategyOf(s))
	s.Shutdown()
}

func TestPoolOptionsReachThePool(t *testing.T) {
	// A panic handler that re-panics lets the panic reach ants, whose own
	// panic handler (passed through WithPoolOptions) must then see it.
	poolSawPanic.Store(0)
	eachScheduler(t, 1, func(t *testing.T, s *schedule.Scheduler) {
		_, err := s.ScheduleOne(func() { panic("boom") }, time.Second)
		require.NoError(t, err)
		advance(time.Second)
		assert.Equal(t, uint64(1), s.Stats().Panics)
	},
		schedule.WithPanicHandler(func(_ schedule.TaskID, r any) { panic(r) }),
		schedule.WithPoolOptions(ants.WithPanicHandler(func(v any) {
			if v != "boom" {
				panic("ants saw an unexpected panic")
			}
			poolSawPanic.Add(1)
		})),
	)
	assert.Equal(t, int64(len(constructors)), poolSawPanic.Load())
}

var poolSawPanic atomic.Int64

func TestWithPoolRunsJobsOnThatPoolAndNeverReleasesIt(t *testing.T) {
	for _, c := range constructors {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				pool, err := ants.NewPool(2, ants.WithNonblocking(true))
				require.NoError(t, err)
				s, err := c.new(1, schedule.WithPool(pool))
				require.NoError(t, err)

				ran := make(chan struct{})
				_, err = s.ScheduleOne(func() {
					assert.Equal(t, 1, pool.Running(), "the job runs on the given pool")
					close(ran)
				}, time.Second)
				require.NoError(t, err)
				advance(time.Second)
				<-ran

				s.Shutdown()
				assert.False(t, pool.IsClosed(), "the scheduler must not release a pool it was given")
				require.NoError(t, pool.Submit(func() {}))
				require.NoError(t, pool.ReleaseTimeout(time.Minute))
			})
		})
	}
}

func TestScheduleOneRunsOnceAtItsDeadline(t *testing.T) {
	delays := []time.Duration{time.Nanosecond, time.Millisecond, 1500 * time.Millisecond, time.Hour, 25 * time.Hour}
	eachScheduler(t, 4, func(t *testing.T, s *schedule.Scheduler) {
		recs := make([]*recorder, len(delays))
		for i, d := range delays {
			recs[i] = newRecorder()
			_, err := s.ScheduleOne(recs[i].job, d)
			require.NoError(t, err)
		}
		advance(26 * time.Hour)
		for i, d := range delays {
			assert.Equal(t, []time.Duration{d}, recs[i].times(), "delay %v", d)
		}
		assert.Equal(t, 0, s.Len())
	})
}

func TestScheduleOneWithNonPositiveDelayRunsAtOnce(t *testing.T) {
	eachScheduler(t, 2, func(t *testing.T, s *schedule.Scheduler) {
		zero, negative := newRecorder(), newRecorder()
		_, err := s.ScheduleOne(zero.job, 0)
		require.NoError(t, err)
		_, err = s.ScheduleOne(negative.job, -time.Hour)
		require.NoError(t, err)
		synctest.Wait()
		assert.Equal(t, []time.Duration{0}, zero.times())
		assert.Equal(t, []time.Duration{0}, negative.times())
	})
}

func TestScheduleOneWithOverflowingDelayNeverComesDue(t *testing.T) {
	eachScheduler(t, 1, func(t *testing.T, s *schedule.Scheduler) {
		var ran atomic.Bool
		id, err := s.ScheduleOne(func() { ran.Store(true) }, math.MaxInt64)
		require.NoError(t, err)
		// Fake time is cheap but not free (the pool ticks every 500ms):
		// a day stands in for forever.
		advance(24 * time.Hour)
		assert.False(t, ran.Load())
		assert.Equal(t, 1, s.Len())
		assert.True(t, s.CancelTask(id), "a task that never comes due is still pending")
	})
}

func TestScheduleRejectsBadInput(t *testing.T) {
	eachScheduler(t, 1, func(t *testing.T, s *schedule.Scheduler) {
		cases := []struct {
			name     string
			call     func() (schedule.TaskID, error)
			expected error
		}{
			{"ScheduleOne nil job", func() (schedule.TaskID, error) { return s.ScheduleOne(nil, time.Second) }, schedule.ErrNilJob},
			{"Schedule nil job", func() (schedule.TaskID, error) { return s.Schedule(nil, time.Second) }, schedule.ErrNilJob},
			{"Schedule zero interval", func() (schedule.TaskID, error) { return s.Schedule(nop, 0) }, schedule.ErrInvalidInterval},
			{"Schedule negative interval", func() (schedule.TaskID, error) { return s.Schedule(nop, -time.Second) }, schedule.ErrInvalidInterval},
		}
		for _, c := range cases {
			id, err := c.call()
			assert.ErrorIs(t, err, c.expected, c.name)
			assert.Zero(t, id, c.name)
		}
		assert.Equal(t, 0, s.Len(), "rejected calls schedule nothing")
	})
}

func TestTaskIDsAreUniqueAndNeverZero(t *testing.T) {
	eachScheduler(t, 8, func(t *testing.T, s *schedule.Scheduler) {
		seen := make(map[schedule.TaskID]bool)
		// Rounds of schedule, fire or cancel, schedule again: slots get
		// reused, IDs must not.
		for round := range 20 {
			var ids []schedule.TaskID
			for i := range 200 {
				id, err := s.ScheduleOne(nop, time.Duration(i%3)*time.Millisecond)
				require.NoError(t, err)
				ids = append(ids, id)
			}
			if round%2 == 0 {
				for _, id := range ids {
					s.CancelTask(id)
				}
			}
			advance(10 * time.Millisecond)
			for _, id := range ids {
				assert.NotZero(t, id)
				assert.False(t, seen[id], "TaskID %d handed out twice", id)
				seen[id] = true
			}
		}
	})
}

func TestScheduleRunsAtFixedRateWithoutDrift(t *testing.T) {
	const periods = 10_000
	const interval = 100 * time.Millisecond
	eachScheduler(t, 2, func(t *testing.T, s *schedule.Scheduler) {
		rec := newRecorder()
		// Each run takes 30% of the interval; the next must still be due at
		// start + k·interval, not at the end of the previous run.
		_, err := s.Schedule(func() { rec.job(); time.Sleep(interval * 3 / 10) }, interval)
		require.NoError(t, err)
		advance(periods*interval + interval/2)
		runs := rec.times()
		require.Len(t, runs, periods)
		for k, at := range runs {
			if !assert.Equal(t, time.Duration(k+1)*interval, at, "run %d", k) {
				break
			}
		}
		assert.Equal(t, uint64(0), s.Stats().Skipped)
	})
}

func TestScheduleSkipsDeadlinesMissedWhileWorkersWereBusy(t *testing.T) {
	eachScheduler(t, 1, func(t *testing.T, s *schedule.Scheduler) {
		rec := newRecorder()
		// The only worker is busy until 1050ms; the task's runs due at
		// 100ms..1000ms cannot start. When the worker frees up the task runs
		// once, then goes on at 1100ms: no burst of ten catch-up runs.
		_, err := s.ScheduleOne(func() { time.Sleep(1050 * time.Millisecond) }, 0)
		require.NoError(t, err)
		_, err = s.Schedule(rec.job, 100*time.Millisecond)
		require.NoError(t, err)
		advance(1250 * time.Millisecond)
		assert.Equal(t, []time.Duration{1050 * time.Millisecond, 1100 * time.Millisecond, 1200 * time.Millisecond}, rec.times())
		assert.Equal(t, uint64(9), s.Stats().Skipped, "deadlines 200ms..1000ms were skipped")
	})
}

func TestScheduleNeverOverlapsItself(t *testing.T) {
	eachScheduler(t, 4, func(t *testing.T, s *schedule.Scheduler) {
		rec := newRecorder()
		var running, most atomic.Int32
		// Each run takes 2.5 intervals: the two deadlines that arrive while
		// it runs are skipped, and no two runs overlap.
		_, err := s.Schedule(func() {
			n := running.Add(1)
			if n > most.Load() {
				most.Store(n)
			}
			rec.job()
			time.Sleep(250 * time.Millisecond)
			running.Add(-1)
		}, 100*time.Millisecond)
		require.NoError(t, err)
		advance(1050 * time.Millisecond)
		assert.Equal(t, int32(1), most.Load())
		assert.Equal(t, []time.Duration{100 * time.Millisecond, 400 * time.Millisecond, 700 * time.Millisecond, 1000 * time.Millisecond}, rec.times())
		assert.Equal(t, uint64(6), s.Stats().Skipped)
	})
}

func TestCancelTaskStopsAPendingOneShot(t *testing.T) {
	eachScheduler(t, 1, func(t *testing.T, s *schedule.Scheduler) {
		rec := newRecorder()
		id, err := s.ScheduleOne(rec.job, time.Second)
		require.NoError(t, err)
		require.Equal(t, 1, s.Len())
		assert.True(t, s.CancelTask(id))
		assert.Equal(t, 0, s.Len())
		assert.False(t, s.CancelTask(id), "a second cancel reports false")
		advance(2 * time.Second)
		assert.Empty(t, rec.times())
		st := s.Stats()
		assert.Equal(t, uint64(1), st.Cancelled)
		assert.Equal(t, uint64(0), st.Fired)
	})
}

func TestCancelTaskReportsFalseWhenThereIsNothingToStop(t *testing.T) {
	eachScheduler(t, 1, func(t *testing.T, s *schedule.Scheduler) {
		fired, err := s.ScheduleOne(nop, time.Millisecond)
		require.NoError(t, err)
		advance(time.Second)
		cases := map[string]schedule.TaskID{
			"zero":               0,
			"never handed out":   schedule.TaskID(1<<32 | 12345),
			"slot beyond any":    schedule.TaskID(7<<32 | math.MaxUint32),
			"finished one-shot":  fired,
			"generation 0 of it": fired & math.MaxUint32,
		}
		for name, id := range cases {
			assert.False(t, s.CancelTask(id), name)
			assert.False(t, s.Reset(id, time.Second), name)
		}
		assert.Equal(t, uint64(0), s.Stats().Cancelled)
	})
}

func TestCancelTaskDoesNotStopAOneShotThatStarted(t *testing.T) {
	eachScheduler(t, 1, func(t *testing.T, s *schedule.Scheduler) {
		var finished atomic.Bool
		id, err := s.ScheduleOne(func() { time.Sleep(time.Second); finished.Store(true) }, time.Second)
		require.NoError(t, err)
		advance(1500 * time.Millisecond) // the job is running
		assert.False(t, s.CancelTask(id))
		assert.False(t, s.Reset(id, time.Hour))
		advance(time.Second)
		assert.True(t, finished.Load())
	})
}

func TestCancelTaskStopsARepeatingTaskFromInsideItsJob(t *testing.T) {
	eachScheduler(t, 2, func(t *testing.T, s *schedule.Scheduler) {
		rec := newRecorder()
		var id schedule.TaskID
		var cancelled atomic.Bool
		idSet := make(chan struct{})
		var err error
		id, err = s.Schedule(func() {
			<-idSet
			rec.job()
			if len(rec.times()) == 3 {
				cancelled.Store(s.CancelTask(id))
			}
		}, time.Second)
		require.NoError(t, err)
		close(idSet)
		advance(10 * time.Second)
		assert.True(t, cancelled.Load())
		assert.Equal(t, []time.Duration{time.Second, 2 * time.Second, 3 * time.Second}, rec.times())
		assert.Equal(t, 0, s.Len())
	})
}

func TestCancelTaskStopsARepeatingTaskWhileItRuns(t *testing.T) {
	eachScheduler(t, 2, func(t *testing.T, s *schedule.Scheduler) {
		rec := newRecorder()
		id, err := s.Schedule(func() { rec.job(); time.Sleep(500 * time.Millisecond) }, time.Second)
		require.NoError(t, err)
		advance(1200 * time.Millisecond) // first run in progress
		assert.True(t, s.CancelTask(id), "cancel does not wait for the run")
		advance(5 * time.Second)
		assert.Equal(t, []time.Duration{time.Second}, rec.times())
		assert.False(t, s.Reset(id, time.Second))
	})
}

func TestResetPostponesAPendingTask(t *testing.T) {
	eachScheduler(t, 1, func(t *testing.T, s *schedule.Scheduler) {
		rec := newRecorder()
		id, err := s.ScheduleOne(rec.job, time.Second)
		require.NoError(t, err)
		advance(700 * time.Millisecond)
		require.True(t, s.Reset(id, time.Second))
		advance(time.Second) // past the old deadline
		assert.Equal(t, []time.Duration{1700 * time.Millisecond}, rec.times(), "runs once, at the new deadline only")
		assert.False(t, s.Reset(id, time.Second), "a one-shot that ran is not pending")
	})
}

func TestResetBringsAPendingTaskForward(t *testing.T) {
	eachScheduler(t, 1, func(t *testing.T, s *schedule.Scheduler) {
		rec := newRecorder()
		id, err := s.ScheduleOne(rec.job, time.Hour)
		require.NoError(t, err)
		require.True(t, s.Reset(id, time.Second))
		advance(2 * time.Hour)
		assert.Equal(t, []time.Duration{time.Second}, rec.times())
	})
}

func TestDeadlinesMovedEarlierRunAtTheirNewInstantsInOrder(t *testing.T) {
	// Moves to less than a second out are requests to the owner; moves
	// further out wait for one pass over the heap. Both kinds interleave.
	eachScheduler(t, 1, func(t *testing.T, s *schedule.Scheduler) {
		rec := newRecorder()
		moves := []time.Duration{2 * time.Second, 500 * time.Millisecond, time.Second, 3 * time.Second, 900 * time.Millisecond}
		for _, d := range moves {
			id, err := s.ScheduleOne(rec.job, time.Hour)
			require.NoError(t, err)
			require.True(t, s.Reset(id, d))
		}
		_, err := s.ScheduleOne(rec.job, 1500*time.Millisecond)
		require.NoError(t, err)
		advance(2 * time.Hour)
		assert.Equal(t, []time.Duration{
			500 * time.Millisecond, 900 * time.Millisecond, time.Second,
			1500 * time.Millisecond, 2 * time.Second, 3 * time.Second,
		}, rec.times())
	})
}

func TestResetEarlierThenLaterRunsOnceAtTheLastDeadline(t *testing.T) {
	// The trap: an early-firing path that leaves the old entry live runs
	// the task twice.
	eachScheduler(t, 1, func(t *testing.T, s *schedule.Scheduler) {
		rec := newRecorder()
		id, err := s.ScheduleOne(rec.job, 10*time.Second)
		require.NoError(t, err)
		require.True(t, s.Reset(id, time.Second))
		synctest.Wait()
		require.True(t, s.Reset(id, 5*time.Second))
		require.True(t, s.Reset(id, 2*time.Second))
		require.True(t, s.Reset(id, 3*time.Second))
		advance(20 * time.Second)
		assert.Equal(t, []time.Duration{3 * time.Second}, rec.times())
		assert.Equal(t, uint64(1), s.Stats().Fired)
	})
}

func TestResetWithNonPositiveDelayRunsAtOnce(t *testing.T) {
	eachScheduler(t, 1, func(t *testing.T, s *schedule.Scheduler) {
		rec := newRecorder()
		id, err := s.ScheduleOne(rec.job, time.Hour)
		require.NoError(t, err)
		advance(time.Second)
		require.True(t, s.Reset(id, -time.Second))
		synctest.Wait()
		assert.Equal(t, []time.Duration{time.Second}, rec.times())
	})
}

func TestResetMovesARepeatingTaskAndItContinuesFromThere(t *testing.T) {
	eachScheduler(t, 1, func(t *testing.T, s *schedule.Scheduler) {
		rec := newRecorder()
		id, err := s.Schedule(rec.job, time.Second)
		require.NoError(t, err)
		advance(1500 * time.Millisecond)
		require.True(t, s.Reset(id, 300*time.Millisecond))
		advance(3 * time.Second)
		assert.Equal(t, []time.Duration{time.Second, 1800 * time.Millisecond, 2800 * time.Millisecond, 3800 * time.Millisecond}, rec.times())
	})
}

func TestResetOfACancelledTaskReportsFalse(t *testing.T) {
	eachScheduler(t, 1, func(t *testing.T, s *schedule.Scheduler) {
		rec := newRecorder()
		id, err := s.ScheduleOne(rec.job, time.Second)
		require.NoError(t, err)
		require.True(t, s.CancelTask(id))
		assert.False(t, s.Reset(id, time.Second))
		advance(3 * time.Second)
		assert.Empty(t, rec.times())
	})
}

func TestHeartbeatsKeepADeviceAliveAndSilenceTimesItOut(t *testing.T) {
	// The use the library is shaped for: every heartbeat pushes the
	// device's timeout out; once heartbeats stop, the timeout fires once.
	const timeout = 5 * time.Second
	eachScheduler(t, 4, func(t *testing.T, s *schedule.Scheduler) {
		start := time.Now()
		const devices = 100
		var timedOut [devices]atomic.Int64 // fake time of the timeout, +1
		ids := make([]schedule.TaskID, devices)
		for d := range devices {
			id, err := s.ScheduleOne(func() { timedOut[d].Store(int64(time.Since(start)) + 1) }, timeout)
			require.NoError(t, err)
			ids[d] = id
		}
		// Device d heartbeats every second until second d%30, then stops.
		for sec := 1; sec <= 40; sec++ {
			advance(time.Second)
			for d := range devices {
				if sec <= d%30 {
					require.True(t, s.Reset(ids[d], timeout), "device %d at %ds", d, sec)
				}
			}
		}
		advance(10 * time.Second)
		for d := range devices {
			lastBeat := time.Duration(d%30) * time.Second
			assert.Equal(t, int64(lastBeat+timeout)+1, timedOut[d].Load(), "device %d", d)
		}
		st := s.Stats()
		assert.Equal(t, uint64(devices), st.Fired)
		assert.Equal(t, 0, st.Pending)
	})
}

func TestLenCountsPendingTasksOnly(t *testing.T) {
	eachScheduler(t, 2, func(t *testing.T, s *schedule.Scheduler) {
		a, _ := s.ScheduleOne(nop, time.Second)
		_, _ = s.ScheduleOne(nop, 2*time.Second)
		r, _ := s.Schedule(nop, time.Second)
		assert.Equal(t, 3, s.Len())
		s.CancelTask(a)
		assert.Equal(t, 2, s.Len(), "cancelled tasks do not count, tombstone or not")
		advance(5 * time.Second)
		assert.Equal(t, 1, s.Len(), "a repeating task counts until cancelled")
		s.CancelTask(r)
		assert.Equal(t, 0, s.Len())
	})
}

func TestStatsCountFiredCancelledAndHeapEntries(t *testing.T) {
	eachScheduler(t, 2, func(t *testing.T, s *schedule.Scheduler) {
		var ids []schedule.TaskID
		for i := range 100 {
			id, err := s.ScheduleOne(nop, time.Duration(i+1)*time.Second)
			require.NoError(t, err)
			ids = append(ids, id)
		}
		// Adds due after the owner's timer wait in the inbox until something
		// wakes it (inbox.go); Stats does. Once all are in the heap, each
		// lazy cancel leaves a tombstone.
		require.Equal(t, 100, settledStats(s).HeapEntries)
		for _, id := range ids[50:60] {
			require.True(t, s.CancelTask(id))
		}
		st := settledStats(s)
		assert.Equal(t, 90, st.Pending)
		assert.Equal(t, uint64(10), st.Cancelled)
		// 10 tombstones in 100 entries is under the quarter that triggers a
		// rebuild: lazy keeps them, eager removed them.
		if st.Tombstones > 0 {
			assert.Equal(t, 10, st.Tombstones)
			assert.Equal(t, 100, st.HeapEntries)
		} else {
			assert.Equal(t, 90, st.HeapEntries)
		}
		advance(200 * time.Second)
		st = s.Stats()
		assert.Equal(t, uint64(90), st.Fired)
		assert.Equal(t, 0, st.HeapEntries)
		assert.Equal(t, 0, st.Tombstones, "tombstones go once they reach the top")
		assert.Equal(t, 0, st.Waiting)
		assert.Equal(t, time.Duration(0), st.MaxLateness, "fake time: every job starts on time")
	})
}

func TestTombstonesStayUnderAQuarterOfTheHeap(t *testing.T) {
	eachScheduler(t, 2, func(t *testing.T, s *schedule.Scheduler) {
		// Devices with mixed timeouts re-armed by cancel + add, the pattern
		// that makes lazy tombstones pile up.
		const devices = 2000
		ids := make([]schedule.TaskID, devices)
		timeout := func(d int) time.Duration { return time.Duration(30+d%31) * time.Second }
		for d := range devices {
			ids[d], _ = s.ScheduleOne(nop, timeout(d))
		}
		for round := range 50 {
			for d := range devices {
				require.True(t, s.CancelTask(ids[d]))
				id, err := s.ScheduleOne(nop, timeout(d))
				require.NoError(t, err)
				ids[d] = id
			}
			st := settledStats(s)
			require.Equal(t, devices, st.Pending)
			assert.LessOrEqual(t, st.HeapEntries, devices*5/4+1, "round %d", round)
			advance(time.Second)
		}
	})
}

func TestCancelsAloneWakeTheOwnerToDropTheirEntries(t *testing.T) {
	eachScheduler(t, 1, func(t *testing.T, s *schedule.Scheduler) {
		// Cancels from several goroutines, so that they fall on several
		// inbox lanes; nothing else happens that would wake the owner
		// (Stats wakes it only for requests, and lazy cancels send none).
		const tasks, cancellers, each = 4000, 4, 400
		ids := make([]schedule.TaskID, tasks)
		for i := range ids {
			var err error
			ids[i], err = s.ScheduleOne(nop, time.Hour+time.Duration(i)*time.Millisecond)
			require.NoError(t, err)
		}
		require.Equal(t, tasks, settledStats(s).HeapEntries)
		var wg sync.WaitGroup
		for c := range cancellers {
			wg.Go(func() {
				for _, id := range ids[c*each : (c+1)*each] {
					assert.True(t, s.CancelTask(id))
				}
			})
		}
		wg.Wait()
		synctest.Wait()
		st := s.Stats()
		live := tasks - cancellers*each
		assert.Equal(t, live, st.Pending)
		assert.LessOrEqual(t, st.HeapEntries, live*5/4+1, "a fifth of the heap is tombstones and the owner slept on")
	})
}

func TestMovingDeadlinesEarlierLeavesBoundedTombstones(t *testing.T) {
	eachScheduler(t, 1, func(t *testing.T, s *schedule.Scheduler) {
		rec := newRecorder()
		id, err := s.ScheduleOne(rec.job, time.Hour)
		require.NoError(t, err)
		others := 100
		for i := range others {
			_, err := s.ScheduleOne(nop, time.Duration(2+i)*time.Hour)
			require.NoError(t, err)
		}
		for i := range 10_000 {
			require.True(t, s.Reset(id, time.Hour-time.Duration(i)*time.Millisecond))
			if i%100 == 0 {
				assert.LessOrEqual(t, settledStats(s).HeapEntries, (others+1)*5/4+1)
			}
		}
		advance(time.Hour)
		assert.Equal(t, []time.Duration{time.Hour - 9999*time.Millisecond}, rec.times())
	})
}

func TestDueJobsWaitInDeadlineOrderWhileWorkersAreBusy(t *testing.T) {
	eachScheduler(t, 1, func(t *testing.T, s *schedule.Scheduler) {
		release := make(chan struct{})
		_, err := s.ScheduleOne(func() { <-release }, 0)
		require.NoError(t, err)
		synctest.Wait()

		const n = 1000
		var mu sync.Mutex
		var order []int
		for i := n - 1; i >= 0; i-- { // scheduled in reverse, due in order
			_, err := s.ScheduleOne(func() { mu.Lock(); order = append(order, i); mu.Unlock() }, time.Duration(i+1)*time.Millisecond)
			require.NoError(t, err)
		}
		advance(2 * time.Second)
		st := s.Stats()
		assert.Equal(t, n, st.Waiting, "all due, none started, none dropped")
		assert.Equal(t, 0, st.Pending)

		// Scheduling calls do not wait for the pool.
		id, err := s.ScheduleOne(nop, time.Hour)
		require.NoError(t, err)
		assert.True(t, s.Reset(id, 2*time.Hour))
		assert.True(t, s.CancelTask(id))

		close(release)
		synctest.Wait()
		require.Len(t, order, n)
		for i, v := range order {
			if !assert.Equal(t, i, v, "deadline order") {
				break
			}
		}
		assert.Equal(t, 0, s.Stats().Waiting)
		assert.Equal(t, 2*time.Second-time.Millisecond, s.Stats().MaxLateness)
	})
}

func TestPanickingJobIsIsolated(t *testing.T) {
	for _, c := range constructors {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				pool, err := ants.NewPool(1, ants.WithNonblocking(true))
				require.NoError(t, err)
				var mu sync.Mutex
				got := map[schedule.TaskID]int{}
				s, err := c.new(1, schedule.WithPool(pool), schedule.WithPanicHandler(func(id schedule.TaskID, r any) {
					assert.Equal(t, "boom", r)
					mu.Lock()
					got[id]++
					mu.Unlock()
				}))
				require.NoError(t, err)

				bad, err := s.Schedule(func() { panic("boom") }, time.Second)
				require.NoError(t, err)
				rec := newRecorder()
				_, err = s.ScheduleOne(rec.job, 3500*time.Millisecond)
				require.NoError(t, err)
				// The shared pool purges idle workers every second; when a purge
				// and a deadline coincide, the pool refuses the run for a moment
				// and the scheduler retries after its back-off (at most 5 ms).
				advance(5*time.Second + 5*time.Millisecond)

				assert.Equal(t, map[schedule.TaskID]int{bad: 5}, got, "handler called with the task's ID, every run; %+v", s.Stats())
				assert.Equal(t, []time.Duration{3500 * time.Millisecond}, rec.times(), "other jobs still run")
				assert.Equal(t, uint64(5), s.Stats().Panics)
				assert.Equal(t, 1, pool.Running(), "the worker survived: the pool did not shrink")
				assert.Equal(t, 1, s.Len(), "the repeating task keeps repeating")

				shutdown(t, s)
				require.NoError(t, pool.ReleaseTimeout(time.Minute))
			})
		})
	}
}

func TestShutdownDropsPendingTasksAndRejectsCalls(t *testing.T) {
	eachScheduler(t, 2, func(t *testing.T, s *schedule.Scheduler) {
		rec := newRecorder()
		one, err := s.ScheduleOne(rec.job, time.Second)
		require.NoError(t, err)
		rep, err := s.Schedule(rec.job, time.Second)
		require.NoError(t, err)
		require.False(t, s.IsShutdown())

		s.Shutdown()
		s.Shutdown() // idempotent
		assert.True(t, s.IsShutdown())
		advance(5 * time.Second)
		assert.Empty(t, rec.times(), "no job starts after Shutdown")
		assert.Equal(t, 0, s.Len())

		_, err = s.ScheduleOne(nop, time.Second)
		assert.ErrorIs(t, err, schedule.ErrShutdown)
		_, err = s.Schedule(nop, time.Second)
		assert.ErrorIs(t, err, schedule.ErrShutdown)
		for _, id := range []schedule.TaskID{one, rep} {
			assert.False(t, s.CancelTask(id))
			assert.False(t, s.Reset(id, time.Second))
		}
	})
}

func TestShutdownFromInsideAJob(t *testing.T) {
	eachScheduler(t, 2, func(t *testing.T, s *schedule.Scheduler) {
		rec := newRecorder()
		_, err := s.ScheduleOne(func() { s.Shutdown(); rec.job() }, time.Second)
		require.NoError(t, err)
		_, err = s.ScheduleOne(rec.job, 2*time.Second)
		require.NoError(t, err)
		advance(3 * time.Second)
		assert.Equal(t, []time.Duration{time.Second}, rec.times(), "the calling job finishes; later ones never start")
		assert.True(t, s.IsShutdown())
	})
}

func TestShutdownContextWaitsForRunningJobs(t *testing.T) {
	eachScheduler(t, 2, func(t *testing.T, s *schedule.Scheduler) {
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
	eachScheduler(t, 2, func(t *testing.T, s *schedule.Scheduler) {
		_, err := s.ScheduleOne(func() { time.Sleep(time.Hour) }, 0)
		require.NoError(t, err)
		synctest.Wait()

		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		start := time.Now()
		assert.ErrorIs(t, s.ShutdownContext(ctx), context.DeadlineExceeded)
		assert.Equal(t, time.Second, time.Since(start))
		assert.True(t, s.IsShutdown())
		advance(time.Hour) // let the job end before the bubble does
	})
}

func TestShutdownRacesSafelyWithEveryMethod(t *testing.T) {
	// Real time and real concurrency: the race detector and goleak do the
	// checking, plus the rule that nothing starts once Shutdown returned.
	for _, c := range constructors {
		t.Run(c.name, func(t *testing.T) {
			s, err := c.new(4)
			require.NoError(t, err)
			var stopped atomic.Bool
			var late atomic.Int64
			job := func() {
				if stopped.Load() {
					late.Add(1)
				}
			}
			var wg sync.WaitGroup
			for g := range 8 {
				wg.Go(func() {
					for i := 0; ; i++ {
						id, err := s.ScheduleOne(job, time.Duration(i%5)*time.Microsecond)
						if err != nil {
							assert.ErrorIs(t, err, schedule.ErrShutdown)
							return
						}
						switch (g + i) % 3 {
						case 0:
							s.CancelTask(id)
						case 1:
							s.Reset(id, time.Microsecond)
						}
						_ = s.Len()
						_ = s.Stats()
					}
				})
			}
			time.Sleep(20 * time.Millisecond)
			var sw sync.WaitGroup
			sw.Go(s.Shutdown)
			sw.Go(s.Shutdown)
			sw.Go(func() { assert.NoError(t, s.ShutdownContext(context.Background())) })
			sw.Wait()
			// ShutdownContext returned: every job that started has finished,
			// and none may start from now on.
			stopped.Store(true)
			wg.Wait()
			time.Sleep(10 * time.Millisecond)
			assert.Zero(t, late.Load(), "a job started after Shutdown returned")
		})
	}
}
