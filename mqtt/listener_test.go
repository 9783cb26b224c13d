package mqtt_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"math/big"
	"net"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/go-schedule/schedule"
	"github.com/go-schedule/schedule/mqtt"
	"github.com/go-schedule/schedule/mqtt/internal/wire"
	"github.com/go-schedule/schedule/netdeadline"
	mochi "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/hooks/auth"
	"github.com/mochi-mqtt/server/v2/listeners"
	"github.com/mochi-mqtt/server/v2/packets"
)

// mochiTimeout is mochi's own keep-alive timeout for a Keep Alive of 1 s:
// 1 + 1/2 in whole seconds.
const mochiTimeout = time.Second

// TestListenerSilentClientIsDisconnectedAndItsWillPublished: on the
// wrapped listener, a client that sends nothing after CONNECT is
// disconnected by mochi's own keep-alive, whose deadline the scheduler
// serves: its read fails with the socket's timeout error, no sooner than
// mochi's timeout, its will is published, and its task is gone.
func TestListenerSilentClientIsDisconnectedAndItsWillPublished(t *testing.T) {
	for _, version := range []byte{4, 5} {
		t.Run(map[byte]string{4: "3.1.1", 5: "5"}[version], func(t *testing.T) {
			t.Parallel()
			b := startBroker(t, brokerOptions{listener: true})
			start := time.Now()
			c := b.dial(wire.Options{ClientID: "dev", Version: version, KeepAlive: keepAlive, WillTopic: "will/dev", WillPayload: []byte("offline")})
			waitClosed(t, c, patience)
			if took := time.Since(start); took < mochiTimeout {
				t.Errorf("disconnected after %v, before mochi's timeout (%v)", took, mochiTimeout)
			}
			dc, ok := b.obs.waitDisconnect(c.LocalAddr().String(), patience)
			if !ok {
				t.Fatal("no OnDisconnect for the silent client")
			}
			var ne net.Error
			if !errors.Is(dc.err, os.ErrDeadlineExceeded) || !errors.As(dc.err, &ne) || !ne.Timeout() {
				t.Errorf("OnDisconnect error %v, want the socket's deadline error", dc.err)
			}
			if w := b.waitWills(1, patience); !slices.Equal(w, []string{"will/dev"}) {
				t.Errorf("wills published: %q, want [will/dev]", w)
			}
			if fired := b.sched.Stats().Started; fired != 1 {
				t.Errorf("%d expiry jobs ran, want 1", fired)
			}
			if n := b.sched.Len(); n != 0 {
				t.Errorf("%d tasks left after the disconnect", n)
			}
		})
	}
}

// TestListenerLiveClientIsNotDisconnected: a client that pings within its
// Keep Alive stays connected, its deadline moved by every packet: one
// task, scheduled once, never run.
func TestListenerLiveClientIsNotDisconnected(t *testing.T) {
	b := startBroker(t, brokerOptions{listener: true})
	c := b.dial(wire.Options{ClientID: "dev", KeepAlive: keepAlive, WillTopic: "will/dev"})
	for range 8 { // 2 s, twice mochi's timeout
		time.Sleep(250 * time.Millisecond)
		roundTrip(t, c, patience)
	}
	st := b.sched.Stats()
	if st.Pending != 1 || st.Scheduled != 1 || st.Started != 0 {
		t.Errorf("tasks pending %d, scheduled %d, run %d; want 1, 1, 0", st.Pending, st.Scheduled, st.Started)
	}
	if d := b.obs.disconnected(); len(d) != 0 {
		t.Errorf("disconnected: %v", d[0].err)
	}
	if err := c.Disconnect(); err != nil {
		t.Fatal(err)
	}
	if _, ok := b.obs.waitDisconnect(c.LocalAddr().String(), patience); !ok {
		t.Fatal("no OnDisconnect after DISCONNECT")
	}
	if w := b.willTopics(); len(w) != 0 {
		t.Errorf("wills published: %q, want none", w)
	}
}

func TestListenerNilScheduler(t *testing.T) {
	srv := mochi.New(&mochi.Options{Logger: quiet})
	err := srv.AddListener(mqtt.NewTCP(listeners.Config{ID: "tcp", Address: "127.0.0.1:0"}, nil))
	if !errors.Is(err, netdeadline.ErrNilScheduler) {
		t.Errorf("AddListener: %v, want %v", err, netdeadline.ErrNilScheduler)
	}
}

// TestListenerWithShutDownSchedulerLeavesDeadlinesToTheSocket: a
// scheduler shut down before the broker serves leaves mochi's keep-alive
// on the socket's own deadlines.
func TestListenerWithShutDownSchedulerLeavesDeadlinesToTheSocket(t *testing.T) {
	b := startBroker(t, brokerOptions{listener: true, shutdownNow: true})
	c := b.dial(wire.Options{ClientID: "dev", KeepAlive: keepAlive, WillTopic: "will/dev"})
	waitClosed(t, c, patience)
	if w := b.waitWills(1, patience); !slices.Equal(w, []string{"will/dev"}) {
		t.Errorf("wills published: %q, want [will/dev]", w)
	}
}

// selfSigned returns a TLS certificate for 127.0.0.1, signed by itself.
func selfSigned(t *testing.T) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	must(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "broker"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	must(t, err)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// TestListenerOverTLSDisconnectsASilentClient: with a TLSConfig, TLS runs
// on top of the wrapped connection, whose deadlines the tls.Conn sets; a
// silent client is disconnected with its will published.
func TestListenerOverTLSDisconnectsASilentClient(t *testing.T) {
	s, err := schedule.New(2)
	must(t, err)
	defer s.Shutdown()
	srv := mochi.New(&mochi.Options{InlineClient: true, Logger: quiet})
	must(t, srv.AddHook(new(auth.AllowHook), nil))
	l := mqtt.NewTCP(listeners.Config{ID: "tls", Address: "127.0.0.1:0",
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{selfSigned(t)}}}, s)
	must(t, srv.AddListener(l))
	wills := make(chan string, 1)
	must(t, srv.Subscribe("will/#", 1, func(_ *mochi.Client, _ packets.Subscription, pk packets.Packet) {
		wills <- pk.TopicName
	}))
	must(t, srv.Serve())

	raw, err := net.Dial("tcp", l.Address())
	must(t, err)
	c, err := wire.Connect(tls.Client(raw, &tls.Config{InsecureSkipVerify: true}),
		wire.Options{ClientID: "dev", KeepAlive: keepAlive, WillTopic: "will/dev"})
	must(t, err)
	defer c.Close()
	waitClosed(t, c, patience)
	select {
	case w := <-wills:
		if w != "will/dev" {
			t.Errorf("will %q, want will/dev", w)
		}
	case <-time.After(patience):
		t.Fatal("no will published")
	}
	if fired := s.Stats().Started; fired != 1 {
		t.Errorf("%d expiry jobs ran, want 1", fired)
	}
	for openClients(srv) > 0 {
		time.Sleep(10 * time.Millisecond)
	}
	must(t, srv.Close())
}
