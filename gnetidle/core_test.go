package gnetidle

import (
	"errors"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
	"weak"

	"github.com/go-schedule/schedule"
	"github.com/panjf2000/gnet/v2"
	errorx "github.com/panjf2000/gnet/v2/pkg/errors"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fireSlack is how long after a deadline, in a bubble's fake time, the
// tests accept an Event: the scheduler may serve a deadline a little late,
// never early. In a bubble it is exact today.
const fireSlack = 5 * time.Millisecond

// assertAt checks that an Event came at want, or at most fireSlack later.
func assertAt(t *testing.T, want, got time.Duration, msg string) {
	t.Helper()
	assert.GreaterOrEqual(t, got, want, "%s: early", msg)
	assert.Less(t, got, want+fireSlack, "%s: late", msg)
}

// settle lets fake time pass and everything run that comes due meanwhile.
func settle(d time.Duration) {
	time.Sleep(d)
	synctest.Wait()
}

func TestReaderIdleComesTimeoutAfterLastRead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Timeouts{Reader: 5 * time.Second})
		c := h.open(h.loop())
		settle(3 * time.Second)
		h.read(c)
		settle(10 * time.Second)

		calls := h.handled()
		require.Len(t, calls, 1)
		assert.Equal(t, ReaderIdle, calls[0].ev.State)
		assertAt(t, 8*time.Second, calls[0].at, "reader idle")
		assert.GreaterOrEqual(t, calls[0].ev.Idle, 5*time.Second)
		assert.False(t, c.open, "the default Handler closes")
	})
}

func TestReaderIdleCountsFromStartWithoutReads(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Timeouts{Reader: 2 * time.Second})
		settle(time.Second)
		c := h.open(h.loop())
		settle(5 * time.Second)

		calls := h.handled()
		require.Len(t, calls, 1)
		assertAt(t, 3*time.Second, calls[0].at, "reader idle from the start")
		assert.Equal(t, c, calls[0].conn)
	})
}

func TestConnectionThatKeepsReadingIsNeverIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Timeouts{Reader: time.Second})
		c := h.open(h.loop())
		for range 100 {
			settle(999 * time.Millisecond)
			h.read(c)
		}
		assert.Empty(t, h.handled())
		assert.True(t, c.open)
		assert.Equal(t, 1, h.s.Len(), "one task for the connection, however many reads")
	})
}

func TestWriterIdleIgnoresReads(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Timeouts{Writer: 4 * time.Second})
		c := h.open(h.loop())
		settle(time.Second)
		h.wrote(c)
		for range 10 {
			settle(500 * time.Millisecond)
			h.read(c)
		}
		settle(5 * time.Second)

		calls := h.handled()
		require.Len(t, calls, 1)
		assert.Equal(t, WriterIdle, calls[0].ev.State)
		assertAt(t, 5*time.Second, calls[0].at, "writer idle from the last write")
	})
}

func TestAllIdleNeedsNeitherReadNorWrite(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Timeouts{All: 3 * time.Second})
		c := h.open(h.loop())
		settle(2 * time.Second)
		h.read(c) // all idle due at 5 s
		settle(2 * time.Second)
		h.wrote(c) // now at 7 s
		settle(10 * time.Second)

		calls := h.handled()
		require.Len(t, calls, 1)
		assert.Equal(t, AllIdle, calls[0].ev.State)
		assertAt(t, 7*time.Second, calls[0].at, "all idle from the later of read and write")
		assertAt(t, 3*time.Second, calls[0].ev.Idle, "idle time")
	})
}

func TestEventsRepeatEveryTimeoutAndOnlyTheFirstIsFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Timeouts{Reader: 2 * time.Second})
		h.action = func(*fakeConn, Event) gnet.Action { return gnet.None }
		h.open(h.loop())
		settle(7 * time.Second)

		calls := h.handled()
		require.Len(t, calls, 3, "at 2, 4 and 6 s")
		for i, r := range calls {
			assertAt(t, time.Duration(i+1)*2*time.Second, r.at, "repeat")
			assert.Equal(t, i == 0, r.ev.First, "event %d", i)
			assertAt(t, time.Duration(i+1)*2*time.Second, r.ev.Idle, "idle time grows")
		}
	})
}

func TestActivityMakesTheNextEventFirstAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Timeouts{Reader: 2 * time.Second})
		h.action = func(*fakeConn, Event) gnet.Action { return gnet.None }
		c := h.open(h.loop())
		settle(5 * time.Second) // events at 2 and 4 s
		h.read(c)               // next at 7 s, first again
		settle(2500 * time.Millisecond)

		calls := h.handled()
		require.Len(t, calls, 3)
		assert.Equal(t, []bool{true, false, true}, []bool{calls[0].ev.First, calls[1].ev.First, calls[2].ev.First})
		assertAt(t, 7*time.Second, calls[2].at, "after the read")
	})
}

func TestStatesAreRaisedInOrderWhenDueTogether(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Timeouts{Reader: time.Second, Writer: time.Second, All: time.Second})
		h.action = func(*fakeConn, Event) gnet.Action { return gnet.None }
		h.open(h.loop())
		settle(1500 * time.Millisecond)

		calls := h.handled()
		require.Len(t, calls, 3)
		for i, want := range []State{ReaderIdle, WriterIdle, AllIdle} {
			assert.Equal(t, want, calls[i].ev.State)
			assertAt(t, time.Second, calls[i].at, want.String())
		}
		assert.Equal(t, 1, h.s.Len(), "one task for three states")
	})
}

func TestEachStateKeepsItsOwnDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Netty's example: ping after 3 s without writing, close after 7 s
		// without reading. The Handler pings (a reported write).
		h := newHarness(t, Timeouts{Reader: 7 * time.Second, Writer: 3 * time.Second})
		h.action = func(c *fakeConn, e Event) gnet.Action {
			if e.State == WriterIdle {
				h.wroteOnLoop(c)
				return gnet.None
			}
			return gnet.Close
		}
		c := h.open(h.loop())
		settle(20 * time.Second)

		calls := h.handled()
		require.Len(t, calls, 3, "pings at 3 and 6 s, closed at 7 s")
		assertAt(t, 3*time.Second, calls[0].at, "first ping")
		assertAt(t, 6*time.Second, calls[1].at, "second ping")
		assert.Equal(t, WriterIdle, calls[1].ev.State)
		assert.True(t, calls[1].ev.First, "the ping was a write")
		assert.Equal(t, ReaderIdle, calls[2].ev.State)
		assertAt(t, 7*time.Second, calls[2].at, "reader idle")
		assert.False(t, c.open)
	})
}

// wroteOnLoop reports a write from code already on c's loop.
func (h *harness) wroteOnLoop(c *fakeConn) { h.watchOf(c).Wrote() }

func TestSetTimeoutsAtStartOverridesTheDefaults(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Timeouts{Reader: 10 * time.Second})
		l := h.loop()
		short := h.open(l, Timeouts{Reader: time.Second})
		long := h.open(l)
		settle(5 * time.Second)

		calls := h.handled()
		require.Len(t, calls, 1)
		assert.Equal(t, short, calls[0].conn)
		assertAt(t, time.Second, calls[0].at, "own timeout")
		assert.True(t, long.open)
	})
}

func TestSetTimeoutsCountsFromTheLastActivity(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// A protocol that negotiates its keep-alive in its first packet.
		h := newHarness(t, Timeouts{Reader: time.Minute})
		c := h.open(h.loop())
		settle(2 * time.Second)
		c.loop.do(func() {
			h.onTraffic(c)
			require.NoError(t, c.watch.SetTimeouts(Timeouts{Reader: 3 * time.Second}))
			assert.Equal(t, Timeouts{Reader: 3 * time.Second}, c.watch.Timeouts())
		})
		settle(10 * time.Second)

		calls := h.handled()
		require.Len(t, calls, 1)
		assertAt(t, 5*time.Second, calls[0].at, "3 s after the read at 2 s")
	})
}

func TestSetTimeoutsShorterThanTheIdleTimeSoFarFiresAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Timeouts{Reader: time.Minute})
		c := h.open(h.loop())
		settle(5 * time.Second)
		c.loop.do(func() { require.NoError(t, c.watch.SetTimeouts(Timeouts{Reader: 2 * time.Second})) })
		settle(time.Second)

		calls := h.handled()
		require.Len(t, calls, 1)
		assertAt(t, 5*time.Second, calls[0].at, "at once")
		assertAt(t, 5*time.Second, calls[0].ev.Idle, "idle since the start")
	})
}

