package mqtt_test

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-schedule/schedule"
	"github.com/go-schedule/schedule/heartbeat"
	"github.com/go-schedule/schedule/mqtt"
	"github.com/go-schedule/schedule/mqtt/internal/wire"
	mochi "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// TestMain fails the run if a test leaves a goroutine behind: a broker, a
// client or a scheduler not closed. Importing ants starts its
// package-level default pool before any test runs; IgnoreCurrent ignores
// it.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreCurrent())
}

// A silent client's keep-alive here is 1 s: the hook disconnects it after
// 1.5 s. Tests wait far longer than that before they call a client
// connected when it should not be, and they measure nothing else.
const (
	keepAlive = 1
	timeout   = 1500 * time.Millisecond
	patience  = 15 * time.Second
)

// TestSilentClientIsDisconnectedAndItsWillPublished is the hook's job: a
// client that sends nothing after CONNECT is disconnected by the hook (its
// stop cause is the keep-alive reason code, not a socket deadline), no
// sooner than 1.5 × its Keep Alive, its will is published, and its watch
// ends. MQTT 3.1.1 and 5 alike.
func TestSilentClientIsDisconnectedAndItsWillPublished(t *testing.T) {
	for _, version := range []byte{4, 5} {
		t.Run(map[byte]string{4: "3.1.1", 5: "5"}[version], func(t *testing.T) {
			t.Parallel()
			b := startBroker(t, brokerOptions{})
			start := time.Now()
			c := b.dial(wire.Options{ClientID: "dev", Version: version, KeepAlive: keepAlive, WillTopic: "will/dev", WillPayload: []byte("offline")})
			waitLen(t, b.ka, 1) // OnSessionEstablished comes just after CONNACK
			waitClosed(t, c, patience)
			if took := time.Since(start); took < timeout {
				t.Errorf("disconnected after %v, before 1.5 × keep-alive (%v)", took, timeout)
			}
			dc, ok := b.obs.waitDisconnect(c.LocalAddr().String(), patience)
			if !ok {
				t.Fatal("no OnDisconnect for the silent client")
			}
			if !isKeepAliveTimeout(dc.cause) {
				t.Errorf("stop cause %v (OnDisconnect error %v), want the hook's %v", dc.cause, dc.err, packets.ErrKeepAliveTimeout)
			}
			if w := b.waitWills(1, patience); !slices.Equal(w, []string{"will/dev"}) {
				t.Errorf("wills published: %q, want [will/dev]", w)
			}
			if n := b.ka.Expired(); n != 1 {
				t.Errorf("Expired() = %d, want 1", n)
			}
			if n := b.ka.Len(); n != 0 {
				t.Errorf("still watching %d clients after the disconnect", n)
			}
		})
	}
}

// The hook's user is a broker whose clients come through a listener other
// than mqtt.NewTCP, which wraps TCP sockets only: here mochi's own
// Unix-socket listener. The hook disconnects a silent client there too.
func TestSilentClientOnAUnixSocketIsDisconnectedByTheHook(t *testing.T) {
	dir, err := os.MkdirTemp("", "mqtt") // short: a socket path has at most 107 bytes
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	b := startBroker(t, brokerOptions{unix: filepath.Join(dir, "broker.sock")})
	c := b.dial(wire.Options{ClientID: "dev", Version: 4, KeepAlive: keepAlive, WillTopic: "will/dev", WillPayload: []byte("offline")})
	waitLen(t, b.ka, 1)
	waitClosed(t, c, patience)
	assert.Equal(t, []string{"will/dev"}, b.waitWills(1, patience))
	assert.Equal(t, uint64(1), b.ka.Expired())
	for _, dc := range b.obs.disconnected() {
		assert.True(t, isKeepAliveTimeout(dc.cause), "stop cause %v, want the hook's", dc.cause)
	}
}

// recordingConn is the broker's end of a connection: it records every
// deadline mochi sets, and can refuse every write.
type recordingConn struct {
	net.Conn
	refuseWrites bool
	mu           sync.Mutex
	deadlines    []time.Time
}

func (c *recordingConn) SetDeadline(t time.Time) error {
	c.mu.Lock()
	c.deadlines = append(c.deadlines, t)
	c.mu.Unlock()
	return c.Conn.SetDeadline(t)
}

