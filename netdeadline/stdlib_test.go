package netdeadline_test

// The deadline tests of the standard library's net/timeout_test.go, ported
// by their semantics to wrapped connections on loopback TCP: same names,
// same steps, same expectations. Dial, Accept and packet-connection
// deadlines are not the wrapper's and are left out.

import (
	"fmt"
	"io"
	"net"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-schedule/schedule"
	"github.com/go-schedule/schedule/netdeadline"
)

// wrappedServer serves one connection with handler on a wrapped listener,
// as a server would, and returns the client's end, unwrapped.
func wrappedServer(t *testing.T, s *schedule.Scheduler, handler func(c net.Conn)) net.Conn {
	t.Helper()
	wl, err := netdeadline.NewListener(listen(t), s)
	require.NoError(t, err)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		c, err := wl.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		handler(c)
	}()
	client, err := net.Dial("tcp", wl.Addr().String())
	require.NoError(t, err)
	t.Cleanup(func() { client.Close(); wl.Close(); wg.Wait() })
	return client
}

// noDeadline is the zero time: no deadline.
var noDeadline time.Time

func TestReadTimeout(t *testing.T) {
	c, peer := pair(t, newScheduler(t))
	_, err := peer.Write([]byte("READ TIMEOUT TEST"))
	require.NoError(t, err)

	for i, tt := range []struct {
		timeout time.Duration
		xerrs   [2]bool // a timeout expected in each transition
	}{
		// Read deadlines work even if there's data ready to be read.
		{-5 * time.Second, [2]bool{true, true}},
		{50 * time.Millisecond, [2]bool{false, true}},
	} {
		require.NoError(t, c.SetReadDeadline(time.Now().Add(tt.timeout)))
		var b [1]byte
		for j, xerr := range tt.xerrs {
			for {
				n, err := c.Read(b[:])
				if xerr {
					assertTimeout(t, err)
				}
				if err == nil {
					time.Sleep(tt.timeout / 3)
					continue
				}
				require.Zero(t, n, "#%d/%d", i, j)
				break
			}
		}
	}
}

func TestReadTimeoutMustNotReturn(t *testing.T) {
	c, _ := pair(t, newScheduler(t))
	ch := make(chan error, 1)
	require.NoError(t, c.SetDeadline(time.Now().Add(-5*time.Second)))
	require.NoError(t, c.SetWriteDeadline(time.Now().Add(-5*time.Second)))
	require.NoError(t, c.SetReadDeadline(noDeadline))
	go func() {
		var b [1]byte
		_, err := c.Read(b[:])
		ch <- err
	}()
	select {
	case err := <-ch:
		require.Failf(t, "Read returned", "expected Read to not return, but it returned with %v", err)
	case <-time.After(100 * time.Millisecond):
		c.Close()
		err := <-ch
		var ne net.Error
		require.ErrorAs(t, err, &ne)
		assert.False(t, ne.Timeout(), "%v", err)
	}
}

func TestWriteTimeout(t *testing.T) {
	s := newScheduler(t)
	ln := listen(t)
	for i, tt := range []struct {
		timeout time.Duration
		xerrs   [2]bool
	}{
		// Write deadlines work even if there's buffer space available.
		{-5 * time.Second, [2]bool{true, true}},
		{10 * time.Millisecond, [2]bool{false, true}},
	} {
		client, _ := dialRaw(t, ln)
		c, err := netdeadline.NewConn(client, s)
		require.NoError(t, err)
		require.NoError(t, c.SetWriteDeadline(time.Now().Add(tt.timeout)))
		for j, xerr := range tt.xerrs {
			for {
				n, err := c.Write([]byte("WRITE TIMEOUT TEST"))
				if xerr {
					assertTimeout(t, err)
				}
				if err == nil {
					time.Sleep(tt.timeout / 3)
					continue
				}
				require.Zero(t, n, "#%d/%d", i, j)
				break
			}
		}
	}
}