// TestShortenedTimeoutIsKeptWhileAFireIsInFlight: the Event comes at the
// deadline of the connection's own, shorter, timeout even when the task
// comes due again while the pool worker that handed over its previous fire
// is still in its job.
func TestShortenedTimeoutIsKeptWhileAFireIsInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Timeouts{Reader: time.Minute})
		l := h.loop()
		l.hold = make(chan struct{})
		c := h.open(l, Timeouts{Reader: 2 * time.Second})
		settle(1990 * time.Millisecond)
		// A read reaches the loop just after the fire at 2 s was handed
		// over: that fire raises nothing, and the deadline is 4.01 s.
		l.post(func() {
			time.Sleep(20 * time.Millisecond)
			h.onTraffic(c)
		})
		settle(3 * time.Second) // the worker is still in its job at 4.01 s
		close(l.hold)
		settle(2 * time.Minute)

		calls := h.handled()
		require.Len(t, calls, 1)
		assertAt(t, 4010*time.Millisecond, calls[0].at, "2 s after the read")
	})
}

func TestZeroTimeoutsStopTheTimingUntilSetAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Timeouts{Reader: time.Second})
		c := h.open(h.loop())
		c.loop.do(func() { require.NoError(t, c.watch.SetTimeouts(Timeouts{})) })
		settle(time.Second) // let the cancel reach the scheduler
		assert.Equal(t, 0, h.s.Len(), "no task while no state is enabled")
		settle(time.Minute)
		assert.Empty(t, h.handled())
		assert.Equal(t, 1, h.d.Stats().Watched, "still watched")

		c.loop.do(func() { require.NoError(t, c.watch.SetTimeouts(Timeouts{Writer: 2 * time.Minute})) })
		settle(2 * time.Minute)
		calls := h.handled()
		require.Len(t, calls, 1)
		assert.Equal(t, WriterIdle, calls[0].ev.State)
		assertAt(t, 2*time.Minute, calls[0].at, "2 min after the start, the last write")
	})
}

func TestDefaultHandlerClosesAndForgetsTheConnection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Timeouts{Reader: time.Second})
		c := h.open(h.loop())
		settle(2 * time.Second)

		assert.False(t, c.open)
		assert.Equal(t, 1, c.closes)
		assert.Equal(t, 0, h.d.Stats().Watched)
		assert.Equal(t, 0, h.s.Len())
		st := h.d.Stats()
		assert.Equal(t, uint64(1), st.Closed)
		assert.Equal(t, [3]uint64{1, 0, 0}, st.Events)
	})
}

func TestHandlerShutdownStopsTheEventLoop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Timeouts{Reader: time.Second})
		h.action = func(*fakeConn, Event) gnet.Action { return gnet.Shutdown }
		h.open(h.loop())
		settle(1500 * time.Millisecond)

		h.mu.Lock()
		defer h.mu.Unlock()
		require.Len(t, h.runErrs, 1)
		assert.True(t, errors.Is(h.runErrs[0], errorx.ErrEngineShutdown))
	})
}

// TestPeerCloseBeforeQueuedEventRunsDropsIt is the race of a connection
// whose peer hangs up just as it goes idle, in the order where the fire has
// already left the scheduler but the close reaches the event loop first.
func TestPeerCloseBeforeQueuedEventRunsDropsIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Timeouts{Reader: 2 * time.Second})
		c := h.open(h.loop())
		settle(1990 * time.Millisecond)
		// The loop is busy from just before the deadline to just after;
		// meanwhile the fire is queued behind this task, which then
		// handles the peer's hang-up.
		c.loop.post(func() {
			time.Sleep(20 * time.Millisecond)
			h.closeConn(c, nil)
		})
		settle(5 * time.Second)

		assert.Empty(t, h.handled(), "no Event for a closed connection")
		assert.Equal(t, 1, c.closes)
		assert.Equal(t, 0, h.d.Stats().Watched)
		assert.Equal(t, uint64(0), h.d.Stats().Closed)
	})
}

// TestIdleCloseBeforePeerCloseClosesOnce is the same race in the other
// order: the Event closes the connection, and the peer's hang-up that
// follows finds it closed.
func TestIdleCloseBeforePeerCloseClosesOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Timeouts{Reader: 2 * time.Second})
		c := h.open(h.loop())
		settle(2 * time.Second)
		h.peerClose(c)
		settle(5 * time.Second)

		calls := h.handled()
		require.Len(t, calls, 1)
		assert.True(t, calls[0].wasOpen)
		assert.Equal(t, 1, c.closes)
		assertAt(t, 2*time.Second, c.closedAt, "closed by the Event")
	})
}