func (c *recordingConn) Write(p []byte) (int, error) {
	if c.refuseWrites {
		return 0, errors.New("write refused by the test")
	}
	return c.Conn.Write(p)
}

func (c *recordingConn) recorded() []time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.deadlines)
}

// pipeClient hands conn, the broker's end of an in-memory pipe, to b. The
// channel it returns delivers the result of EstablishConnection when mochi
// is done with the connection.
func pipeClient(b *broker, conn *recordingConn) <-chan error {
	done := make(chan error, 1)
	go func() { done <- b.srv.EstablishConnection("pipe", conn) }()
	return done
}

// TestMochiReadDeadlineIsOff: with the hook, mochi's own keep-alive (a
// socket deadline of 1.5 × Keep Alive, set before every packet it reads)
// must be off once the session is established, or both would act on the
// same client. The broker's end of the connection records the deadlines
// mochi sets: only the one that bounds the handshake may be set, every
// later one must be "none". Without the hook, every deadline is set: the
// recording itself works.
func TestMochiReadDeadlineIsOff(t *testing.T) {
	for _, withHook := range []bool{true, false} {
		name := map[bool]string{true: "hook", false: "mochi alone"}[withHook]
		t.Run(name, func(t *testing.T) {
			b := startBroker(t, brokerOptions{noHook: !withHook, noListener: true})
			server, client := net.Pipe()
			rc := &recordingConn{Conn: server}
			done := pipeClient(b, rc)
			c, err := wire.Connect(client, wire.Options{ClientID: "dev", KeepAlive: 10})
			if err != nil {
				t.Fatal(err)
			}
			for range 3 {
				roundTrip(t, c, patience)
			}
			c.Close()
			<-done

			d := rc.recorded()
			if len(d) < 4 { // the handshake's, then one per packet read
				t.Fatalf("mochi set %d deadlines, want at least 4", len(d))
			}
			if d[0].IsZero() {
				t.Errorf("no deadline during the handshake")
			}
			for i, dl := range d[1:] {
				if withHook && !dl.IsZero() {
					t.Errorf("deadline %d after the session was established is %v, want none: mochi's keep-alive is still on", i+1, dl)
				}
				if !withHook && dl.IsZero() {
					t.Errorf("mochi alone set no deadline before packet %d", i+1)
				}
			}
		})
	}
}

// denyAll is an authentication hook that refuses every client.
type denyAll struct{ mochi.HookBase }

func (denyAll) ID() string                                               { return "deny-all" }
func (denyAll) Provides(b byte) bool                                     { return b == mochi.OnConnectAuthenticate }
func (denyAll) OnConnectAuthenticate(*mochi.Client, packets.Packet) bool { return false }

// TestFailedAuthenticationArmsNoWatch: a connection that fails
// authentication has passed OnConnect but never reaches OnDisconnect, so a
// watch armed for it before the session is established would never be
// removed and would time out a client that is long gone. The hook arms
// nothing for it.
func TestFailedAuthenticationArmsNoWatch(t *testing.T) {
	t.Parallel()
	b := startBroker(t, brokerOptions{auth: new(denyAll), noListener: true})
	const n = 50
	for i := range n {
		server, client := net.Pipe()
		done := pipeClient(b, &recordingConn{Conn: server})
		_, err := wire.Connect(client, wire.Options{ClientID: "intruder", KeepAlive: keepAlive})
		if !errors.Is(err, wire.ErrRefused) {
			t.Fatalf("client %d: %v, want a refusal", i, err)
		}
		if err := <-done; !errors.Is(err, packets.ErrBadUsernameOrPassword) {
			t.Fatalf("client %d: EstablishConnection returned %v", i, err)
		}
		client.Close()
	}
	// The premise: each passed OnConnect, none reaches OnDisconnect.
	if got := b.obs.connects.Load(); got != n {
		t.Errorf("%d OnConnect calls, want %d", got, n)
	}
	if got := len(b.obs.disconnected()); got != 0 {
		t.Errorf("%d OnDisconnect calls, want none", got)
	}
	if got := b.ka.Len(); got != 0 {
		t.Errorf("watching %d clients that failed authentication, want none", got)
	}
	time.Sleep(timeout + 500*time.Millisecond) // any watch armed would have expired by now
	if got := b.ka.Expired(); got != 0 {
		t.Errorf("%d expiries for clients that failed authentication", got)
	}
}

