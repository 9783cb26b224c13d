package presence

import "errors"

var (
	// ErrInvalidNodeID is returned by [Open] for a node id that is not 1 to
	// 64 characters of [A-Za-z0-9_-].
	ErrInvalidNodeID = errors.New("presence: node id must be 1-64 characters of [A-Za-z0-9_-]")
	// ErrInvalidLease is returned by [Open] for a lease that is not a whole
	// number of seconds, at least one.
	ErrInvalidLease = errors.New("presence: lease must be whole seconds, at least 1s")
	// ErrInvalidReplicas is returned by [Open] and [OpenStore] for replicas
	// outside 1..5.
	ErrInvalidReplicas = errors.New("presence: replicas must be 1 to 5")
	// ErrInvalidDeviceID is returned by [Node.Connect] and [Store.Lookup] for a
	// device id that is not 1 to 128 bytes of 0x21-0x7E.
	ErrInvalidDeviceID = errors.New("presence: device id must be 1-128 bytes of printable ASCII without space")
	// ErrInvalidReason is returned by [Conn.Offline] for a reason other
	// than [ReasonTimeout] or [ReasonClosed].
	ErrInvalidReason = errors.New("presence: offline reason must be timeout or closed")
	// ErrNilConn is returned by [Open] for a nil [*nats.Conn].
	ErrNilConn = errors.New("presence: nil NATS connection")
	// ErrNilJetStream is returned by [OpenStore] and [BindStore] for a nil
	// [jetstream.JetStream].
	ErrNilJetStream = errors.New("presence: nil JetStream")
	// ErrSuperseded is returned by [Conn.Offline] when the device's record
	// no longer belongs to the connection (a newer connection anywhere, or
	// its node was recorded lost): nothing was recorded. [Node.Connect]
	// returns it when the connection it wrote lost before it returned, and
	// the end function of a connection that a newer one ended gets it.
	ErrSuperseded = errors.New("presence: the record belongs to a newer connection")
	// ErrAlreadyOffline is returned by [Conn.Offline] called again after a
	// call that recorded the connection offline: nothing more is recorded.
	ErrAlreadyOffline = errors.New("presence: the connection is already recorded offline")
	// ErrLeaseLost is returned by [Conn.Offline], and given to the end
	// function, for a connection of an epoch whose lease was lost: the
	// node recorded nothing for it.
	ErrLeaseLost = errors.New("presence: the node lost its lease")
	// ErrClosed is returned by [Node.Connect] after [Node.Close] and by
	// [Conn.Offline] for a connection that Close ended; the end functions of
	// the connections Close ends get it too.
	ErrClosed = errors.New("presence: node closed")
)
