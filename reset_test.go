package schedule_test

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-schedule/schedule"
	"github.com/go-schedule/schedule/internal/schedtest"
)

// Tests of Reset: moving a pending task's deadline later or earlier, the
// heartbeat use, and heartbeats racing with cancels and with firing.

func TestResetPostponesAPendingTask(t *testing.T) {
	schedtest.EachStrategy(t, 1, func(t *testing.T, s *schedule.Scheduler) {
		rec := newRecorder()
		id, err := s.ScheduleOne(rec.job, time.Second)
		require.NoError(t, err)
		schedtest.Advance(700 * time.Millisecond)
		require.True(t, s.Reset(id, time.Second))
		schedtest.Advance(time.Second) // past the old deadline
		assert.Equal(t, []time.Duration{1700 * time.Millisecond}, rec.times(), "runs once, at the new deadline only")
		assert.False(t, s.Reset(id, time.Second), "a one-shot that ran is not pending")
	})
}

func TestDeadlinesMovedEarlierRunAtTheirNewInstantsInOrder(t *testing.T) {
	// Moves to less than a second out are requests to the owner; moves
	// further out wait for one pass over the heap. Both kinds interleave.
	schedtest.EachStrategy(t, 1, func(t *testing.T, s *schedule.Scheduler) {
		rec := newRecorder()
		moves := []time.Duration{2 * time.Second, 500 * time.Millisecond, time.Second, 3 * time.Second, 900 * time.Millisecond}
		for _, d := range moves {
			id, err := s.ScheduleOne(rec.job, time.Hour)
			require.NoError(t, err)
			require.True(t, s.Reset(id, d))
		}
		_, err := s.ScheduleOne(rec.job, 1500*time.Millisecond)
		require.NoError(t, err)
		schedtest.Advance(2 * time.Hour)
		assert.Equal(t, []time.Duration{
			500 * time.Millisecond, 900 * time.Millisecond, time.Second,
			1500 * time.Millisecond, 2 * time.Second, 3 * time.Second,
		}, rec.times())
	})
}

func TestResetEarlierThenLaterRunsOnceAtTheLastDeadline(t *testing.T) {
	// The trap: an early-firing path that leaves the old entry live runs
	// the task twice.
	schedtest.EachStrategy(t, 1, func(t *testing.T, s *schedule.Scheduler) {
		rec := newRecorder()
		id, err := s.ScheduleOne(rec.job, 10*time.Second)
		require.NoError(t, err)
		require.True(t, s.Reset(id, time.Second))
		synctest.Wait()
		require.True(t, s.Reset(id, 5*time.Second))
		require.True(t, s.Reset(id, 2*time.Second))
		require.True(t, s.Reset(id, 3*time.Second))
		schedtest.Advance(20 * time.Second)
		assert.Equal(t, []time.Duration{3 * time.Second}, rec.times())
		assert.Equal(t, uint64(1), s.Stats().Started)
	})
}

func TestResetWithNonPositiveDelayRunsAtOnce(t *testing.T) {
	schedtest.EachStrategy(t, 1, func(t *testing.T, s *schedule.Scheduler) {
		rec := newRecorder()
		id, err := s.ScheduleOne(rec.job, time.Hour)
		require.NoError(t, err)
		schedtest.Advance(time.Second)
		require.True(t, s.Reset(id, -time.Second))
		synctest.Wait()
		assert.Equal(t, []time.Duration{time.Second}, rec.times())
	})
}

func TestResetMovesARepeatingTaskAndItContinuesFromThere(t *testing.T) {
	schedtest.EachStrategy(t, 1, func(t *testing.T, s *schedule.Scheduler) {
		rec := newRecorder()
		id, err := s.Schedule(rec.job, time.Second)
		require.NoError(t, err)
		schedtest.Advance(1500 * time.Millisecond)
		require.True(t, s.Reset(id, 300*time.Millisecond))
		schedtest.Advance(3 * time.Second)
		assert.Equal(t, []time.Duration{time.Second, 1800 * time.Millisecond, 2800 * time.Millisecond, 3800 * time.Millisecond}, rec.times())
	})
}

func TestResetOfACancelledTaskReportsFalse(t *testing.T) {
	schedtest.EachStrategy(t, 1, func(t *testing.T, s *schedule.Scheduler) {
		rec := newRecorder()
		id, err := s.ScheduleOne(rec.job, time.Second)
		require.NoError(t, err)
		require.True(t, s.CancelTask(id))
		assert.False(t, s.Reset(id, time.Second))
		schedtest.Advance(3 * time.Second)
		assert.Empty(t, rec.times())
	})
}

func TestHeartbeatsKeepADeviceAliveAndSilenceTimesItOut(t *testing.T) {
	// The use the library is shaped for: every heartbeat pushes the
	// device's timeout out; once heartbeats stop, the timeout fires once.
	const timeout = 5 * time.Second
	schedtest.EachStrategy(t, 4, func(t *testing.T, s *schedule.Scheduler) {
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
			schedtest.Advance(time.Second)
			for d := range devices {
				if sec <= d%30 {
					require.True(t, s.Reset(ids[d], timeout), "device %d at %ds", d, sec)
				}
			}
		}
		schedtest.Advance(10 * time.Second)
		for d := range devices {
			lastBeat := time.Duration(d%30) * time.Second
			assert.Equal(t, int64(lastBeat+timeout)+1, timedOut[d].Load(), "device %d", d)
		}
		stats := s.Stats()
		assert.Equal(t, uint64(devices), stats.Started)
		assert.Equal(t, 0, stats.Pending)
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
	for _, st := range schedtest.Strategies {
		t.Run(st.String(), func(t *testing.T) {
			s := st.Start(t, 4)
			var err error

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
				stats := s.Stats()
				if stats.Pending == 0 && stats.Waiting == 0 && stats.Running == 0 {
					break
				}
				require.Less(t, time.Since(wait), 30*time.Second, "tasks never finished: %+v", stats)
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
			stats := s.Stats()
			assert.Equal(t, uint64(ran)+uint64(repRuns.Load()), stats.Started)
			assert.Equal(t, uint64(cancelled+repeating), stats.Cancelled)
			t.Logf("%d one-shots: %d ran, %d cancelled; %d repeating runs, %d skipped", n, ran, cancelled, repRuns.Load(), stats.Skipped)
		})
	}
}