// TestFailedConnackArmsNoWatch: when mochi cannot write CONNACK, the
// connection has passed OnSessionEstablish, but OnSessionEstablished and
// OnDisconnect never come. Nothing is watched for it.
func TestFailedConnackArmsNoWatch(t *testing.T) {
	b := startBroker(t, brokerOptions{noListener: true})
	server, client := net.Pipe()
	done := pipeClient(b, &recordingConn{Conn: server, refuseWrites: true})
	clientDone := make(chan struct{})
	go func() {
		defer close(clientDone)
		if c, err := wire.Connect(client, wire.Options{ClientID: "dev", KeepAlive: keepAlive}); err == nil {
			c.Close()
		}
		client.Close()
	}()
	defer func() { <-clientDone }()
	if err := <-done; err == nil || !strings.Contains(err.Error(), "ack connection packet") {
		t.Fatalf("EstablishConnection returned %v, want a failed CONNACK", err)
	}
	if got := b.obs.establishing.Load(); got != 1 {
		t.Errorf("%d OnSessionEstablish calls, want 1", got)
	}
	if got, dcs := b.obs.established.Load(), len(b.obs.disconnected()); got != 0 || dcs != 0 {
		t.Errorf("%d OnSessionEstablished and %d OnDisconnect calls, want none", got, dcs)
	}
	if got := b.ka.Len(); got != 0 {
		t.Errorf("watching %d clients whose CONNACK failed, want none", got)
	}
}

// TestTakeoverWatchesTheNewConnection: a second connection with the same
// client ID takes the session over. mochi calls OnDisconnect for the old
// connection, usually after OnSessionEstablished for the new one, so a
// watch keyed by client ID would end with the old connection, and the new
// one would never time out (or the old one's deadline would cut the new
// one off). Keyed by connection: the new connection stays watched, is not
// disconnected while it pings, and is disconnected, with its will, once
// it falls silent.
func TestTakeoverWatchesTheNewConnection(t *testing.T) {
	t.Parallel()
	b := startBroker(t, brokerOptions{})
	old := b.dial(wire.Options{ClientID: "dev", KeepAlive: keepAlive, WillTopic: "will/old"})
	oldAddr := old.LocalAddr().String()
	cur := b.dial(wire.Options{ClientID: "dev", KeepAlive: keepAlive, WillTopic: "will/new"})
	if _, ok := b.obs.waitDisconnect(oldAddr, patience); !ok {
		t.Fatal("the old connection was not disconnected by the takeover")
	}
	roundTrip(t, cur, patience) // the new session is established
	if got := b.ka.Len(); got != 1 {
		t.Fatalf("watching %d connections after the takeover, want 1 (the new one)", got)
	}
	// Ping for twice the timeout: the old connection's watch is gone and
	// must not end the new one.
	for end := time.Now().Add(2 * timeout); time.Now().Before(end); {
		roundTrip(t, cur, patience)
		time.Sleep(timeout / 5)
	}
	waitClosed(t, cur, patience)
	dc, ok := b.obs.waitDisconnect(cur.LocalAddr().String(), patience)
	if !ok {
		t.Fatal("no OnDisconnect for the new connection")
	}
	if !isKeepAliveTimeout(dc.cause) {
		t.Errorf("new connection stopped by %v, want the keep-alive timeout", dc.cause)
	}
	if w := b.waitWills(1, patience); !slices.Contains(w, "will/new") {
		t.Errorf("wills published: %q, want will/new among them", w)
	}
	if got := b.ka.Expired(); got != 1 {
		t.Errorf("Expired() = %d, want 1 (the new connection)", got)
	}
	if got := b.ka.Len(); got != 0 {
		t.Errorf("still watching %d connections", got)
	}
}