func TestReadQueuedBeforeTheEventRunsCancelsIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Timeouts{Reader: 2 * time.Second})
		c := h.open(h.loop())
		settle(1990 * time.Millisecond)
		// A read arrives just before the deadline, but the loop handles it
		// only after the fire was queued.
		c.loop.post(func() {
			time.Sleep(20 * time.Millisecond)
			h.onTraffic(c)
		})
		settle(time.Second)
		assert.Empty(t, h.handled(), "read before the Event ran")
		settle(2 * time.Second)

		calls := h.handled()
		require.Len(t, calls, 1)
		assertAt(t, 4010*time.Millisecond, calls[0].at, "2 s after the late read")
	})
}

func TestSlowHandlerHoldsUpOnlyItsOwnLoop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Timeouts{Reader: time.Second})
		h.action = func(c *fakeConn, e Event) gnet.Action {
			if c.tag == "slow" {
				time.Sleep(3 * time.Second) // blocks its loop, as it would in gnet
			}
			return gnet.Close
		}
		slowLoop, otherLoop := h.loop(), h.loop()
		slow := h.open(slowLoop)
		slowLoop.do(func() { slow.tag = "slow" })
		other := h.open(otherLoop)
		settle(10 * time.Millisecond)
		sameLoop := h.open(slowLoop) // due 10 ms after the slow one
		settle(10 * time.Second)

		at := map[*fakeConn]time.Duration{}
		for _, r := range h.handled() {
			at[r.conn] = r.at
		}
		require.Len(t, at, 3)
		assertAt(t, time.Second, at[other], "other loop on time")
		assertAt(t, 4*time.Second, at[sameLoop], "the same loop waits for the slow Handler")
		assert.GreaterOrEqual(t, sameLoop.closedAt, 4*time.Second)
		assert.False(t, slow.open)
	})
}

func TestNothingIsRetainedAfterClose(t *testing.T) {
	for _, lookup := range []bool{false, true} {
		name := map[bool]string{false: "kept by the server", true: "kept by the Detector"}[lookup]
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t, Timeouts{Reader: time.Second, Writer: 2 * time.Second, All: 3 * time.Second})
				h.lookup = lookup
				l := h.loop()
				var refs []weak.Pointer[Watch]
				for i := range 100 {
					c := h.open(l)
					w := onLoop(c, func() *Watch { return h.watchOf(c) })
					require.NotNil(t, w)
					refs = append(refs, weak.Make(w))
					if i%2 == 0 {
						h.peerClose(c) // the other half goes idle
					}
				}
				settle(5 * time.Second)
				require.Equal(t, 0, h.d.Stats().Watched)
				require.Equal(t, 0, h.s.Len())
				for _, c := range h.handled() {
					c.conn.watch = nil // the server's own reference
				}

				runtime.GC()
				runtime.GC()
				for i, r := range refs {
					assert.Nil(t, r.Value(), "watch %d still reachable", i)
				}
			})
		})
	}
}

func TestWatchOfFindsTheWatchOfItsOwnConnection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Timeouts{Reader: 2 * time.Second})
		h.lookup = true
		l := h.loop()
		a, b := h.open(l), h.open(l)
		settle(1500 * time.Millisecond)
		h.read(a)
		settle(time.Second)

		calls := h.handled()
		require.Len(t, calls, 1, "b only")
		assert.Equal(t, b, calls[0].conn)
		h.peerClose(a)
		assert.Nil(t, onLoop(a, func() *Watch { return h.d.WatchOf(a) }))
		assert.Nil(t, onLoop(a, func() *Watch { return h.d.conns.load(a.fd) }), "Stop empties the slot")

		// A new connection on a's descriptor gets a watch of its own.
		c := &fakeConn{loop: l, fd: a.fd, open: true}
		l.do(func() { require.NoError(t, h.d.Start(c, new(Watch))) })
		h.read(a) // the old connection is not c
		settle(2500 * time.Millisecond)
		calls = h.handled()
		require.Len(t, calls, 2)
		assert.Equal(t, c, calls[1].conn)
		assertAt(t, 2500*time.Millisecond+2*time.Second, calls[1].at, "counted from its own start")
	})
}

