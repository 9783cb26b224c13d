package netdeadline_test

import (
	"bytes"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-schedule/schedule/netdeadline"
)

func TestNewConnRejectsNilArguments(t *testing.T) {
	s := newScheduler(t)
	client, _ := dialRaw(t, listen(t))
	_, err := netdeadline.NewConn(nil, s)
	assert.ErrorIs(t, err, netdeadline.ErrNilConn)
	_, err = netdeadline.NewConn(client, nil)
	assert.ErrorIs(t, err, netdeadline.ErrNilScheduler)
}

func TestNewListenerRejectsNilArguments(t *testing.T) {
	s := newScheduler(t)
	_, err := netdeadline.NewListener(nil, s)
	assert.ErrorIs(t, err, netdeadline.ErrNilListener)
	_, err = netdeadline.NewListener(listen(t), nil)
	assert.ErrorIs(t, err, netdeadline.ErrNilScheduler)
}

func TestListenerAcceptsConnsWhoseDeadlinesAreServed(t *testing.T) {
	s := newScheduler(t)
	wl, err := netdeadline.NewListener(listen(t), s)
	require.NoError(t, err)
	client, err := net.Dial("tcp", wl.Addr().String())
	require.NoError(t, err)
	defer client.Close()
	c, err := wl.Accept()
	require.NoError(t, err)
	defer c.Close()
	require.IsType(t, (*netdeadline.Conn)(nil), c)

	require.NoError(t, c.SetReadDeadline(time.Now().Add(20*time.Millisecond)))
	assert.Equal(t, 1, s.Len(), "the deadline is a task on the scheduler")
	_, err = c.Read(make([]byte, 1))
	assertTimeout(t, err)
}

func TestReadPastItsDeadlineFailsWithTheSocketsTimeoutError(t *testing.T) {
	c, _ := pair(t, newScheduler(t))
	require.NoError(t, c.SetReadDeadline(time.Now().Add(20*time.Millisecond)))
	n, err := c.Read(make([]byte, 1))
	assert.Zero(t, n)
	assertTimeout(t, err)
	var op *net.OpError
	if assert.ErrorAs(t, err, &op) {
		assert.Equal(t, "read", op.Op, "the real socket's own error")
	}
}

func TestWritePastItsDeadlineFailsWithTheSocketsTimeoutError(t *testing.T) {
	c, _ := pair(t, newScheduler(t)) // the peer never reads
	require.NoError(t, c.SetWriteDeadline(time.Now().Add(20*time.Millisecond)))
	err := fillWrites(c)
	assertTimeout(t, err)
	var op *net.OpError
	if assert.ErrorAs(t, err, &op) {
		assert.Equal(t, "write", op.Op, "the real socket's own error")
	}
}

func TestPastDeadlineFailsAPendingReadAtOnce(t *testing.T) {
	c, _ := pair(t, newScheduler(t))
	done := make(chan error, 1)
	go func() {
		_, err := c.Read(make([]byte, 1)) // blocks: no deadline, no data
		done <- err
	}()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(-time.Second)))
	assertTimeout(t, within(t, done, "the pending Read"))
}

func TestPastDeadlineFailsAPendingWriteAtOnce(t *testing.T) {
	c, _ := pair(t, newScheduler(t))
	done := make(chan error, 1)
	go func() { done <- fillWrites(c) }() // blocks once the buffers are full
	require.NoError(t, c.SetWriteDeadline(time.Now().Add(-time.Second)))
	assertTimeout(t, within(t, done, "the pending Write"))
}

func TestPastDeadlineFailsLaterIOEvenWithDataReady(t *testing.T) {
	s := newScheduler(t)
	c, peer := pair(t, s)
	_, err := peer.Write([]byte("ready"))
	require.NoError(t, err)
	require.NoError(t, c.SetDeadline(time.Now()))
	for range 2 {
		_, err = c.Read(make([]byte, 1))
		assertTimeout(t, err)
		_, err = c.Write([]byte("x"))
		assertTimeout(t, err)
	}
	assert.Zero(t, s.Len(), "a passed deadline needs no task")
}