// TestEveryPacketIsActivity: a client that sends only PINGREQs, or only
// PUBLISHes, more often than its Keep Alive stays connected for several
// timeouts; when it stops, it is disconnected.
func TestEveryPacketIsActivity(t *testing.T) {
	for _, kind := range []string{"PINGREQ", "PUBLISH"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			b := startBroker(t, brokerOptions{})
			c := b.dial(wire.Options{ClientID: "dev", KeepAlive: keepAlive})
			for end := time.Now().Add(3 * timeout); time.Now().Before(end); time.Sleep(timeout / 5) {
				var err error
				if kind == "PINGREQ" {
					err = c.Ping()
				} else {
					err = c.Publish("telemetry/dev", []byte("21.5"), 4)
				}
				if err != nil {
					t.Fatalf("after %v: %v", time.Since(end.Add(-3*timeout)), err)
				}
			}
			roundTrip(t, c, patience) // still connected
			if got := b.ka.Expired(); got != 0 {
				t.Fatalf("%d expiries for a client that kept sending %s", got, kind)
			}
			waitClosed(t, c, patience)
			if got := b.ka.Expired(); got != 1 {
				t.Errorf("Expired() = %d after it fell silent, want 1", got)
			}
		})
	}
}

// TestManyDistinctKeepAlivesAreEachEnforced: clients with different Keep
// Alives share the hook's one Monitor, which keeps each client's timeout
// beside its watch (a Keep Alive of 60 s gives the Monitor's own timeout,
// the others one of their own). Each client is timed out by its own Keep
// Alive, a packet of a busy client keeps it connected, and every
// disconnection ends its watch.
func TestManyDistinctKeepAlivesAreEachEnforced(t *testing.T) {
	b := startBroker(t, brokerOptions{})
	var long []*wire.Conn
	for i := range 5 { // 60 s: the Monitor's own timeout; 61–64 s: timeouts of their own
		ka := uint16(60 + i)
		long = append(long, b.dial(wire.Options{ClientID: fmt.Sprintf("ka-%d", ka), KeepAlive: ka}))
	}
	active := b.dial(wire.Options{ClientID: "active", KeepAlive: keepAlive})
	silent := b.dial(wire.Options{ClientID: "silent", KeepAlive: keepAlive, WillTopic: "will/silent"})
	silentSince := time.Now()
	waitLen(t, b.ka, 7)
	require.Zero(t, b.ka.Expired(), "expiries before any timeout")

	go func() { // keep active busy for three timeouts
		for end := time.Now().Add(3 * timeout); time.Now().Before(end); time.Sleep(timeout / 5) {
			if active.Ping() != nil {
				return
			}
		}
	}()
	waitClosed(t, silent, patience)
	assert.GreaterOrEqual(t, time.Since(silentSince), timeout, "the silent client was cut before its timeout")
	assert.Equal(t, []string{"will/silent"}, b.waitWills(1, patience))
	time.Sleep(3*timeout - time.Since(silentSince))
	roundTrip(t, active, patience) // still connected
	assert.Equal(t, uint64(1), b.ka.Expired(), "only the silent client expired")

	for _, c := range long {
		c.Close()
	}
	active.Close()
	waitLen(t, b.ka, 0)
}

// TestKeepAliveZeroIsNotWatched: a Keep Alive of 0 means no timeout. Such
// a client is never watched, not even once it sends packets (a packet from
// an unwatched client must not start a watch).
func TestKeepAliveZeroIsNotWatched(t *testing.T) {
	b := startBroker(t, brokerOptions{})
	c := b.dial(wire.Options{ClientID: "forever", KeepAlive: 0})
	watched := b.dial(wire.Options{ClientID: "watched", KeepAlive: 60})
	for range 3 {
		roundTrip(t, c, patience) // the broker has read the PINGREQ
		roundTrip(t, watched, patience)
	}
	if got := b.ka.Len(); got != 1 {
		t.Errorf("watching %d clients, want 1 (not the one with Keep Alive 0)", got)
	}
	c.Close()
	if _, ok := b.obs.waitDisconnect(c.LocalAddr().String(), patience); !ok {
		t.Fatal("no OnDisconnect")
	}
	watched.Close()
	if _, ok := b.obs.waitDisconnect(watched.LocalAddr().String(), patience); !ok {
		t.Fatal("no OnDisconnect")
	}
	if got := b.ka.Len(); got != 0 {
		t.Errorf("watching %d clients after both left", got)
	}
}

// serverKeepAlive is an authentication hook that lets every client in and
// imposes an MQTT 5 Server Keep Alive of 1 s on it, as mochi lets a hook
// do in OnConnect.
type serverKeepAlive struct{ mochi.HookBase }

