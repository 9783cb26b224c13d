package gnetidle_test

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"weak"

	"github.com/go-schedule/schedule"
	"github.com/go-schedule/schedule/gnetidle"
	"github.com/go-schedule/schedule/gnetidle/internal/gnetutil"
	"github.com/panjf2000/gnet/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// These tests run real gnet engines on loopback, with two event loops, and
// real TCP clients. Timeouts are short, but every client that must stay
// connected sends ten times per timeout or more, and counts are checked
// only once the connections in question have ended: nothing here depends
// on how fast the machine is, beyond those margins.

// session is what the test server keeps per connection, in its Context.
type session struct {
	idle        gnetidle.Watch // unless the server uses the Detector's (lookup)
	first       byte           // the first byte read, 0 before
	closes      int
	idleClosing bool // its Handler returned gnet.Close
}

// server is a gnet server under test, with a Detector.
type server struct {
	gnet.BuiltinEventEngine
	d      *gnetidle.Detector
	lookup bool // a Watch of the Detector's, found with WatchOf, not the session's

	// Hooks, set before the engine starts. onIdle decides the Handler's
	// Action (nil: close); onTraffic sees what each read brought.
	onOpen    func(c gnet.Conn, ss *session)
	onIdle    func(c gnet.Conn, ss *session, e gnetidle.Event) gnet.Action
	onTraffic func(c gnet.Conn, ss *session, data []byte)

	mu                     sync.Mutex
	opened, closed         int
	idleClosed, peerClosed int
	afterClose             int // Handler calls for a connection already closed
	events                 []gnetidle.Event
	sessions               []weak.Pointer[session]
	watches                []weak.Pointer[gnetidle.Watch]
}

// startServer starts a server whose Detector has the default timeouts def,
// configured by setup before the engine starts. Its cleanup stops the
// engine, then shuts the scheduler down.
func startServer(t *testing.T, def gnetidle.Timeouts, setup func(*server)) (*server, string) {
	t.Helper()
	s, err := schedule.New(4)
	require.NoError(t, err)
	srv := new(server)
	srv.d, err = gnetidle.New(s, def, srv.handle)
	require.NoError(t, err)
	if setup != nil {
		setup(srv)
	}
	g, err := gnetutil.Serve(srv, "127.0.0.1:0", gnet.WithMulticore(true), gnet.WithNumEventLoop(2),
		gnet.WithLogger(gnetutil.Logger(os.Stderr, "gnet: ")))
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		assert.NoError(t, g.Stop(ctx))
		assert.Equal(t, 0, srv.d.Stats().Watched, "stopping the engine closes every watched connection")
		assert.NoError(t, s.ShutdownContext(ctx))
	})
	return srv, g.Addr
}

func (srv *server) OnOpen(c gnet.Conn) ([]byte, gnet.Action) {
	ss := new(session)
	c.SetContext(ss)
	w := &ss.idle
	if srv.lookup {
		w = new(gnetidle.Watch)
	}
	if err := srv.d.Start(c, w); err != nil {
		panic(err)
	}
	srv.mu.Lock()
	srv.opened++
	srv.sessions = append(srv.sessions, weak.Make(ss))
	srv.watches = append(srv.watches, weak.Make(w))
	srv.mu.Unlock()
	if srv.onOpen != nil {
		srv.onOpen(c, ss)
	}
	return nil, gnet.None
}

func (srv *server) OnTraffic(c gnet.Conn) gnet.Action {
	ss := c.Context().(*session)
	srv.watchOf(c).Read()
	data, _ := c.Next(-1)
	if ss.first == 0 && len(data) > 0 {
		ss.first = data[0]
	}
	if srv.onTraffic != nil {
		srv.onTraffic(c, ss, data)
	}
	return gnet.None
}