func TestWriteTimeoutMustNotReturn(t *testing.T) {
	c, _ := pair(t, newScheduler(t))
	ch := make(chan error, 1)
	require.NoError(t, c.SetDeadline(time.Now().Add(-5*time.Second)))
	require.NoError(t, c.SetReadDeadline(time.Now().Add(-5*time.Second)))
	require.NoError(t, c.SetWriteDeadline(noDeadline))
	go func() { ch <- fillWrites(c) }()
	select {
	case err := <-ch:
		require.Failf(t, "Write returned", "expected Write to not return, but it returned with %v", err)
	case <-time.After(100 * time.Millisecond):
		c.Close()
		err := <-ch
		var ne net.Error
		require.ErrorAs(t, err, &ne)
		assert.False(t, ne.Timeout(), "%v", err)
	}
}

// The standard library's bounds for the tests that raise a timeout until
// the machine hits it.
const (
	minDynamicTimeout = 1 * time.Millisecond
	maxDynamicTimeout = 4 * time.Second
)

// timeoutUpperBound is the standard library's: how long a timeout of d may
// take to return.
func timeoutUpperBound(d time.Duration) time.Duration { return d * 11 / 10 }

// nextTimeout is the standard library's: the next timeout to try after one
// that took actual.
func nextTimeout(actual time.Duration) (time.Duration, bool) {
	if actual >= maxDynamicTimeout {
		return maxDynamicTimeout, false
	}
	return min(actual*5/4, maxDynamicTimeout), true
}

func TestReadTimeoutFluctuation(t *testing.T) {
	c, _ := pair(t, newScheduler(t))
	d := minDynamicTimeout
	b := make([]byte, 256)
	for {
		t0 := time.Now()
		deadline := t0.Add(d)
		require.NoError(t, c.SetReadDeadline(deadline))
		n, err := c.Read(b)
		t1 := time.Now()
		require.Zero(t, n)
		assertTimeout(t, err)
		require.False(t, t1.Before(deadline), "Read took %s; expected at least %s", t1.Sub(t0), d)
		if actual := t1.Sub(t0); actual > timeoutUpperBound(d) {
			next, ok := nextTimeout(actual)
			require.True(t, ok, "Read took %s; expected at most %v", actual, timeoutUpperBound(d))
			t.Logf("Read took %s (expected %s); trying with longer timeout", actual, d)
			d = next
			continue
		}
		break
	}
}

func TestWriteTimeoutFluctuation(t *testing.T) {
	c, _ := pair(t, newScheduler(t))
	d := minDynamicTimeout
	for {
		t0 := time.Now()
		deadline := t0.Add(d)
		require.NoError(t, c.SetWriteDeadline(deadline))
		var n int64
		var err error
		for {
			var dn int
			dn, err = c.Write([]byte("TIMEOUT TRANSMITTER"))
			n += int64(dn)
			if err != nil {
				break
			}
		}
		t1 := time.Now()
		assertTimeout(t, err)
		require.False(t, t1.Before(deadline), "Write took %s; expected at least %s", t1.Sub(t0), d)
		if actual := t1.Sub(t0); actual > timeoutUpperBound(d) {
			if n > 0 {
				// The send buffer took n bytes without blocking: retry until it is full.
				if d <= maxDynamicTimeout/2 {
					d *= 2
				}
			} else if next, ok := nextTimeout(actual); !ok {
				require.Failf(t, "too slow", "Write took %s; expected at most %s", actual, timeoutUpperBound(d))
			} else {
				d = next
			}
			continue
		}
		break
	}
}

func TestVariousDeadlines(t *testing.T) { testVariousDeadlines(t) }

func TestVariousDeadlines1Proc(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping in short mode")
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	testVariousDeadlines(t)
}