func (serverKeepAlive) ID() string { return "server-keepalive" }
func (serverKeepAlive) Provides(b byte) bool {
	return b == mochi.OnConnect || b == mochi.OnConnectAuthenticate
}
func (serverKeepAlive) OnConnectAuthenticate(*mochi.Client, packets.Packet) bool { return true }
func (serverKeepAlive) OnConnect(cl *mochi.Client, _ packets.Packet) error {
	cl.State.Keepalive = keepAlive
	cl.State.ServerKeepalive = true
	return nil
}

// TestServerKeepAliveIsEnforcedAndAnnounced: a Server Keep Alive set by a
// hook in OnConnect is the one the hook enforces, and CONNACK still
// announces it to the client (mochi writes it from State.Keepalive, which
// the hook zeroes only after CONNACK).
func TestServerKeepAliveIsEnforcedAndAnnounced(t *testing.T) {
	t.Parallel()
	b := startBroker(t, brokerOptions{auth: new(serverKeepAlive)})
	c := b.dial(wire.Options{ClientID: "dev", Version: 5, KeepAlive: 600})
	ack := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Connack}, ProtocolVersion: 5}
	if err := ack.ConnackDecode(c.Connack); err != nil {
		t.Fatal(err)
	}
	if !ack.Properties.ServerKeepAliveFlag || ack.Properties.ServerKeepAlive != keepAlive {
		t.Errorf("CONNACK announces Server Keep Alive %d (flag %v), want %d",
			ack.Properties.ServerKeepAlive, ack.Properties.ServerKeepAliveFlag, keepAlive)
	}
	waitClosed(t, c, patience) // after 1.5 s, not 900 s
	if got := b.ka.Expired(); got != 1 {
		t.Errorf("Expired() = %d, want 1", got)
	}
}

// TestShutDownSchedulerLeavesKeepAliveToMochi: once the scheduler is shut
// down the hook cannot watch a new client; it must then leave mochi's own
// keep-alive on rather than leave the client with none.
func TestShutDownSchedulerLeavesKeepAliveToMochi(t *testing.T) {
	b := startBroker(t, brokerOptions{noListener: true, shutdownNow: true})
	server, client := net.Pipe()
	rc := &recordingConn{Conn: server}
	done := pipeClient(b, rc)
	c, err := wire.Connect(client, wire.Options{ClientID: "dev", KeepAlive: 10})
	if err != nil {
		t.Fatal(err)
	}
	roundTrip(t, c, patience)
	c.Close()
	<-done
	for i, dl := range rc.recorded() {
		if dl.IsZero() {
			t.Errorf("deadline %d is none: the client has no keep-alive at all", i)
		}
	}
}

// TestProvidesExactlyTheHandledEvents: mochi calls a hook only for the
// events its Provides lists (HookBase lists none).
func TestProvidesExactlyTheHandledEvents(t *testing.T) {
	s, err := schedule.New(1)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown()
	k := mqtt.NewKeepAlive(s)
	want := []byte{mochi.OnSessionEstablished, mochi.OnPacketRead, mochi.OnDisconnect}
	for b := byte(0); b < 64; b++ {
		if got := k.Provides(b); got != slices.Contains(want, b) {
			t.Errorf("Provides(%d) = %v", b, got)
		}
	}
	if k.ID() != mqtt.HookID {
		t.Errorf("ID() = %q", k.ID())
	}
}

// TestNilScheduler: a hook without a scheduler is refused by AddHook.
func TestNilScheduler(t *testing.T) {
	srv := mochi.New(&mochi.Options{Logger: quiet})
	err := srv.AddHook(mqtt.NewKeepAlive(nil), nil)
	if !errors.Is(err, heartbeat.ErrNilScheduler) {
		t.Errorf("AddHook: %v, want heartbeat.ErrNilScheduler", err)
	}
}

// TestTimeout: 1.5 × Keep Alive exactly, and 0 for 0.
func TestTimeout(t *testing.T) {
	for ka, want := range map[uint16]time.Duration{0: 0, 1: 1500 * time.Millisecond, 2: 3 * time.Second, 60: 90 * time.Second, 65535: 98302500 * time.Millisecond} {
		if got := mqtt.Timeout(ka); got != want {
			t.Errorf("Timeout(%d) = %v, want %v", ka, got, want)
		}
	}
}