func TestWrapWatchesEveryConnection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Timeouts{Reader: time.Second, Writer: time.Second})
		h.lookup = true
		h.action = func(*fakeConn, Event) gnet.Action { return gnet.None }
		inner := &countingHandler{greeting: []byte("hello")}
		wh := h.d.Wrap(inner)
		l := h.loop()
		c := &fakeConn{loop: l, fd: 100, open: true}
		l.do(func() {
			out, action := wh.OnOpen(c)
			assert.Equal(t, "hello", string(out))
			assert.Equal(t, gnet.None, action)
		})
		settle(500 * time.Millisecond)
		l.do(func() {
			c.inbound = 1
			wh.OnTraffic(c) // a read
			c.inbound = 0
			wh.OnTraffic(c) // a wake with nothing to read: not a read
		})
		settle(2 * time.Second)
		l.do(func() { wh.OnClose(c, nil) })

		calls := h.handled()
		require.GreaterOrEqual(t, len(calls), 2)
		assert.Equal(t, WriterIdle, calls[0].ev.State)
		assertAt(t, time.Second, calls[0].at, "writer idle from the greeting")
		assert.Equal(t, ReaderIdle, calls[1].ev.State)
		assertAt(t, 1500*time.Millisecond, calls[1].at, "reader idle from the read at 0.5 s")
		assert.Equal(t, [3]int{1, 2, 1}, [3]int{inner.opens, inner.traffic, inner.closes})
		assert.Equal(t, 0, h.d.Stats().Watched)
	})
}

// countingHandler is a gnet handler that counts its events and greets.
type countingHandler struct {
	gnet.BuiltinEventEngine
	greeting               []byte
	opens, traffic, closes int
}

func (c *countingHandler) OnOpen(gnet.Conn) ([]byte, gnet.Action) {
	c.opens++
	return c.greeting, gnet.None
}

func (c *countingHandler) OnTraffic(gnet.Conn) gnet.Action {
	c.traffic++
	return gnet.None
}

func (c *countingHandler) OnClose(gnet.Conn, error) gnet.Action {
	c.closes++
	return gnet.None
}

func TestNewRejectsBadArguments(t *testing.T) {
	_, err := New(nil, Timeouts{}, nil)
	assert.ErrorIs(t, err, ErrNilScheduler)

	s, err := schedule.New(1)
	require.NoError(t, err)
	defer s.Shutdown()
	_, err = New(s, Timeouts{Writer: -time.Second}, nil)
	assert.ErrorIs(t, err, ErrNegativeTimeout)
	_, err = New(s, Timeouts{}, nil)
	assert.NoError(t, err, "every state off by default")
}

func TestWatchMisuseIsRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Timeouts{Reader: time.Second})
		c := h.open(h.loop())
		c.loop.do(func() {
			assert.ErrorIs(t, h.d.Start(c, c.watch), ErrWatchUsed)
			assert.ErrorIs(t, h.d.Start(c, new(Watch)), ErrConnWatched)
			assert.ErrorIs(t, h.d.Start(nil, new(Watch)), ErrNilConn)
			assert.ErrorIs(t, c.watch.SetTimeouts(Timeouts{Reader: -1}), ErrNegativeTimeout)
			assert.ErrorIs(t, new(Watch).SetTimeouts(Timeouts{}), ErrNotWatched)
			other := &fakeConn{loop: c.loop, fd: 50, open: true}
			assert.Nil(t, h.d.WatchOf(other))
			assert.ErrorIs(t, h.d.WatchOf(other).SetTimeouts(Timeouts{}), ErrNotWatched)

			var zero Watch // methods of a Watch never started do nothing
			zero.Read()
			zero.Wrote()
			zero.Stop()
			assert.Equal(t, Timeouts{}, zero.Timeouts())
			var none *Watch // nor do those of a nil Watch
			none.Read()
			none.Wrote()
			none.Stop()
			assert.Equal(t, Timeouts{}, none.Timeouts())

			c.watch.Stop()
			c.watch.Stop() // idempotent
			assert.ErrorIs(t, h.d.Start(c, c.watch), ErrWatchUsed, "a stopped Watch is not reused")
			assert.ErrorIs(t, c.watch.SetTimeouts(Timeouts{}), ErrNotWatched)
		})
		assert.Equal(t, 0, h.d.Stats().Watched)
	})
}