func (srv *server) OnClose(c gnet.Conn, _ error) gnet.Action {
	ss := c.Context().(*session)
	srv.watchOf(c).Stop()
	ss.closes++
	srv.mu.Lock()
	defer srv.mu.Unlock()
	srv.closed++
	if ss.idleClosing {
		srv.idleClosed++
	} else {
		srv.peerClosed++
	}
	return gnet.None
}

// watchOf is c's Watch.
func (srv *server) watchOf(c gnet.Conn) *gnetidle.Watch {
	if srv.lookup {
		return srv.d.WatchOf(c)
	}
	return &c.Context().(*session).idle
}

// handle is the Detector's Handler.
func (srv *server) handle(c gnet.Conn, e gnetidle.Event) gnet.Action {
	ss, ok := c.Context().(*session) // gnet clears the Context after OnClose
	srv.mu.Lock()
	srv.events = append(srv.events, e)
	if !ok || ss.closes > 0 {
		srv.afterClose++
	}
	srv.mu.Unlock()
	if !ok {
		return gnet.None
	}
	action := gnet.Close
	if srv.onIdle != nil {
		action = srv.onIdle(c, ss, e)
	}
	if action == gnet.Close {
		ss.idleClosing = true
	}
	return action
}

// counts returns opened, closed, closed by the Handler, closed by the peer.
func (srv *server) counts() (opened, closed, idle, peer int) {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	return srv.opened, srv.closed, srv.idleClosed, srv.peerClosed
}

// waitAllClosed waits until every connection opened so far has closed.
func (srv *server) waitAllClosed(t *testing.T, n int) {
	t.Helper()
	require.Eventually(t, func() bool {
		o, c, _, _ := srv.counts()
		return o == n && c == n
	}, 30*time.Second, 10*time.Millisecond, "%d connections opened and closed", n)
}

// dial connects to addr.
func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// closedByServer reports whether err ends a read because the server closed
// the connection: end of file, or a reset.
func closedByServer(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)
}

// scale returns n, or less under the race detector.
func scale(n int) int {
	if gnetidle.RaceEnabled {
		return n / 2
	}
	return n
}

func TestGnetSilentConnectionsAreClosedAndTalkingOnesKept(t *testing.T) {
	const timeout = time.Second
	srv, addr := startServer(t, gnetidle.Timeouts{Reader: timeout}, nil)
	n := scale(100)
	var silentClosed, early, talkersLost atomic.Int64
	var wg sync.WaitGroup
	for i := range n {
		c := dial(t, addr)
		wg.Add(1)
		if i%2 == 0 { // silent after one byte, and at most 30% of the timeout later
			go func() {
				defer wg.Done()
				time.Sleep(rand.N(timeout * 3 / 10))
				last := time.Now()
				_, err := c.Write([]byte{'s'})
				require.NoError(t, err)
				require.NoError(t, c.SetReadDeadline(time.Now().Add(20*timeout)))
				_, err = c.Read(make([]byte, 1))
				if closedByServer(err) {
					silentClosed.Add(1)
					if time.Since(last) < timeout {
						early.Add(1)
					}
				}
			}()
			continue
		}
		go func() { // talks every tenth of the timeout for three timeouts
			defer wg.Done()
			lost := make(chan struct{})
			go func() {
				_, _ = c.Read(make([]byte, 1)) // ends when either side closes
				close(lost)
			}()
			for range 30 {
				if _, err := c.Write([]byte{'t'}); err != nil {
					break
				}
				time.Sleep(timeout / 10)
			}
			select {
			case <-lost:
				talkersLost.Add(1)
			default:
			}
			c.Close()
			<-lost
		}()
	}
	wg.Wait()
	srv.waitAllClosed(t, n)

	assert.Equal(t, int64(n/2), silentClosed.Load(), "silent connections closed by the server")
	assert.Equal(t, int64(0), early.Load(), "closed before the timeout")
	assert.Equal(t, int64(0), talkersLost.Load(), "talking connections closed")
	_, _, idle, peer := srv.counts()
	assert.Equal(t, n/2, idle)
	assert.Equal(t, n/2, peer)
	st := srv.d.Stats()
	assert.Equal(t, uint64(n/2), st.Closed)
	assert.Equal(t, [3]uint64{uint64(n / 2), 0, 0}, st.Events)
	assert.Equal(t, 0, st.Watched)
}

