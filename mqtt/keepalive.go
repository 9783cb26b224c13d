package mqtt

import (
	"sync/atomic"
	"time"

	"github.com/go-schedule/schedule"
	"github.com/go-schedule/schedule/heartbeat"
	mochi "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"
)

// HookID is what KeepAlive.ID returns.
const HookID = "go-schedule-keepalive"

// defaultTimeout is the Monitor's own timeout: 1.5 times a Keep Alive of
// 60 seconds. Every connection is watched with its own timeout (Watch),
// which the Monitor keeps beside the watch, so any timeout costs the same.
const defaultTimeout = 90 * time.Second

// Timeout returns how long a connection with the given Keep Alive (in
// seconds, as the client sends it in CONNECT, or as the server sets it)
// may stay silent: one and a half times the Keep Alive, exactly. It
// returns 0 for a Keep Alive of 0, which means no timeout.
//
// mochi's own keep-alive computes keepalive + keepalive/2 in whole
// seconds, so that for an odd Keep Alive it disconnects half a second
// early (after 1 s for a Keep Alive of 1 s, where the specification says
// 1.5 s). The [KeepAlive] hook does not round.
func Timeout(keepalive uint16) time.Duration {
	return time.Duration(keepalive) * 1500 * time.Millisecond
}

// KeepAlive is a mochi-mqtt hook that enforces MQTT keep-alive with a
// go-schedule Scheduler. Create it with [NewKeepAlive] and add it to the
// broker with Server.AddHook(hook, nil) before the broker serves. The Keep
// Alive it enforces is the client's State.Keepalive when the session is
// established: the one in CONNECT, or an MQTT 5 Server Keep Alive that a
// hook set in OnConnect (with State.ServerKeepalive, so that CONNACK
// tells the client).
//
// It handles three events, and Provides reports true for exactly these:
//
//   - OnSessionEstablished: the connection is accepted (authenticated and
//     acknowledged with CONNACK). A client with a Keep Alive starts to be
//     watched with a timeout of Timeout(keepalive), and mochi's own read
//     deadline is turned off for it (its State.Keepalive is set to 0 once
//     CONNACK has gone out, so a Server Keep Alive in CONNACK is not
//     affected). Nothing is armed earlier: a connection that fails
//     authentication, or whose CONNACK cannot be written, never reaches
//     OnDisconnect, and a watch armed for it would never be removed.
//   - OnPacketRead: every packet from a watched client, PINGREQ included,
//     pushes its deadline out to now plus its timeout (Monitor.Refresh).
//     A packet never starts a watch, so the packets of a client with a
//     Keep Alive of 0, the CONNECT read before authentication, and a
//     packet handled after OnDisconnect cost a lookup and nothing more.
//   - OnDisconnect: the watch ends.
//
// Watches are keyed by *mochi.Client, not by client ID: when a client ID
// is taken over, mochi usually calls OnDisconnect for the old connection
// after OnSessionEstablished for the new one, and neither the old
// connection's deadline nor its end may touch the new connection's watch.
//
// When a watched client's deadline passes with no packet from it, the
// hook stops the client (Client.Stop(packets.ErrKeepAliveTimeout)) on a
// goroutine that a job on the Scheduler's pool starts. The connection
// closes, and mochi's read loop publishes the will and calls
// OnDisconnect. A packet that arrives just as the deadline passes either
// wins the race, and the client stays connected, or comes too late, and
// the client is disconnected; in that narrow case, if mochi is still
// handling the packet when the connection closes and the packet needs no
// reply, mochi ends the connection as it does after any server-side stop
// between packets: without the will.
//
// The Scheduler must outlive the broker: once it is shut down, clients
// that connect afterwards keep mochi's own keep-alive (the hook cannot arm
// a watch for them), and clients already watched are no longer timed out.
//
// KeepAlive's methods are safe for concurrent use.
type KeepAlive struct {
	mochi.HookBase

	mon *heartbeat.Monitor[*mochi.Client]
	err error // from heartbeat.New; Init returns it

	expired atomic.Uint64
	warned  atomic.Bool // the shut-down scheduler has been logged
}