func TestReadDeadlineExtendedAfterItPassedWorksAgain(t *testing.T) {
	c, peer := pair(t, newScheduler(t))
	for _, extend := range []time.Time{time.Now().Add(time.Hour), {}} {
		require.NoError(t, c.SetReadDeadline(time.Now().Add(10*time.Millisecond)))
		_, err := c.Read(make([]byte, 1))
		assertTimeout(t, err)

		require.NoError(t, c.SetReadDeadline(extend))
		_, err = peer.Write([]byte("a"))
		require.NoError(t, err)
		_, err = io.ReadFull(c, make([]byte, 1))
		assert.NoError(t, err, "extended to %v", extend)
	}
}

func TestWriteDeadlineExtendedAfterItPassedWorksAgain(t *testing.T) {
	c, peer := pair(t, newScheduler(t))
	for _, extend := range []time.Time{time.Now().Add(time.Hour), {}} {
		require.NoError(t, c.SetWriteDeadline(time.Now().Add(-time.Second)))
		_, err := c.Write([]byte("a"))
		assertTimeout(t, err)

		require.NoError(t, c.SetWriteDeadline(extend))
		_, err = c.Write([]byte("b"))
		require.NoError(t, err, "extended to %v", extend)
		_, err = io.ReadFull(peer, make([]byte, 1))
		require.NoError(t, err)
	}
}

func TestOnlyTheReadSideFailsWhenOnlyTheReadDeadlinePassed(t *testing.T) {
	c, peer := pair(t, newScheduler(t))
	require.NoError(t, c.SetWriteDeadline(time.Now().Add(time.Hour)))
	require.NoError(t, c.SetReadDeadline(time.Now().Add(10*time.Millisecond)))
	_, err := c.Read(make([]byte, 1))
	assertTimeout(t, err)

	_, err = c.Write([]byte("w"))
	require.NoError(t, err, "the write deadline has not passed")
	_, err = io.ReadFull(peer, make([]byte, 1))
	require.NoError(t, err)
}

func TestOnlyTheWriteSideFailsWhenOnlyTheWriteDeadlinePassed(t *testing.T) {
	c, peer := pair(t, newScheduler(t))
	require.NoError(t, c.SetReadDeadline(time.Now().Add(time.Hour)))
	require.NoError(t, c.SetWriteDeadline(time.Now().Add(10*time.Millisecond)))
	assertTimeout(t, fillWrites(c))

	// The buffers are full of the filler; what the peer sends still arrives.
	_, err := peer.Write([]byte("r"))
	require.NoError(t, err)
	_, err = io.ReadFull(c, make([]byte, 1))
	assert.NoError(t, err, "the read deadline has not passed")
}

func TestReadAndWriteDeadlinesShareOneTask(t *testing.T) {
	s := newScheduler(t)
	c, _ := pair(t, s)
	now := time.Now()
	for i := range 100 {
		require.NoError(t, c.SetReadDeadline(now.Add(time.Hour+time.Duration(i)*time.Second)))
		require.NoError(t, c.SetWriteDeadline(now.Add(2*time.Hour-time.Duration(i)*time.Second)))
		require.NoError(t, c.SetDeadline(now.Add(3*time.Hour+time.Duration(i)*time.Second)))
	}
	assert.Equal(t, 1, s.Len())
	assert.Equal(t, uint64(1), s.Stats().Scheduled, "every move is a Reset of the one task")
}

func TestTaskIsDueAtTheEarlierDeadline(t *testing.T) {
	s := newScheduler(t)
	c, _ := pair(t, s)
	require.NoError(t, c.SetReadDeadline(time.Now().Add(time.Hour)))
	require.NoError(t, c.SetWriteDeadline(time.Now().Add(10*time.Millisecond)))
	assertTimeout(t, fillWrites(c))
	// The task ran for the write deadline and armed a new one for the read
	// deadline (the write may fail before the job has armed it).
	assert.Eventually(t, func() bool { return s.Len() == 1 }, wait, time.Millisecond)
	assert.Equal(t, uint64(1), s.Stats().Started)
	assert.Equal(t, uint64(2), s.Stats().Scheduled)
}