func TestGnetWriterIdlePingsTheClient(t *testing.T) {
	const pings = 5
	srv, addr := startServer(t, gnetidle.Timeouts{Writer: 200 * time.Millisecond}, func(srv *server) {
		srv.onIdle = func(c gnet.Conn, ss *session, e gnetidle.Event) gnet.Action {
			if _, err := c.Write([]byte("ping\n")); err != nil { // on the event loop: Write is allowed
				return gnet.Close
			}
			ss.idle.Wrote()
			return gnet.None
		}
	})
	c := dial(t, addr)
	require.NoError(t, c.SetReadDeadline(time.Now().Add(30*time.Second)))
	buf := make([]byte, 5*pings)
	_, err := io.ReadFull(c, buf)
	require.NoError(t, err)
	assert.Equal(t, "ping\nping\nping\nping\nping\n", string(buf))
	c.Close()
	srv.waitAllClosed(t, 1)

	srv.mu.Lock()
	defer srv.mu.Unlock()
	require.GreaterOrEqual(t, len(srv.events), pings)
	for i, e := range srv.events {
		assert.Equal(t, gnetidle.WriterIdle, e.State, "event %d", i)
		assert.True(t, e.First, "event %d: each ping is a write, so each event is a first", i)
	}
	assert.Equal(t, 0, srv.idleClosed)
}

func TestGnetAllIdleCountsReadsAndWrites(t *testing.T) {
	const timeout = 400 * time.Millisecond
	const steps = 10
	conns := make(chan gnet.Conn, 1)
	srv, addr := startServer(t, gnetidle.Timeouts{All: timeout}, func(srv *server) {
		srv.onOpen = func(c gnet.Conn, _ *session) { conns <- c }
	})
	c := dial(t, addr)
	sc := <-conns

	// Reads keep it active, then writes do, then nothing.
	for range steps {
		_, err := c.Write([]byte{'r'})
		require.NoError(t, err)
		time.Sleep(timeout / 10)
	}
	for range steps {
		require.NoError(t, sc.AsyncWrite([]byte{'w'}, func(c gnet.Conn, err error) error {
			if err == nil {
				c.Context().(*session).idle.Wrote() // AsyncWrite's callback runs on the event loop
			}
			return nil
		}))
		time.Sleep(timeout / 10)
	}
	require.NoError(t, c.SetReadDeadline(time.Now().Add(30*time.Second)))
	got, err := io.ReadAll(c)
	require.NoError(t, err, "closed by the server")
	assert.Equal(t, steps, len(got), "every write arrived before the close")
	srv.waitAllClosed(t, 1)

	srv.mu.Lock()
	defer srv.mu.Unlock()
	require.Len(t, srv.events, 1)
	assert.Equal(t, gnetidle.AllIdle, srv.events[0].State)
	assert.GreaterOrEqual(t, srv.events[0].Idle, timeout)
	assert.Equal(t, 1, srv.idleClosed)
}

