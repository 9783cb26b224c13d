package schedule_test

import (
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
	"time"
	"weak"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-schedule/schedule"
	"github.com/go-schedule/schedule/internal/schedtest"
)

// Tests of memory: a job that can no longer run is not kept reachable, the
// hot paths allocate nothing, and lazy cancel's tombstones stay bounded.

// payload stands for what a job captures: a per-device buffer, a
// connection.
type payload struct{ buf [64]byte }

// holding returns a job that holds p, as a job holds what it captures.
func holding(p *payload) func() { return func() { _ = p.buf[0] } }

// touch is a job of ScheduleOneWith and ScheduleWith that uses its
// argument, a *payload, as holding's jobs use what they capture.
func touch(_ schedule.TaskID, arg any) { _ = arg.(*payload).buf[0] }

// scheduleHolding schedules a task, due in an hour, that holds p: a
// closure that captures it, or (with) touch with p as its argument.
func scheduleHolding(s *schedule.Scheduler, p *payload, repeating, with bool) (schedule.TaskID, error) {
	switch {
	case with && repeating:
		return s.ScheduleWith(touch, p, time.Hour)
	case with:
		return s.ScheduleOneWith(touch, p, time.Hour)
	case repeating:
		return s.Schedule(holding(p), time.Hour)
	default:
		return s.ScheduleOne(holding(p), time.Hour)
	}
}

// holdingKinds names the ways scheduleHolding holds a payload.
var holdingKinds = []struct {
	name            string
	repeating, with bool
}{
	{"one-shot", false, false},
	{"repeating", true, false},
	{"one-shot-with", false, true},
	{"repeating-with", true, true},
}

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
	for _, st := range schedtest.Strategies {
		for _, k := range holdingKinds {
			t.Run(st.String()+"/"+k.name, func(t *testing.T) {
				s := st.Start(t, 1)
				// A second, live task keeps the heap from emptying, so that a
				// lazy tombstone stays in it.
				_, err := s.ScheduleOne(nop, time.Hour)
				require.NoError(t, err)

				p := &payload{}
				w := weak.Make(p)
				id, err := scheduleHolding(s, p, k.repeating, k.with)
				require.NoError(t, err)
				p = nil
				require.True(t, s.CancelTask(id))
				assert.True(t, collected(w), "the cancelled task's job is still reachable")
			})
		}
	}
}