func TestZeroTimeCancelsTheTask(t *testing.T) {
	s := newScheduler(t)
	c, _ := pair(t, s)
	require.NoError(t, c.SetDeadline(time.Now().Add(time.Hour)))
	require.Equal(t, 1, s.Len())
	require.NoError(t, c.SetReadDeadline(time.Time{}))
	assert.Equal(t, 1, s.Len(), "the write deadline is still set")
	require.NoError(t, c.SetWriteDeadline(time.Time{}))
	assert.Zero(t, s.Len())
	assert.Equal(t, uint64(1), s.Stats().Cancelled)
}

func TestCloseCancelsTheTask(t *testing.T) {
	s := newScheduler(t)
	c, _ := pair(t, s)
	require.NoError(t, c.SetDeadline(time.Now().Add(time.Hour)))
	require.Equal(t, 1, s.Len())
	require.NoError(t, c.Close())
	assert.Zero(t, s.Len())
	assert.Equal(t, uint64(1), s.Stats().Cancelled)
}

func TestCloseFailsAPendingReadAsAClosedConnectionNotATimeout(t *testing.T) {
	c, _ := pair(t, newScheduler(t))
	require.NoError(t, c.SetReadDeadline(time.Now().Add(time.Hour)))
	done := make(chan error, 1)
	go func() {
		_, err := c.Read(make([]byte, 1))
		done <- err
	}()
	require.NoError(t, c.Close())
	err := within(t, done, "the pending Read")
	assert.ErrorIs(t, err, net.ErrClosed)
}

func TestDeadlineSetAfterCloseGetsTheSocketsError(t *testing.T) {
	s := newScheduler(t)
	c, _ := pair(t, s)
	require.NoError(t, c.Close())
	assert.ErrorIs(t, c.SetDeadline(time.Now().Add(time.Hour)), net.ErrClosed)
	assert.ErrorIs(t, c.SetReadDeadline(time.Now().Add(-time.Hour)), net.ErrClosed)
	assert.Zero(t, s.Len())
}

func TestShutDownSchedulerHandsDeadlinesToTheSocket(t *testing.T) {
	s := newScheduler(t)
	c, _ := pair(t, s)
	s.Shutdown()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(10*time.Millisecond)))
	_, err := c.Read(make([]byte, 1))
	assertTimeout(t, err)
	require.NoError(t, c.SetReadDeadline(time.Time{}))
	require.NoError(t, c.SetWriteDeadline(time.Now().Add(-time.Second)))
	_, err = c.Write([]byte("x"))
	assertTimeout(t, err)
}

func TestNetConnReturnsTheWrappedConnection(t *testing.T) {
	s := newScheduler(t)
	client, _ := dialRaw(t, listen(t))
	c, err := netdeadline.NewConn(client, s)
	require.NoError(t, err)
	assert.Same(t, client, c.NetConn())
}

func TestReadFromAndWriteToKeepTheDeadlines(t *testing.T) {
	c, peer := pair(t, newScheduler(t))
	payload := bytes.Repeat([]byte("x"), 1<<14) // fits the socket buffers
	_, err := peer.Write(payload)
	require.NoError(t, err)
	var got bytes.Buffer
	require.NoError(t, c.SetReadDeadline(time.Now().Add(50*time.Millisecond)))
	n, err := c.WriteTo(&got) // until the read deadline passes
	assertTimeout(t, err)
	assert.Equal(t, int64(len(payload)), n)

	require.NoError(t, c.SetWriteDeadline(time.Now().Add(-time.Second)))
	_, err = c.ReadFrom(bytes.NewReader(payload))
	assertTimeout(t, err)
	require.NoError(t, c.SetWriteDeadline(time.Time{}))
	n, err = c.ReadFrom(bytes.NewReader([]byte("ok")))
	require.NoError(t, err)
	assert.Equal(t, int64(2), n)
}
