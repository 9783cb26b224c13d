package netdeadline_test

import (
	"context"
	"io"
	"math/rand/v2"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-schedule/schedule"
	"github.com/go-schedule/schedule/eagercancel"
	"github.com/go-schedule/schedule/netdeadline"
)

// spin busy-waits for d: a spread of moments around a deadline, without
// handing the processor to the scheduler's job on purpose.
func spin(d time.Duration) {
	for t0 := time.Now(); time.Since(t0) < d; {
	}
}

// TestDeadlineMovedLaterAsItPassesNeverFailsIO moves a read deadline an
// hour out at moments spread around the instant it passes (the Go timer
// behind the scheduler may wake a millisecond late), so that the expiry job
// and the move race. Whichever wins, I/O that the deadline in
// force allows must succeed: the job decides under the connection's lock
// from the deadline as it is then, and a move after the job frees the
// socket again.
func TestDeadlineMovedLaterAsItPassesNeverFailsIO(t *testing.T) {
	s := newScheduler(t)
	c, peer := pair(t, s)
	rounds := 2000
	if raceEnabled {
		rounds = 500
	}
	b := make([]byte, 1)
	for i := range rounds {
		d := time.Duration(rand.IntN(200)) * time.Microsecond
		require.NoError(t, c.SetReadDeadline(time.Now().Add(d)))
		spin(time.Duration(rand.IntN(1500)) * time.Microsecond)
		require.NoError(t, c.SetReadDeadline(time.Now().Add(time.Hour)))
		_, err := peer.Write(b)
		require.NoError(t, err)
		_, err = io.ReadFull(c, b)
		require.NoError(t, err, "round %d: a read the deadline allows failed", i)
	}
	st := s.Stats()
	t.Logf("%d rounds: %d expiry jobs ran, %d moves found the task come due", rounds, st.Started, st.Scheduled-1)
	assert.Equal(t, 1, s.Len())
}

// TestWriteDeadlineMovedLaterAsItPassesNeverFailsIO is the same race on the
// write side.
func TestWriteDeadlineMovedLaterAsItPassesNeverFailsIO(t *testing.T) {
	s := newScheduler(t)
	c, peer := pair(t, s)
	rounds := 2000
	if raceEnabled {
		rounds = 500
	}
	b := make([]byte, 1)
	for i := range rounds {
		d := time.Duration(rand.IntN(200)) * time.Microsecond
		require.NoError(t, c.SetWriteDeadline(time.Now().Add(d)))
		spin(time.Duration(rand.IntN(1500)) * time.Microsecond)
		require.NoError(t, c.SetWriteDeadline(time.Now().Add(time.Hour)))
		_, err := c.Write(b)
		require.NoError(t, err, "round %d: a write the deadline allows failed", i)
		_, err = io.ReadFull(peer, b)
		require.NoError(t, err)
	}
	st := s.Stats()
	t.Logf("%d rounds: %d expiry jobs ran, %d moves found the task come due", rounds, st.Started, st.Scheduled-1)
}

// TestCloseRacingExpiry closes connections at moments spread around the
// instant their deadlines pass. Every Close must succeed, no task may stay
// behind, and no connection may stay reachable from the scheduler.
func TestCloseRacingExpiry(t *testing.T) {
	s := newScheduler(t)
	ln := listen(t)
	const conns = 200
	var collected atomic.Int64
	var wg sync.WaitGroup
	for range conns {
		client, _ := dialRaw(t, ln)
		c, err := netdeadline.NewConn(client, s)
		require.NoError(t, err)
		runtime.AddCleanup(c, func(*atomic.Int64) { collected.Add(1) }, &collected)
		require.NoError(t, c.SetDeadline(time.Now().Add(time.Duration(rand.IntN(500))*time.Microsecond)))
		wg.Add(1)
		go func() {
			defer wg.Done()
			spin(time.Duration(rand.IntN(500)) * time.Microsecond)
			assert.NoError(t, c.Close())
		}()
	}
	wg.Wait()
	assert.Zero(t, s.Len())
	assertCollected(t, &collected, conns)
}