func TestStartFailsOnceTheSchedulerIsShutDown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Timeouts{Reader: time.Second})
		h.s.Shutdown()
		l := h.loop()
		c := &fakeConn{loop: l, fd: 9, open: true}
		l.do(func() {
			w := new(Watch)
			err := h.d.Start(c, w)
			assert.ErrorIs(t, err, schedule.ErrShutdown)
			assert.Nil(t, h.d.WatchOf(c), "not kept")
			assert.ErrorIs(t, h.d.Start(c, w), ErrWatchUsed, "stopped")
			w.Read() // stopped: nothing happens
		})
		assert.Equal(t, 0, h.d.Stats().Watched)
	})
}

func TestStateNames(t *testing.T) {
	assert.Equal(t, "reader idle", ReaderIdle.String())
	assert.Equal(t, "writer idle", WriterIdle.String())
	assert.Equal(t, "all idle", AllIdle.String())
	assert.Equal(t, "State(7)", State(7).String())
}

func TestEndlessReaderTimeoutKeepsTheWriterTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Timeouts{Reader: math.MaxInt64, Writer: 300 * time.Millisecond})
		settle(time.Second) // a clock past the epoch, as any but the first instant
		c := h.open(h.loop())
		settle(time.Second)

		calls := h.handled()
		require.Len(t, calls, 1)
		assert.Equal(t, WriterIdle, calls[0].ev.State)
		assertAt(t, 1300*time.Millisecond, calls[0].at, "writer idle")
		assert.False(t, c.open)
	})
}

func TestEndlessWriterTimeoutKeepsTheReaderTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Timeouts{Reader: 300 * time.Millisecond, Writer: math.MaxInt64})
		settle(time.Second) // a clock past the epoch, as any but the first instant
		c := h.open(h.loop())
		settle(time.Second)

		calls := h.handled()
		require.Len(t, calls, 1)
		assert.Equal(t, ReaderIdle, calls[0].ev.State)
		assertAt(t, 1300*time.Millisecond, calls[0].at, "reader idle")
		assert.False(t, c.open)
	})
}

func TestEndlessTimeoutSetLaterKeepsTheOtherTimeouts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Timeouts{Reader: time.Minute})
		settle(time.Second)
		c := h.open(h.loop())
		settle(time.Second)
		c.loop.do(func() {
			require.NoError(t, c.watch.SetTimeouts(Timeouts{Reader: 300 * time.Millisecond, All: math.MaxInt64}))
		})
		settle(time.Second)

		calls := h.handled()
		require.Len(t, calls, 1)
		assert.Equal(t, ReaderIdle, calls[0].ev.State)
		assertAt(t, 2*time.Second, calls[0].at, "at once: idle for a second already")
	})
}

func TestHandlerThatStopsTheWatchStillClosesTheConnection(t *testing.T) {
	for _, lookup := range []bool{false, true} {
		name := map[bool]string{false: "kept by the server", true: "kept by the Detector"}[lookup]
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t, Timeouts{Reader: time.Second})
				h.lookup = lookup
				h.action = func(c *fakeConn, _ Event) gnet.Action {
					h.watchOf(c).Stop()
					return gnet.Close
				}
				c := h.open(h.loop())
				settle(2 * time.Second)

				require.Len(t, h.handled(), 1)
				assert.False(t, c.open, "the Action is applied whatever became of the watch")
				assert.Equal(t, 1, c.closes)
				assert.Equal(t, uint64(1), h.d.Stats().Closed)
				assert.Equal(t, 0, h.d.Stats().Watched)
			})
		})
	}
}

// TestRefusedConnectionIsNeverCounted reads Stats from another
// goroutine while connections are refused by a shut-down scheduler: a
// connection counts only once it is watched, so it never sees one.
func TestRefusedConnectionIsNeverCounted(t *testing.T) {
	s, err := schedule.New(1)
	require.NoError(t, err)
	s.Shutdown()
	d, err := New(s, Timeouts{Reader: time.Second}, nil)
	require.NoError(t, err)

	var done atomic.Bool
	var seen atomic.Int64
	var wg sync.WaitGroup
	wg.Go(func() {
		for !done.Load() {
			if d.Stats().Watched != 0 {
				seen.Add(1)
			}
		}
	})
	c := &fakeConn{loop: new(fakeLoop), fd: 3}
	for range 20_000 { // many, so that the reader would see a count if there were one
		require.ErrorIs(t, d.Start(c, new(Watch)), schedule.ErrShutdown)
	}
	done.Store(true)
	wg.Wait()
	assert.Zero(t, seen.Load(), "reads that counted a refused connection")
}
