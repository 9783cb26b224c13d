package schedule

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNapsAreOffInsideASynctestBubble(t *testing.T) {
	s, err := New(1)
	require.NoError(t, err)
	assert.Equal(t, canNap, s.naps, "outside a bubble")
	s.Shutdown()

	synctest.Test(t, func(t *testing.T) {
		s, err := New(1)
		require.NoError(t, err)
		assert.False(t, s.naps, "inside a bubble the clock stands still while the owner naps")
		s.Shutdown()
	})
}

func TestNapEndsAtTheDeadlineOrOneGapAfterTheLastHandOver(t *testing.T) {
	s := bare(LazyCancel)
	s.naps = true
	const now = int64(time.Hour)
	s.handedAt = now - int64(time.Second)

	_, ok := s.napUntil(now+int64(timerLead)+1, now)
	assert.False(t, ok, "a deadline more than timerLead away is left to the timer")
	until, ok := s.napUntil(now+int64(timerLead), now)
	assert.True(t, ok, "the timer wakes the owner timerLead early: the rest is napped")
	assert.Equal(t, now+int64(timerLead), until)
	_, ok = s.napUntil(never, now)
	assert.False(t, ok, "nothing to wait for")

	until, ok = s.napUntil(now+int64(300*time.Microsecond), now)
	assert.True(t, ok)
	assert.Equal(t, now+int64(300*time.Microsecond), until, "a deadline on its own is met")

	s.handedAt = now - int64(100*time.Microsecond)
	until, ok = s.napUntil(now+int64(10*time.Microsecond), now)
	assert.True(t, ok)
	assert.Equal(t, s.handedAt+int64(napGap), until, "a deadline close behind a hand-over waits for the gap")
	until, _ = s.napUntil(now+int64(900*time.Microsecond), now)
	assert.Equal(t, now+int64(900*time.Microsecond), until, "a deadline past the gap is met")

	s.naps = false
	_, ok = s.napUntil(now+int64(10*time.Microsecond), now)
	assert.False(t, ok, "naps off")
}

// A nap lasts at most napMax, so that requests that cannot wait and
// Shutdown never wait longer for a napping owner, even when its deadline is
// up to timerLead away. The nap reports whether the deadline has come.
func TestNapEndsAfterNapMaxAtTheLatest(t *testing.T) {
	if !canNap {
		t.Skip("naps are for Linux only")
	}
	s := bare(LazyCancel)
	s.naps = true

	assert.False(t, s.nap(s.now()+int64(timerLead)), "a deadline beyond napMax takes more than one nap")
	assert.True(t, s.nap(s.now()+int64(100*time.Microsecond)), "a deadline within napMax is napped to")
	assert.Zero(t, s.sleepUntil.Load(), "sleepUntil is cleared after a nap")
}

// A task every 50 µs keeps the owner napping from one deadline to the
// next: requests and Shutdown must still get through. Real time, with
// margins of seconds.
func TestNappingOwnerTakesRequestsAndShutsDown(t *testing.T) {
	s, err := New(2)
	require.NoError(t, err)
	var ticks atomic.Int64
	_, err = s.Schedule(func() { ticks.Add(1) }, 50*time.Microsecond)
	require.NoError(t, err)
	deadline := time.Now().Add(10 * time.Second)
	for ticks.Load() < 20 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	require.GreaterOrEqual(t, ticks.Load(), int64(20), "the repeating task runs")

	ran := make(chan struct{})
	_, err = s.ScheduleOne(func() { close(ran) }, 0)
	require.NoError(t, err)
	select {
	case <-ran:
	case <-time.After(10 * time.Second):
		t.Fatal("a job added while the owner naps never ran")
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	assert.NoError(t, s.ShutdownContext(ctx))
}

// BenchmarkWakeUpLateness measures how late a goroutine wakes from a sleep
// on a Go timer and from a nap in the kernel, the figures behind naps
// (nap.go). Each iteration sleeps once; late-µs-p50 is the median lateness,
// late-µs-p99 the 99th percentile and late-µs-max the largest.
//
//	go test -run '^$' -bench WakeUpLateness -benchtime 200x .
func BenchmarkWakeUpLateness(b *testing.B) {
	if !canNap {
		b.Skip("naps are for Linux only")
	}
	sleeps := []struct {
		name  string
		sleep func(time.Duration)
	}{{"timer", time.Sleep}, {"nap", kernelSleep}}
	for _, d := range []time.Duration{50 * time.Microsecond, 300 * time.Microsecond, 1700 * time.Microsecond} {
		for _, sl := range sleeps {
			b.Run(fmt.Sprintf("%s/%v", sl.name, d), func(b *testing.B) {
				var late []time.Duration
				for b.Loop() {
					t0 := time.Now()
					sl.sleep(d)
					late = append(late, time.Since(t0)-d)
				}
				slices.Sort(late)
				b.ReportMetric(float64(late[len(late)/2].Microseconds()), "late-µs-p50")
				b.ReportMetric(float64(late[len(late)*99/100].Microseconds()), "late-µs-p99")
				b.ReportMetric(float64(late[len(late)-1].Microseconds()), "late-µs-max")
			})
		}
	}
}
