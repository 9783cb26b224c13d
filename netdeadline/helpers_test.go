package netdeadline_test

import (
	"context"
	"errors"
	"net"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-schedule/schedule"
	"github.com/go-schedule/schedule/eagercancel"
	"github.com/go-schedule/schedule/netdeadline"
)

// wait bounds how long a test waits for something that must happen (a
// blocked call returning): generous, since the machine may be loaded. It
// never decides a pass by timing.
const wait = 10 * time.Second

// newScheduler returns a scheduler that the test shuts down at its end,
// after the connections it made later (cleanups run last first). Eager
// cancel, so that the heap holds exactly the live tasks and a test can
// count them.
func newScheduler(t testing.TB) *schedule.Scheduler {
	t.Helper()
	s, err := eagercancel.New(2)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		assert.NoError(t, s.ShutdownContext(ctx))
	})
	return s
}

// listen returns a loopback TCP listener closed at the test's end.
func listen(t testing.TB) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	return ln
}

// dialRaw connects to ln and returns both ends, unwrapped, closed at the
// test's end.
func dialRaw(t testing.TB, ln net.Listener) (client, server net.Conn) {
	t.Helper()
	accepted := make(chan net.Conn, 1)
	errs := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			errs <- err
			return
		}
		accepted <- c
	}()
	client, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	t.Cleanup(func() { client.Close() })
	select {
	case server = <-accepted:
	case err := <-errs:
		require.NoError(t, err)
	}
	t.Cleanup(func() { server.Close() })
	return client, server
}

// pair returns a wrapped client connection on loopback TCP, served by s,
// and the server's end of it, unwrapped.
func pair(t testing.TB, s *schedule.Scheduler) (*netdeadline.Conn, net.Conn) {
	t.Helper()
	client, server := dialRaw(t, listen(t))
	c, err := netdeadline.NewConn(client, s)
	require.NoError(t, err)
	return c, server
}

// assertTimeout checks that err is the error of I/O past a deadline, as the
// net.Conn contract words it.
func assertTimeout(t testing.TB, err error) {
	t.Helper()
	require.Error(t, err)
	assert.ErrorIs(t, err, os.ErrDeadlineExceeded)
	var ne net.Error
	if assert.True(t, errors.As(err, &ne), "%v is not a net.Error", err) {
		assert.True(t, ne.Timeout(), "%v: Timeout() is false", err)
	}
}

// fillWrites writes to c until a write fails (its peer never reads) and
// returns that error.
func fillWrites(c net.Conn) error {
	buf := make([]byte, 64<<10)
	for {
		if _, err := c.Write(buf); err != nil {
			return err
		}
	}
}

// within returns what ch delivers, failing the test if nothing comes within
// wait.
func within[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(wait):
		require.FailNow(t, what+" did not return")
		panic("unreachable")
	}
}
