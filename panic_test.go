package schedule_test

import (
	"bytes"
	"fmt"
	"log"
	"log/slog"
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
	"github.com/go-schedule/schedule/internal/schedtest"
)

// Tests of panicking jobs: they are isolated from the scheduler, its other
// tasks and its pool, and reported to the panic handler or the logger.

// TestPanickingJobsAreIsolated runs jobs that panic on every run next to an
// ordinary one, on a pool the test owns: panics are counted, the handler
// gets the panicking task's ID and value, no panic reaches the pool (none
// of its workers dies of one), and neither the scheduler nor the pool
// loses anything.
func TestPanickingJobsAreIsolated(t *testing.T) {
	schedtest.EachStrategyBubble(t, func(t *testing.T, st schedtest.Strategy) {
		var poolPanics atomic.Int32
		pool, err := ants.NewPool(2, ants.WithNonblocking(true),
			ants.WithPanicHandler(func(any) { poolPanics.Add(1) }))
		require.NoError(t, err)
		t.Cleanup(func() { assert.NoError(t, pool.ReleaseTimeout(time.Minute)) })

		var mu sync.Mutex
		handled := map[schedule.TaskID]int{}
		values := map[any]bool{}
		s := st.Start(t, 2, schedule.WithPool(pool),
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
		rec := newRecorder()
		_, err = s.Schedule(rec.job, 10*time.Millisecond)
		require.NoError(t, err)

		schedtest.Advance(time.Second)

		stats := s.Stats()
		assert.Equal(t, uint64(105), stats.Panics)
		assert.Equal(t, uint64(205), stats.Started)
		runs := rec.times()
		if assert.Len(t, runs, 100, "the ordinary task kept its schedule") {
			assert.Equal(t, 10*time.Millisecond, runs[0])
			assert.Equal(t, time.Second, runs[99])
		}
		assert.Equal(t, 2, s.Len(), "both repeating tasks are still pending")
		mu.Lock()
		assert.Equal(t, 100, handled[rep], "handler calls for the repeating task")
		for _, id := range oneShots {
			assert.Equal(t, 1, handled[id], "handler calls for one-shot %#x", id)
		}
		assert.Len(t, handled, 6, "no handler call names another task")
		assert.True(t, values["repeating"], "the handler gets the panic value")
		mu.Unlock()

		assert.Zero(t, poolPanics.Load(), "a job's panic reached the pool")
		assert.Equal(t, 2, pool.Cap(), "the pool keeps its size")
		assert.False(t, pool.IsClosed(), "the scheduler never releases a pool it was given")
		var direct atomic.Bool
		require.NoError(t, pool.Submit(func() { direct.Store(true) }))
		synctest.Wait()
		assert.True(t, direct.Load(), "the pool still runs jobs")
		assert.True(t, s.CancelTask(rep))
	})
}

// lockedWriter is an io.Writer into a buffer that jobs and the test share.
type lockedWriter struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// take returns what was written so far and empties the buffer.
func (l *lockedWriter) take() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.buf.String()
	l.buf.Reset()
	return out
}

// TestPanicWithoutHandlerIsLoggedByDefault checks the default: without a
// panic handler or WithLogger, the panic goes to slog.Default() (here
// writing through the log package) with the task's ID, and the scheduler
// carries on.
func TestPanicWithoutHandlerIsLoggedByDefault(t *testing.T) {
	var out lockedWriter
	prev, flags := log.Writer(), log.Flags()
	log.SetOutput(&out)
	log.SetFlags(0)
	t.Cleanup(func() { log.SetOutput(prev); log.SetFlags(flags) })

	schedtest.EachStrategy(t, 1, func(t *testing.T, s *schedule.Scheduler) {
		id, err := s.ScheduleOne(func() { panic("boom") }, time.Millisecond)
		require.NoError(t, err)
		var ran atomic.Bool
		_, err = s.ScheduleOne(func() { ran.Store(true) }, 2*time.Millisecond)
		require.NoError(t, err)
		schedtest.Advance(10 * time.Millisecond)
		assert.True(t, ran.Load(), "the next job still ran")
		assert.Equal(t, uint64(1), s.Stats().Panics)
		logged := out.take()
		assert.Contains(t, logged, strconv.FormatUint(uint64(id), 10))
		assert.Contains(t, logged, "boom")
	})
}

func TestWithLoggerReceivesPanicsOfJobsWithoutAHandler(t *testing.T) {
	var out lockedWriter
	logger := slog.New(slog.NewTextHandler(&out, nil))
	schedtest.EachStrategy(t, 1, func(t *testing.T, s *schedule.Scheduler) {
		id, err := s.ScheduleOne(func() { panic("boom") }, time.Second)
		require.NoError(t, err)
		schedtest.Advance(time.Second)
		logged := out.take()
		assert.Contains(t, logged, "level=ERROR")
		assert.Contains(t, logged, "task="+strconv.FormatUint(uint64(id), 10))
		assert.Contains(t, logged, "panic=boom")
	}, schedule.WithLogger(logger))
}

// A run holds its task until its panic has been reported: while the panic
// handler runs, the repeating task's later deadlines are skipped, not run,
// so a handler that cancels the task stops it before it runs again.
func TestPanicHandlerRunsBeforeTheTasksNextRunCanStart(t *testing.T) {
	schedtest.EachStrategyBubble(t, func(t *testing.T, st schedtest.Strategy) {
		var runs atomic.Int32
		var s *schedule.Scheduler
		s = st.Start(t, 2, schedule.WithPanicHandler(func(id schedule.TaskID, _ any) {
			<-time.After(50 * time.Millisecond) // four more deadlines pass meanwhile
			s.CancelTask(id)
		}))
		_, err := s.Schedule(func() { runs.Add(1); panic("boom") }, 10*time.Millisecond)
		require.NoError(t, err)
		schedtest.Advance(time.Second)
		assert.Equal(t, int32(1), runs.Load(), "a run started while the previous run's panic was reported")
		assert.Equal(t, uint64(1), s.Stats().Panics)
	})
}