func TestGnetPerConnectionTimeoutFromTheFirstByte(t *testing.T) {
	const short, long = 300 * time.Millisecond, time.Minute
	srv, addr := startServer(t, gnetidle.Timeouts{Reader: long}, func(srv *server) {
		srv.onTraffic = func(c gnet.Conn, ss *session, data []byte) {
			// A protocol that negotiates its keep-alive in its first packet.
			if ss.first == 'k' && len(data) > 0 && data[0] == 'k' {
				if err := ss.idle.SetTimeouts(gnetidle.Timeouts{Reader: short}); err != nil {
					panic(err)
				}
			}
		}
	})
	n := scale(20)
	var shortClosed, longClosed atomic.Int64
	var wg sync.WaitGroup
	for i := range n {
		c := dial(t, addr)
		first := byte('x')
		if i%2 == 0 {
			first = 'k'
		}
		_, err := c.Write([]byte{first})
		require.NoError(t, err)
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Far more than the short timeout, far less than the long one.
			require.NoError(t, c.SetReadDeadline(time.Now().Add(10*short)))
			_, err := c.Read(make([]byte, 1))
			if closedByServer(err) {
				if first == 'k' {
					shortClosed.Add(1)
				} else {
					longClosed.Add(1)
				}
			}
			c.Close()
		}()
	}
	wg.Wait()
	srv.waitAllClosed(t, n)

	assert.Equal(t, int64(n/2), shortClosed.Load(), "connections with the short timeout closed")
	assert.Equal(t, int64(0), longClosed.Load(), "connections with the default timeout closed")
	_, _, idle, _ := srv.counts()
	assert.Equal(t, n/2, idle)
}

// TestGnetPeerHangUpRacingIdleIsHandledOnce: every client hangs up within
// a couple of milliseconds of its idle deadline, so that the server sees
// some hang-ups first and some idle events first. Either way, each
// connection is closed once, and the Handler never runs for a connection
// whose OnClose has run.
func TestGnetPeerHangUpRacingIdleIsHandledOnce(t *testing.T) {
	const timeout = 200 * time.Millisecond
	srv, addr := startServer(t, gnetidle.Timeouts{Reader: timeout}, nil)
	n := scale(200)
	var wg sync.WaitGroup
	for range n {
		c := dial(t, addr)
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := c.Write([]byte{'x'})
			require.NoError(t, err)
			time.Sleep(timeout - 2*time.Millisecond + rand.N(4*time.Millisecond))
			c.Close()
		}()
	}
	wg.Wait()
	srv.waitAllClosed(t, n)

	opened, closed, idle, peer := srv.counts()
	assert.Equal(t, n, opened)
	assert.Equal(t, n, closed, "one OnClose per connection")
	assert.Equal(t, n, idle+peer)
	st := srv.d.Stats()
	assert.Equal(t, uint64(idle), st.Closed, "the Detector counts exactly the closes of its Handler")
	assert.Equal(t, 0, st.Watched)
	srv.mu.Lock()
	assert.Equal(t, 0, srv.afterClose, "Handler calls after OnClose")
	assert.Equal(t, idle, len(srv.events), "one Event per idle close, none for the others")
	srv.mu.Unlock()
	t.Logf("%d closed as idle first, %d hung up first", idle, peer)
}

func TestGnetNothingIsRetainedAfterClose(t *testing.T) {
	for _, lookup := range []bool{false, true} {
		name := map[bool]string{false: "Watch in the session", true: "Watch of the Detector"}[lookup]
		t.Run(name, func(t *testing.T) {
			const timeout = 300 * time.Millisecond
			srv, addr := startServer(t, gnetidle.Timeouts{Reader: timeout, Writer: 2 * timeout, All: 3 * timeout},
				func(srv *server) { srv.lookup = lookup })
			n := scale(100)
			var wg sync.WaitGroup
			for i := range n {
				c := dial(t, addr)
				_, err := c.Write([]byte{'x'})
				require.NoError(t, err)
				wg.Add(1)
				go func() { // half hang up, half wait for the server to close
					defer wg.Done()
					if i%2 == 0 {
						c.Close()
						return
					}
					_ = c.SetReadDeadline(time.Now().Add(time.Minute))
					_, _ = c.Read(make([]byte, 1))
				}()
			}
			wg.Wait()
			srv.waitAllClosed(t, n)
			require.Equal(t, 0, srv.d.Stats().Watched)

			srv.mu.Lock()
			sessions, watches := srv.sessions, srv.watches
			srv.mu.Unlock()
			require.Len(t, watches, n)
			assert.Eventually(t, func() bool {
				runtime.GC()
				for i := range n {
					if sessions[i].Value() != nil || watches[i].Value() != nil {
						return false
					}
				}
				return true
			}, 10*time.Second, 20*time.Millisecond, "every session and watch collected")
		})
	}
}