// TestDeadlineSetConcurrentlyWithCloseLeavesNoTask sets deadlines from one
// goroutine while another closes the connection.
func TestDeadlineSetConcurrentlyWithCloseLeavesNoTask(t *testing.T) {
	s := newScheduler(t)
	ln := listen(t)
	for range 100 {
		client, _ := dialRaw(t, ln)
		c, err := netdeadline.NewConn(client, s)
		require.NoError(t, err)
		done := make(chan struct{})
		go func() {
			defer close(done)
			for {
				if c.SetDeadline(time.Now().Add(time.Hour)) != nil {
					return // closed
				}
			}
		}()
		spin(time.Duration(rand.IntN(100)) * time.Microsecond)
		require.NoError(t, c.Close())
		<-done
	}
	assert.Zero(t, s.Len())
}

// assertCollected waits, collecting garbage, for want cleanups to have run.
func assertCollected(t *testing.T, n *atomic.Int64, want int64) {
	t.Helper()
	assert.Eventually(t, func() bool {
		runtime.GC()
		return n.Load() == want
	}, wait, 10*time.Millisecond, "connections still reachable: %d of %d collected", n.Load(), want)
}

var _ net.Conn = (*netdeadline.Conn)(nil)

// busyScheduler returns a scheduler of one worker that is kept busy until the
// returned release is called, so that a deadline that passes meanwhile has
// its job due and waiting: the moment between an expiry and its job, held
// open.
func busyScheduler(t *testing.T) (s *schedule.Scheduler, release func()) {
	t.Helper()
	s, err := eagercancel.New(1)
	require.NoError(t, err)
	hold := make(chan struct{})
	var once sync.Once
	release = func() { once.Do(func() { close(hold) }) }
	t.Cleanup(func() {
		release()
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		assert.NoError(t, s.ShutdownContext(ctx))
	})
	// The worker must be busy before the caller makes a job due: a due
	// job counted waiting would otherwise be this one.
	busy := make(chan struct{})
	_, err = s.ScheduleOne(func() { close(busy); <-hold }, 0)
	require.NoError(t, err)
	<-busy
	return s, release
}

// awaitDue waits until n jobs are due and waiting for the busy worker.
func awaitDue(t *testing.T, s *schedule.Scheduler, n int) {
	t.Helper()
	require.Eventually(t, func() bool { return s.Stats().Waiting == n }, wait, time.Millisecond)
}

func TestDeadlineMovedLaterAfterItsJobCameDueNeverFailsIO(t *testing.T) {
	s, release := busyScheduler(t)
	c, peer := pair(t, s)
	require.NoError(t, c.SetReadDeadline(time.Now().Add(time.Millisecond)))
	awaitDue(t, s, 1)
	require.NoError(t, c.SetReadDeadline(time.Now().Add(time.Hour)))
	release()
	// The stale job has run (or runs now): whichever, it must not fail a
	// read the deadline in force allows.
	require.Eventually(t, func() bool { return s.Stats().Started == 2 }, wait, time.Millisecond)
	_, err := peer.Write([]byte("a"))
	require.NoError(t, err)
	_, err = io.ReadFull(c, make([]byte, 1))
	assert.NoError(t, err)
	assert.Equal(t, 1, s.Len(), "the new deadline's task")
}

func TestDeadlineClearedAfterItsJobCameDueNeverFailsIO(t *testing.T) {
	s, release := busyScheduler(t)
	c, _ := pair(t, s)
	require.NoError(t, c.SetWriteDeadline(time.Now().Add(time.Millisecond)))
	awaitDue(t, s, 1)
	require.NoError(t, c.SetWriteDeadline(time.Time{}))
	release()
	require.Eventually(t, func() bool { return s.Stats().Started == 2 }, wait, time.Millisecond)
	_, err := c.Write([]byte("a"))
	assert.NoError(t, err)
	assert.Zero(t, s.Len())
}

func TestCloseAfterTheJobCameDueRetainsNothing(t *testing.T) {
	s, release := busyScheduler(t)
	client, _ := dialRaw(t, listen(t))
	var collected atomic.Int64
	func() {
		c, err := netdeadline.NewConn(client, s)
		require.NoError(t, err)
		runtime.AddCleanup(c, func(*atomic.Int64) { collected.Add(1) }, &collected)
		require.NoError(t, c.SetDeadline(time.Now().Add(time.Millisecond)))
		awaitDue(t, s, 1)
		require.NoError(t, c.Close())
	}()
	release()
	require.Eventually(t, func() bool { return s.Stats().Started == 2 }, wait, time.Millisecond)
	assert.Zero(t, s.Len())
	assertCollected(t, &collected, 1)
}
