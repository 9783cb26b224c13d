package mqtt_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-schedule/schedule"
	"github.com/go-schedule/schedule/mqtt"
	"github.com/go-schedule/schedule/mqtt/internal/wire"
	mochi "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/hooks/auth"
	"github.com/mochi-mqtt/server/v2/listeners"
	"github.com/mochi-mqtt/server/v2/packets"
)

// quiet is a logger for brokers under test: mochi warns about every
// Keep Alive of 5 s or less, and the tests use 1 s.
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// broker is a mochi broker under test, with the keep-alive hook (unless
// the test left it out), an observer hook after it, and an inline
// subscription that records every will.
type broker struct {
	t       *testing.T
	srv     *mochi.Server
	sched   *schedule.Scheduler
	ka      *mqtt.KeepAlive // nil without the hook
	obs     *observer
	addr    string // the listener's address, when it has one
	network string // addr's network: "tcp" unless the test chose "unix"

	mu    sync.Mutex
	wills []string // topics of the wills published, in order
	wait  chan struct{}
}

// brokerOptions change what startBroker builds.
type brokerOptions struct {
	noHook      bool       // leave the keep-alive hook out: mochi's own keep-alive
	listener    bool       // no hook, and mochi's deadlines served by mqtt.NewTCP's listener
	auth        mochi.Hook // in place of auth.AllowHook
	noListener  bool       // connections come through EstablishConnection only
	unix        string     // a Unix socket path: mochi's Unix-socket listener in place of TCP
	shutdownNow bool       // shut the scheduler down before the broker serves
}

// startBroker starts a broker on a loopback port. The test's cleanup
// waits for every client to go, closes the broker and shuts the
// scheduler down.
func startBroker(t *testing.T, o brokerOptions) *broker {
	t.Helper()
	s, err := schedule.New(4)
	if err != nil {
		t.Fatal(err)
	}
	b := &broker{t: t, sched: s, obs: newObserver(), wait: make(chan struct{}, 1)}
	caps := mochi.NewDefaultServerCapabilities()
	caps.MaximumClientWritesPending = 64
	b.srv = mochi.New(&mochi.Options{InlineClient: true, Logger: quiet, Capabilities: caps})
	authHook := o.auth
	if authHook == nil {
		authHook = new(auth.AllowHook)
	}
	must(t, b.srv.AddHook(authHook, nil))
	if !o.noHook && !o.listener {
		b.ka = mqtt.NewKeepAlive(s)
		must(t, b.srv.AddHook(b.ka, nil))
	}
	must(t, b.srv.AddHook(b.obs, nil))
	switch config := (listeners.Config{ID: "tcp", Address: "127.0.0.1:0"}); {
	case o.listener:
		l := mqtt.NewTCP(config, s)
		must(t, b.srv.AddListener(l))
		b.addr = l.Address()
	case o.unix != "":
		must(t, b.srv.AddListener(listeners.NewUnixSock(listeners.Config{ID: "unix", Address: o.unix})))
		b.network, b.addr = "unix", o.unix
	case !o.noListener:
		l := listeners.NewTCP(config)
		must(t, b.srv.AddListener(l))
		b.addr = l.Address()
	}
	must(t, b.srv.Subscribe("will/#", 1, func(_ *mochi.Client, _ packets.Subscription, pk packets.Packet) {
		b.mu.Lock()
		b.wills = append(b.wills, pk.TopicName)
		b.mu.Unlock()
		select {
		case b.wait <- struct{}{}:
		default:
		}
	}))
	if o.shutdownNow {
		s.Shutdown()
	}
	must(t, b.srv.Serve())
	t.Cleanup(b.close)
	return b
}

// close waits for the clients to go, then closes the broker and the
// scheduler.
//
// mochi v2.7.9's Close deadlocks if a client is removed from srv.Clients
// while it runs: Clients.GetByListener holds the read lock and takes it
// again through Clients.Len, and a writer waiting in between (the removal)
// blocks that second read for good. A client's connection reads as closed
// before its removal, so close waits for both: no open client, and a
// client count that has stopped changing.
func (b *broker) close() {
	deadline := time.Now().Add(20 * time.Second)
	last := -1
	for {
		n, total := openClients(b.srv), b.srv.Clients.Len()
		if n == 0 && total == last {
			break
		}
		if time.Now().After(deadline) {
			b.t.Errorf("%d clients still connected at the end of the test", n)
			break
		}
		last = total
		time.Sleep(50 * time.Millisecond)
	}
	closed := make(chan struct{})
	go func() {
		_ = b.srv.Close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(30 * time.Second):
		// Fail the test rather than hang the run until its time limit.
		b.t.Errorf("mochi's Close did not return in 30 s (the Clients lock deadlock above)")
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := b.sched.ShutdownContext(ctx); err != nil {
		b.t.Errorf("scheduler shutdown: %v", err)
	}
}

// openClients counts the broker's open client connections. A client
// whose CONNACK failed stays in srv.Clients, closed, so Clients.Len is not
// the count.
func openClients(srv *mochi.Server) int {
	n := 0
	for _, cl := range srv.Clients.GetAll() {
		if !cl.Net.Inline && !cl.Closed() {
			n++
		}
	}
	return n
}

// willTopics returns the topics of the wills published so far.
func (b *broker) willTopics() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.wills...)
}