// wrapped is a handler that knows nothing of idleness and keeps its own
// value in the Context.
type wrapped struct {
	gnet.BuiltinEventEngine
	mu     sync.Mutex
	ownCtx int // OnTraffic and OnClose calls that found their own Context
	closes int
}

type own struct{ name string }

func (w *wrapped) OnOpen(c gnet.Conn) ([]byte, gnet.Action) {
	c.SetContext(&own{name: "mine"})
	return nil, gnet.None
}

func (w *wrapped) OnTraffic(c gnet.Conn) gnet.Action {
	_, _ = c.Next(-1)
	w.check(c)
	return gnet.None
}

func (w *wrapped) OnClose(c gnet.Conn, _ error) gnet.Action {
	w.check(c)
	w.mu.Lock()
	w.closes++
	w.mu.Unlock()
	return gnet.None
}

func (w *wrapped) check(c gnet.Conn) {
	if o, ok := c.Context().(*own); ok && o.name == "mine" {
		w.mu.Lock()
		w.ownCtx++
		w.mu.Unlock()
	}
}

func TestGnetWrapClosesIdleConnectionsAndLeavesTheContext(t *testing.T) {
	s, err := schedule.New(2)
	require.NoError(t, err)
	defer s.Shutdown()
	d, err := gnetidle.New(s, gnetidle.Timeouts{Reader: 300 * time.Millisecond}, nil)
	require.NoError(t, err)
	inner := new(wrapped)
	g, err := gnetutil.Serve(d.Wrap(inner), "127.0.0.1:0", gnet.WithMulticore(true), gnet.WithNumEventLoop(2),
		gnet.WithLogger(gnetutil.Logger(os.Stderr, "gnet: ")))
	require.NoError(t, err)
	defer func() { assert.NoError(t, g.Stop(context.Background())) }()

	c := dial(t, g.Addr)
	_, err = c.Write([]byte("hello"))
	require.NoError(t, err)
	require.NoError(t, c.SetReadDeadline(time.Now().Add(30*time.Second)))
	_, err = c.Read(make([]byte, 1))
	assert.True(t, closedByServer(err), "closed by the server: %v", err)
	require.Eventually(t, func() bool {
		inner.mu.Lock()
		defer inner.mu.Unlock()
		return inner.closes == 1
	}, 10*time.Second, 10*time.Millisecond)

	inner.mu.Lock()
	assert.Equal(t, 2, inner.ownCtx, "OnTraffic and OnClose found the handler's own Context")
	inner.mu.Unlock()
	assert.Equal(t, uint64(1), d.Stats().Closed)
	assert.Equal(t, 0, d.Stats().Watched)
}

func TestGnetHandlerThatStopsTheWatchStillCloses(t *testing.T) {
	srv, addr := startServer(t, gnetidle.Timeouts{Reader: 200 * time.Millisecond}, func(srv *server) {
		srv.onIdle = func(_ gnet.Conn, ss *session, _ gnetidle.Event) gnet.Action {
			ss.idle.Stop()
			return gnet.Close // after Stop: still applied
		}
	})
	c := dial(t, addr)
	require.NoError(t, c.SetReadDeadline(time.Now().Add(30*time.Second)))
	_, err := c.Read(make([]byte, 1))
	assert.True(t, closedByServer(err), "closed by the server: %v", err)
	srv.waitAllClosed(t, 1)

	_, _, idle, _ := srv.counts()
	assert.Equal(t, 1, idle)
	assert.Equal(t, uint64(1), srv.d.Stats().Closed)
}