// NewKeepAlive returns a keep-alive hook whose deadlines live on s. Add it
// to a broker with Server.AddHook(hook, nil). A hook serves one broker.
//
// Use it for clients that do not come through [NewTCP] (WebSocket, Unix
// sockets, a listener of the program's own), for a Keep Alive enforced at
// exactly 1.5 times, or for the counts [KeepAlive.Len] and
// [KeepAlive.Expired]; for TCP clients alone, NewTCP costs less (see the
// package documentation).
//
// With a nil s, the hook's Init, and so AddHook, returns
// [heartbeat.ErrNilScheduler].
func NewKeepAlive(s *schedule.Scheduler) *KeepAlive {
	k := new(KeepAlive)
	k.mon, k.err = heartbeat.New(s, defaultTimeout, k.expire)
	return k
}

// ID returns HookID.
func (k *KeepAlive) ID() string { return HookID }

// Provides reports whether the hook handles the event b: true for
// mochi.OnSessionEstablished, mochi.OnPacketRead and mochi.OnDisconnect.
func (k *KeepAlive) Provides(b byte) bool {
	switch b {
	case mochi.OnSessionEstablished, mochi.OnPacketRead, mochi.OnDisconnect:
		return true
	}
	return false
}

// Init is called by Server.AddHook. It ignores config and returns the
// error of NewKeepAlive's arguments, if any.
func (k *KeepAlive) Init(config any) error { return k.err }

// OnSessionEstablished starts watching cl when its Keep Alive is not zero,
// and turns off mochi's own read deadline for it.
func (k *KeepAlive) OnSessionEstablished(cl *mochi.Client, pk packets.Packet) {
	ka := cl.State.Keepalive // the client's Keep Alive, or the server's
	if ka == 0 {
		return // no timeout: never watched
	}
	if err := k.mon.Watch(cl, Timeout(ka)); err != nil {
		// The scheduler is shut down: leave the client to mochi.
		if k.Log != nil && k.warned.CompareAndSwap(false, true) {
			k.Log.Warn("the scheduler is shut down: keep-alive left to mochi", "error", err)
		}
		return
	}
	// CONNACK has gone out, and mochi's read loop sets its deadline from
	// this value before every packet it reads: 0 means none.
	cl.State.Keepalive = 0
}

// OnPacketRead pushes out the deadline of cl if it is watched, and does
// nothing otherwise: a packet never starts a watch (see KeepAlive). It
// returns pk unchanged.
func (k *KeepAlive) OnPacketRead(cl *mochi.Client, pk packets.Packet) (packets.Packet, error) {
	k.mon.Refresh(cl) // false when cl is not watched, and once the scheduler is shut down
	return pk, nil
}

// OnDisconnect ends the watch of cl, if it has one.
func (k *KeepAlive) OnDisconnect(cl *mochi.Client, err error, expire bool) {
	k.mon.Forget(cl)
}

// expire is the Monitor's expired function: cl sent nothing for its
// timeout.
func (k *KeepAlive) expire(cl *mochi.Client) {
	k.expired.Add(1)
	// Closing a socket waits until the goroutine blocked reading it (the
	// client's read loop) has woken and left the read. Stopping the client
	// on a goroutine of its own gives the pool's worker back at once, so
	// that expiries due together do not queue behind each other's
	// wake-ups.
	go cl.Stop(packets.ErrKeepAliveTimeout)
}

// Len returns the number of clients watched now: those connected with a
// Keep Alive other than zero while the Scheduler ran. It returns 0 once the
// Scheduler is shut down, when no client is timed out any more.
func (k *KeepAlive) Len() int {
	if k.mon == nil {
		return 0
	}
	return k.mon.Len()
}

// Expired returns the number of clients the hook has disconnected because
// their keep-alive timed out.
func (k *KeepAlive) Expired() uint64 { return k.expired.Load() }