// waitWills waits up to d for at least n wills and returns their topics.
func (b *broker) waitWills(n int, d time.Duration) []string {
	deadline := time.After(d)
	for {
		if w := b.willTopics(); len(w) >= n {
			return w
		}
		select {
		case <-b.wait:
		case <-deadline:
			return b.willTopics()
		}
	}
}

// dial connects a raw client to the broker's listener.
func (b *broker) dial(o wire.Options) *wire.Conn {
	b.t.Helper()
	network := b.network
	if network == "" {
		network = "tcp"
	}
	c, err := net.Dial(network, b.addr)
	if err != nil {
		b.t.Fatal(err)
	}
	w, err := wire.Connect(c, o)
	if err != nil {
		c.Close()
		b.t.Fatalf("connect %s: %v", o.ClientID, err)
	}
	b.t.Cleanup(func() { w.Close() })
	return w
}

// observer is a hook that records the events that matter to keep-alive.
type observer struct {
	mochi.HookBase
	connects     atomic.Int64 // OnConnect
	establishing atomic.Int64 // OnSessionEstablish
	established  atomic.Int64 // OnSessionEstablished
	mu           sync.Mutex
	disconnects  []disconnect
	changed      chan struct{}
}

// disconnect is one OnDisconnect call.
type disconnect struct {
	client *mochi.Client
	id     string
	remote string
	err    error
	cause  error // client.StopCause()
}

func newObserver() *observer { return &observer{changed: make(chan struct{}, 1)} }

func (o *observer) ID() string { return "observer" }

func (o *observer) Provides(b byte) bool {
	switch b {
	case mochi.OnConnect, mochi.OnSessionEstablish, mochi.OnSessionEstablished, mochi.OnDisconnect:
		return true
	}
	return false
}

func (o *observer) OnConnect(cl *mochi.Client, pk packets.Packet) error {
	o.connects.Add(1)
	return nil
}

func (o *observer) OnSessionEstablish(cl *mochi.Client, pk packets.Packet) {
	o.establishing.Add(1)
}

func (o *observer) OnSessionEstablished(cl *mochi.Client, pk packets.Packet) {
	o.established.Add(1)
}

func (o *observer) OnDisconnect(cl *mochi.Client, err error, expire bool) {
	o.mu.Lock()
	o.disconnects = append(o.disconnects, disconnect{cl, cl.ID, cl.Net.Remote, err, cl.StopCause()})
	o.mu.Unlock()
	select {
	case o.changed <- struct{}{}:
	default:
	}
}

// disconnected returns the OnDisconnect calls so far.
func (o *observer) disconnected() []disconnect {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]disconnect(nil), o.disconnects...)
}

// waitDisconnect waits up to d for the OnDisconnect of the connection
// from remote.
func (o *observer) waitDisconnect(remote string, d time.Duration) (disconnect, bool) {
	deadline := time.After(d)
	for {
		for _, dc := range o.disconnected() {
			if dc.remote == remote {
				return dc, true
			}
		}
		select {
		case <-o.changed:
		case <-deadline:
			return disconnect{}, false
		}
	}
}

// isKeepAliveTimeout reports whether err is mochi's keep-alive reason
// code, the cause the hook stops silent clients with.
func isKeepAliveTimeout(err error) bool {
	var code packets.Code
	return errors.As(err, &code) && code == packets.ErrKeepAliveTimeout
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// waitClosed waits up to d for the broker to close c; it fails the test
// when c is still open after d.
func waitClosed(t *testing.T, c *wire.Conn, d time.Duration) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(d))
	if err := c.WaitClosed(); err != nil {
		t.Fatalf("the broker did not close the connection within %v: %v", d, err)
	}
}

// roundTrip sends a PINGREQ and waits up to d for the PINGRESP, skipping
// other packets; it fails the test when the connection is closed.
func roundTrip(t *testing.T, c *wire.Conn, d time.Duration) {
	t.Helper()
	if err := c.Ping(); err != nil {
		t.Fatalf("ping: %v", err)
	}
	_ = c.SetReadDeadline(time.Now().Add(d))
	defer c.SetReadDeadline(time.Time{})
	for {
		typ, _, err := c.ReadPacket()
		if err != nil {
			t.Fatalf("waiting for PINGRESP: %v", err)
		}
		if typ == packets.Pingresp {
			return
		}
	}
}

// waitLen waits up to patience for k to watch n clients.
func waitLen(t *testing.T, k *mqtt.KeepAlive, n int) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for k.Len() != n {
		if time.Now().After(deadline) {
			t.Fatalf("watching %d clients, want %d", k.Len(), n)
		}
		time.Sleep(time.Millisecond)
	}
}