func TestRepeatingTaskCancelledWhileRunningLetsItsJobGoWhenTheRunEnds(t *testing.T) {
	for _, st := range schedtest.Strategies {
		t.Run(st.String(), func(t *testing.T) {
			s := st.Start(t, 1)
			_, err := s.ScheduleOne(nop, time.Hour)
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
	for _, st := range schedtest.Strategies {
		t.Run(st.String(), func(t *testing.T) {
			s := st.Start(t, 1)
			var ws []weak.Pointer[payload]
			for i := range 100 {
				p := &payload{}
				ws = append(ws, weak.Make(p))
				k := holdingKinds[i%len(holdingKinds)]
				_, err := scheduleHolding(s, p, k.repeating, k.with)
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

func TestFiredOneShotLetsItsArgumentGo(t *testing.T) {
	for _, st := range schedtest.Strategies {
		t.Run(st.String(), func(t *testing.T) {
			s := st.Start(t, 1)
			p := &payload{}
			w := weak.Make(p)
			ran := make(chan struct{})
			_, err := s.ScheduleOneWith(func(id schedule.TaskID, arg any) {
				touch(id, arg)
				close(ran)
			}, p, 0)
			require.NoError(t, err)
			p = nil
			<-ran
			require.Eventually(t, func() bool { return collected(w) }, 10*time.Second, time.Millisecond,
				"the argument is still reachable after the job ran")
		})
	}
}

func TestScheduleOneWithAPointerAllocatesNothing(t *testing.T) {
	for _, st := range schedtest.Strategies {
		t.Run(st.String(), func(t *testing.T) {
			s := st.Start(t, 1)
			job := func(schedule.TaskID, any) {}
			p := &payload{}
			// Warm up: the slab and the inbox grow once.
			for range 4096 {
				id, err := s.ScheduleOneWith(job, p, time.Hour)
				require.NoError(t, err)
				require.True(t, s.CancelTask(id))
			}
			allocs := testing.AllocsPerRun(1000, func() {
				id, _ := s.ScheduleOneWith(job, p, time.Hour)
				s.CancelTask(id)
			})
			assert.Zero(t, allocs)
		})
	}
}

// TestResetAllocatesNothing checks the heartbeat path: Reset postponing a
// deadline, or moving it earlier to a second or more ahead, allocates
// nothing.
func TestResetAllocatesNothing(t *testing.T) {
	for _, st := range schedtest.Strategies {
		t.Run(st.String(), func(t *testing.T) {
			s := st.Start(t, 1)
			id, err := s.ScheduleOne(nop, time.Hour)
			require.NoError(t, err)
			later := false
			allocs := testing.AllocsPerRun(1000, func() {
				later = !later
				d := time.Hour // earlier than 2 h, far ahead
				if later {
					d = 2 * time.Hour
				}
				s.Reset(id, d)
			})
			assert.Zero(t, allocs)
			assert.True(t, s.Reset(id, time.Hour), "the task is still pending")
		})
	}
}

func TestTombstonesStayUnderAQuarterOfTheHeap(t *testing.T) {
	schedtest.EachStrategy(t, 2, func(t *testing.T, s *schedule.Scheduler) {
		// Devices with mixed timeouts re-armed by cancel + add, the pattern
		// that makes lazy tombstones pile up.
		const devices = 2000
		ids := make([]schedule.TaskID, devices)
		timeout := func(d int) time.Duration { return time.Duration(30+d%31) * time.Second }
		for d := range devices {
			var err error
			ids[d], err = s.ScheduleOne(nop, timeout(d))
			require.NoError(t, err)
		}
		for round := range 50 {
			for d := range devices {
				require.True(t, s.CancelTask(ids[d]))
				id, err := s.ScheduleOne(nop, timeout(d))
				require.NoError(t, err)
				ids[d] = id
			}
			stats := settledStats(s)
			require.Equal(t, devices, stats.Pending)
			assert.LessOrEqual(t, stats.HeapEntries, devices*5/4+1, "round %d", round)
			schedtest.Advance(time.Second)
		}
	})
}

func TestCancelsAloneWakeTheOwnerToDropTheirEntries(t *testing.T) {
	schedtest.EachStrategy(t, 1, func(t *testing.T, s *schedule.Scheduler) {
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
		stats := s.Stats()
		live := tasks - cancellers*each
		assert.Equal(t, live, stats.Pending)
		assert.LessOrEqual(t, stats.HeapEntries, live*5/4+1, "a fifth of the heap is tombstones and the owner slept on")
	})
}

// TestMovingDeadlinesEarlierLeavesBoundedTombstones moves one deadline
// earlier again and again, each time to less than a second ahead, so that
// each move is a request to the owner: with lazy cancel the entry it
// replaces stays behind as a tombstone. The heap must stay within a quarter
// over the live tasks, and the task must run once, at its last deadline.
func TestMovingDeadlinesEarlierLeavesBoundedTombstones(t *testing.T) {
	const (
		others = 100
		live   = others + 1
		moves  = 10_000
		step   = 50 * time.Microsecond
		first  = 900 * time.Millisecond // under a second: every move is a request
	)
	schedtest.EachStrategy(t, 1, func(t *testing.T, s *schedule.Scheduler) {
		rec := newRecorder()
		id, err := s.ScheduleOne(rec.job, time.Hour)
		require.NoError(t, err)
		for i := range others {
			_, err := s.ScheduleOne(nop, time.Duration(2+i)*time.Hour)
			require.NoError(t, err)
		}
		mostTombstones := 0
		for i := range moves {
			require.True(t, s.Reset(id, first-time.Duration(i)*step))
			// Let the owner apply each move on its own: moves applied in
			// one batch may be followed by a rebuild before a check can
			// see their tombstones.
			synctest.Wait()
			if i%100 == 99 {
				stats := settledStats(s)
				require.Equal(t, live, stats.Pending)
				assert.LessOrEqual(t, stats.HeapEntries, live+live/4, "after %d moves", i+1)
				mostTombstones = max(mostTombstones, stats.Tombstones)
			}
		}
		if schedule.CancelStrategyOf(s) == schedule.LazyCancel {
			assert.Positive(t, mostTombstones, "the moves left no tombstones: the test no longer tests the bound")
		} else {
			assert.Zero(t, mostTombstones)
		}
		schedtest.Advance(time.Second)
		assert.Equal(t, []time.Duration{first - (moves-1)*step}, rec.times())
	})
}
