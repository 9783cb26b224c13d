// Package mqttpresence records the presence of a mochi-mqtt broker's
// clients (github.com/mochi-mqtt/server/v2) on a [presence.Node]: a
// client is online from its established session, offline when it
// disconnects, and a session taken over by a newer connection with the
// same client id (here or at another broker of the fleet) is a move, not
// an offline.
//
// It is a package of its own so that users of package presence who run no
// MQTT broker never build mochi. Add the hook before the broker serves:
//
//	_ = srv.AddHook(mqttpresence.New(node), nil)
//
// It changes nothing of the broker's own behaviour: its keep-alive (mochi's,
// on a socket deadline or the mqtt module's listener, or the mqtt module's
// keep-alive hook) still disconnects a silent client and
// publishes its will, and the hook records that as offline with reason
// timeout. When the node ends a connection (a newer connection of the
// client at another broker, or a lost lease), the hook stops the client.
package mqttpresence

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"sync"

	"github.com/go-schedule/schedule/presence"
	mochi "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"
)

// HookID is what Hook.ID returns.
const HookID = "go-schedule-presence"

// Hook is a mochi hook that records client presence on a presence.Node.
// Its client id is the device id: a client id that is not a valid device
// id (empty, over 128 bytes, or with bytes outside 0x21-0x7E) is not
// recorded, and [Hook.Skipped] counts it.
type Hook struct {
	mochi.HookBase
	node  *presence.Node
	conns sync.Map // *mochi.Client → *presence.Conn

	mu      sync.Mutex
	skipped int
}

// New returns a Hook that records presence on node.
func New(node *presence.Node) *Hook { return &Hook{node: node} }

// ID returns HookID.
func (h *Hook) ID() string { return HookID }

// Provides reports the events the hook handles: mochi's HookBase provides
// none.
func (h *Hook) Provides(b byte) bool {
	return bytes.Contains([]byte{mochi.OnSessionEstablished, mochi.OnDisconnect}, []byte{b})
}

// OnSessionEstablished records the client online; it returns once the
// engine holds the record, so while the engine is away the client's
// packets wait (mochi runs the hook before the client's read loop). A
// client the node does not record (the node is closed, or a still newer
// connection of the client won meanwhile) is stopped. The
// connections are keyed by *Client, because on a takeover the old
// connection's OnDisconnect comes after the new one's
// OnSessionEstablished.
func (h *Hook) OnSessionEstablished(cl *mochi.Client, _ packets.Packet) {
	if !presence.ValidDeviceID(cl.ID) {
		h.mu.Lock()
		h.skipped++
		h.mu.Unlock()
		return
	}
	c, err := h.node.Connect(context.Background(), cl.ID, func(err error) {
		if !errors.Is(err, presence.ErrClosed) {
			cl.Stop(err) // a newer connection won, or the lease was lost
		}
	})
	if err != nil {
		cl.Stop(err)
		return
	}
	h.conns.Store(cl, c)
}

// OnDisconnect records the client offline: timeout when its keep-alive
// expired, closed otherwise. A session taken over records nothing.
func (h *Hook) OnDisconnect(cl *mochi.Client, err error, _ bool) {
	v, ok := h.conns.LoadAndDelete(cl)
	if !ok {
		return
	}
	if cl.IsTakenOver() {
		return // the newer connection's online already won
	}
	reason := presence.ReasonClosed
	if timedOut(cl, err) {
		reason = presence.ReasonTimeout
	}
	_ = v.(*presence.Conn).Offline(context.Background(), reason)
}

// timedOut reports whether the client was disconnected for silence: by
// mochi's read deadline, or by a keep-alive hook that stops it with
// packets.ErrKeepAliveTimeout.
func timedOut(cl *mochi.Client, err error) bool {
	var ne net.Error
	if errors.Is(err, os.ErrDeadlineExceeded) || errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	cause := cl.StopCause()
	return errors.Is(cause, packets.ErrKeepAliveTimeout) || errors.Is(err, packets.ErrKeepAliveTimeout)
}

// Skipped returns how many clients were not recorded because their
// client id is not a device id.
func (h *Hook) Skipped() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.skipped
}
