package schedule_test

import (
	"bytes"
	"log/slog"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-schedule/schedule"
)

func TestWithLoggerReceivesPanicsOfJobsWithoutAHandler(t *testing.T) {
	var mu sync.Mutex
	var buf bytes.Buffer
	logger := slog.New(slog.NewTextHandler(lockedWriter{&mu, &buf}, nil))
	eachScheduler(t, 1, func(t *testing.T, s *schedule.Scheduler) {
		id, err := s.ScheduleOne(func() { panic("boom") }, time.Second)
		require.NoError(t, err)
		advance(time.Second)
		mu.Lock()
		defer mu.Unlock()
		out := buf.String()
		buf.Reset()
		assert.Contains(t, out, "level=ERROR")
		assert.Contains(t, out, "task="+strconv.FormatUint(uint64(id), 10))
		assert.Contains(t, out, "panic=boom")
	}, schedule.WithLogger(logger))
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func TestTakeMaxLatenessCoversOneIntervalEach(t *testing.T) {
	eachScheduler(t, 1, func(t *testing.T, s *schedule.Scheduler) {
		assert.Zero(t, s.TakeMaxLateness(), "nothing ran yet")
		hold := make(chan struct{})
		_, err := s.ScheduleOne(func() { <-hold }, time.Second-time.Millisecond) // first, and on time
		require.NoError(t, err)
		_, err = s.ScheduleOne(nop, time.Second) // waits 30 ms for the worker
		require.NoError(t, err)
		advance(time.Second + 30*time.Millisecond)
		close(hold)
		advance(time.Millisecond)
		assert.Equal(t, 30*time.Millisecond, s.TakeMaxLateness())
		assert.Zero(t, s.TakeMaxLateness(), "a new interval starts empty")

		_, err = s.ScheduleOne(nop, time.Second)
		require.NoError(t, err)
		advance(time.Second)
		assert.Zero(t, s.TakeMaxLateness(), "on time")
		assert.Equal(t, 30*time.Millisecond, s.Stats().MaxLateness, "the lifetime maximum stays")
	})
}

func TestLatenessHistogramCountsEveryStart(t *testing.T) {
	eachScheduler(t, 1, func(t *testing.T, s *schedule.Scheduler) {
		hold := make(chan struct{})
		_, err := s.ScheduleOne(func() { <-hold }, time.Second-time.Millisecond) // first, and on time
		require.NoError(t, err)
		_, err = s.ScheduleOne(nop, time.Second) // 50 ms late
		require.NoError(t, err)
		advance(time.Second + 50*time.Millisecond)
		close(hold)
		advance(time.Millisecond)
		st := s.Stats()
		var want [schedule.LatenessBuckets]uint64
		want[0] = 1 // the first job, on time
		want[3] = 1 // the second, in (10 ms, 100 ms]
		assert.Equal(t, want, st.Lateness)
		assert.Equal(t, uint64(2), st.Fired)
	})
}

// Snapshots taken while many goroutines schedule and cancel keep the
// relations Stats documents.
func TestStatsSnapshotsStayConsistentUnderLoad(t *testing.T) {
	s, err := schedule.New(2)
	require.NoError(t, err)
	defer s.Shutdown()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				id, err := s.ScheduleOne(nop, time.Duration(i%3)*time.Millisecond)
				if err != nil {
					return
				}
				if (i+g)%2 == 0 {
					s.CancelTask(id)
				}
			}
		}()
	}
	for range 20_000 {
		st := s.Stats()
		if !assert.GreaterOrEqual(t, st.Scheduled, uint64(st.Pending)+st.Cancelled+st.Dropped, "%+v", st) ||
			!assert.GreaterOrEqual(t, st.Fired, st.Panics) {
			break
		}
	}
	close(stop)
	wg.Wait()
}
