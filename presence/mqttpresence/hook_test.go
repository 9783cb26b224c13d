package mqttpresence_test

import (
	"context"
	"encoding/binary"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-schedule/schedule/presence"
	"github.com/go-schedule/schedule/presence/embedded"
	"github.com/go-schedule/schedule/presence/mqttpresence"
	mochi "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/hooks/auth"
	"github.com/mochi-mqtt/server/v2/listeners"
	"github.com/mochi-mqtt/server/v2/packets"
	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreCurrent())
}

// broker runs a mochi broker with the hook on a node of an embedded
// engine, and returns the broker, its address and the node.
func broker(t *testing.T) (*mochi.Server, string, *presence.Node) {
	t.Helper()
	s, err := embedded.Start(embedded.Options{StoreDir: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	nc, err := nats.Connect(s.ClientURL())
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	node, err := presence.Open(context.Background(), nc, presence.Config{Node: "mq1", Lease: time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = node.Close(context.Background()) })

	srv := mochi.New(&mochi.Options{InlineClient: true, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, srv.AddHook(new(auth.AllowHook), nil))
	require.NoError(t, srv.AddHook(mqttpresence.New(node), nil))
	require.NoError(t, srv.AddListener(listeners.NewTCP(listeners.Config{ID: "tcp", Address: "127.0.0.1:0"})))
	require.NoError(t, srv.Serve())
	l, _ := srv.Listeners.Get("tcp")
	t.Cleanup(func() {
		for _, cl := range srv.Clients.GetAll() {
			if !cl.Net.Inline {
				cl.Stop(packets.ErrServerShuttingDown)
			}
		}
		// mochi's Close can deadlock while clients disconnect: wait for them.
		require.Eventually(t, func() bool { return atomic.LoadInt64(&srv.Info.ClientsConnected) == 0 }, 10*time.Second, 10*time.Millisecond)
		_ = srv.Close()
	})
	return srv, l.Address(), node
}

// connect sends an MQTT 3.1.1 CONNECT (with a will if willTopic is set)
// and waits for a successful CONNACK.
func connect(t *testing.T, addr, clientID string, keepalive uint16, willTopic string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	str := func(s string) []byte { return append(binary.BigEndian.AppendUint16(nil, uint16(len(s))), s...) }
	flags := byte(0x02) // clean session
	body := append(str("MQTT"), 4, 0)
	body = binary.BigEndian.AppendUint16(body, keepalive)
	body = append(body, str(clientID)...)
	if willTopic != "" {
		flags |= 0x04
		body = append(body, str(willTopic)...)
		body = append(body, str("gone")...)
	}
	body[7] = flags
	_, err = c.Write(append([]byte{0x10, byte(len(body))}, body...))
	require.NoError(t, err)
	ack := make([]byte, 4)
	require.NoError(t, c.SetReadDeadline(time.Now().Add(10*time.Second)))
	_, err = io.ReadFull(c, ack)
	require.NoError(t, err)
	require.Equal(t, []byte{0x20, 2, 0, 0}, ack)
	require.NoError(t, c.SetReadDeadline(time.Time{}))
	return c
}

func lookup(t *testing.T, node *presence.Node, id string) presence.Record {
	t.Helper()
	r, err := node.Lookup(context.Background(), id)
	require.NoError(t, err)
	return r
}

// waitOnline waits for id's online record and returns it: the hook writes
// it on OnSessionEstablished, which mochi runs after sending CONNACK.
func waitOnline(t *testing.T, node *presence.Node, id string, after uint64) presence.Record {
	t.Helper()
	var r presence.Record
	require.Eventually(t, func() bool {
		var err error
		r, err = node.Lookup(context.Background(), id)
		return err == nil && r.State == presence.Online && r.Rev > after
	}, 10*time.Second, 10*time.Millisecond)
	return r
}

func TestClientIsOnlineFromItsSessionAndOfflineClosedAfterDisconnect(t *testing.T) {
	_, addr, node := broker(t)
	c := connect(t, addr, "client/1", 60, "")
	waitOnline(t, node, "client/1", 0)
	_, err := c.Write([]byte{0xE0, 0}) // DISCONNECT
	require.NoError(t, err)
	require.Eventually(t, func() bool { return lookup(t, node, "client/1").State == presence.Offline }, 5*time.Second, 10*time.Millisecond)
	assert.Equal(t, presence.ReasonClosed, lookup(t, node, "client/1").Reason)
}

func TestSessionTakeoverIsAMoveNotAnOffline(t *testing.T) {
	_, addr, node := broker(t)
	connect(t, addr, "client/2", 60, "")
	first := waitOnline(t, node, "client/2", 0)
	connect(t, addr, "client/2", 60, "")
	waitOnline(t, node, "client/2", first.Rev)
	time.Sleep(500 * time.Millisecond) // the old connection's disconnect has run by now
	now := lookup(t, node, "client/2")
	assert.Equal(t, presence.Online, now.State)
	assert.Equal(t, presence.ReasonConnect, now.Reason)
	assert.Equal(t, first.Rev+1, now.Rev, "one write since: the new online, no offline")
}

func TestKeepAliveTimeoutRecordsTimeoutAndTheWillGoesOut(t *testing.T) {
	srv, addr, node := broker(t)
	var mu sync.Mutex
	var wills []string
	require.NoError(t, srv.Subscribe("wills", 1, func(_ *mochi.Client, _ packets.Subscription, pk packets.Packet) {
		mu.Lock()
		defer mu.Unlock()
		wills = append(wills, string(pk.Payload))
	}))
	connect(t, addr, "silent", 1, "wills") // then says nothing
	waitOnline(t, node, "silent", 0)
	require.Eventually(t, func() bool { return lookup(t, node, "silent").State == presence.Offline }, 10*time.Second, 20*time.Millisecond)
	assert.Equal(t, presence.ReasonTimeout, lookup(t, node, "silent").Reason)
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(wills) == 1 }, 5*time.Second, 10*time.Millisecond)
	assert.Equal(t, []string{"gone"}, wills)
}