func testVariousDeadlines(t *testing.T) {
	s := newScheduler(t)
	// The server side is wrapped too: it reads until the client closes.
	wl, err := netdeadline.NewListener(listen(t), s)
	require.NoError(t, err)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer wl.Close()
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := wl.Accept()
			if err != nil {
				return
			}
			c.Read(make([]byte, 1))
			c.Close()
		}
	}()
	for _, timeout := range []time.Duration{
		1 * time.Nanosecond,
		2 * time.Nanosecond,
		5 * time.Nanosecond,
		50 * time.Nanosecond,
		100 * time.Nanosecond,
		200 * time.Nanosecond,
		500 * time.Nanosecond,
		750 * time.Nanosecond,
		1 * time.Microsecond,
		5 * time.Microsecond,
		25 * time.Microsecond,
		250 * time.Microsecond,
		500 * time.Microsecond,
		1 * time.Millisecond,
		5 * time.Millisecond,
		100 * time.Millisecond,
		250 * time.Millisecond,
		500 * time.Millisecond,
		1 * time.Second,
	} {
		numRuns := 3
		if testing.Short() {
			numRuns = 1
			if timeout > 500*time.Microsecond {
				continue
			}
		}
		for run := range numRuns {
			name := fmt.Sprintf("%v %d/%d", timeout, run, numRuns)
			client, err := net.Dial("tcp", wl.Addr().String())
			require.NoError(t, err)
			c, err := netdeadline.NewConn(client, s)
			require.NoError(t, err)
			t0 := time.Now()
			require.NoError(t, c.SetDeadline(t0.Add(timeout)))
			n, err := io.Copy(io.Discard, c)
			dt := time.Since(t0)
			c.Close()
			var ne net.Error
			require.ErrorAs(t, err, &ne, "%v: Copy = %d, %v; want timeout", name, n, err)
			require.True(t, ne.Timeout(), "%v: Copy = %d, %v; want timeout", name, n, err)
			t.Logf("%v: good timeout after %v; %d bytes", name, dt, n)
		}
	}
}

// TestReadWriteProlongedTimeout moves the read and the write deadline
// concurrently, each from its own goroutine, while both sides do I/O.
func TestReadWriteProlongedTimeout(t *testing.T) {
	s := newScheduler(t)
	client := wrappedServer(t, s, func(c net.Conn) {
		var wg sync.WaitGroup
		wg.Add(2)
		go func() {
			defer wg.Done()
			var b [1]byte
			for {
				if err := c.SetReadDeadline(time.Now().Add(time.Hour)); err != nil {
					t.Error(err)
					return
				}
				if _, err := c.Read(b[:]); err != nil {
					return
				}
			}
		}()
		go func() {
			defer wg.Done()
			var b [1]byte
			for {
				if err := c.SetWriteDeadline(time.Now().Add(time.Hour)); err != nil {
					t.Error(err)
					return
				}
				if _, err := c.Write(b[:]); err != nil {
					return
				}
			}
		}()
		wg.Wait()
	})
	var b [1]byte
	for range 1000 {
		client.Write(b[:])
		client.Read(b[:])
	}
}

func TestReadWriteDeadlineRace(t *testing.T) {
	N := 1000
	if testing.Short() {
		N = 50
	}
	c, _ := pair(t, newScheduler(t))
	var wg sync.WaitGroup
	wg.Add(3)
	go func() {
		defer wg.Done()
		tic := time.NewTicker(2 * time.Microsecond)
		defer tic.Stop()
		for range N {
			if err := c.SetReadDeadline(time.Now().Add(2 * time.Microsecond)); err != nil {
				t.Error(err)
				break
			}
			if err := c.SetWriteDeadline(time.Now().Add(2 * time.Microsecond)); err != nil {
				t.Error(err)
				break
			}
			<-tic.C
		}
	}()
	go func() {
		defer wg.Done()
		var b [1]byte
		for range N {
			c.Read(b[:]) // timeouts expected
		}
	}()
	go func() {
		defer wg.Done()
		var b [1]byte
		for range N {
			c.Write(b[:]) // timeouts expected
		}
	}()
	wg.Wait()
}

func TestConcurrentSetDeadline(t *testing.T) {
	s := newScheduler(t)
	ln := listen(t)
	const goroutines = 8
	const conns = 10
	const tries = 100
	var c [conns]*netdeadline.Conn
	for i := range conns {
		client, _ := dialRaw(t, ln)
		var err error
		c[i], err = netdeadline.NewConn(client, s)
		require.NoError(t, err)
	}
	var wg sync.WaitGroup
	wg.Add(goroutines)
	now := time.Now()
	for i := range goroutines {
		go func() {
			defer wg.Done()
			// Deadlines steadily earlier: moves towards the top of the heap.
			for j := tries; j > 0; j-- {
				for k := range conns {
					c[k].SetReadDeadline(now.Add(2*time.Hour + time.Duration(i*j*k)*time.Second))
					c[k].SetWriteDeadline(now.Add(1*time.Hour + time.Duration(i*j*k)*time.Second))
				}
			}
		}()
	}
	wg.Wait()
	assert.Equal(t, conns, s.Len(), "one task per connection")
}
