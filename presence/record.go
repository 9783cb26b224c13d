package presence

import (
	"encoding/json"
	"time"
)

// State is whether a device is online or offline.
type State string

// The states of a device record.
const (
	Online  State = "online"
	Offline State = "offline"
)

// Reason is why a device record was written.
type Reason string

// The reasons of a device record.
const (
	// ReasonConnect: the device connected (online).
	ReasonConnect Reason = "connect"
	// ReasonTimeout: its gateway closed it for silence.
	ReasonTimeout Reason = "timeout"
	// ReasonClosed: the device closed its connection.
	ReasonClosed Reason = "closed"
	// ReasonShutdown: its node stopped in order (Node.Close).
	ReasonShutdown Reason = "shutdown"
	// ReasonNodeLost: its node died or lost its lease, and a live node
	// recorded it.
	ReasonNodeLost Reason = "node_lost"
)

// Record is a device's state as recorded in the devices bucket.
type Record struct {
	// Device is the device id (not stored in the value: it is the key).
	Device string `json:"-"`
	// State is online or offline.
	State State `json:"state"`
	// Node is where the device is (online) or was last connected (offline;
	// for ReasonNodeLost, the lost node).
	Node string `json:"node"`
	// Reason says why the record was written.
	Reason Reason `json:"reason"`
	// Epoch names the lifetime of Node that held the connection.
	Epoch string `json:"epoch"`
	// Conn numbers the connection within Epoch.
	Conn uint64 `json:"conn"`
	// At is when the writer wrote the record, by its clock.
	At time.Time `json:"at"`
	// Rev is the record's revision: it increases with every write to the
	// device's key (not stored in the value: it is the stream sequence).
	Rev uint64 `json:"-"`
}

// sameConn reports whether r and o were written for the same connection.
func (r *Record) sameConn(o *Record) bool {
	return r.Node == o.Node && r.Epoch == o.Epoch && r.Conn == o.Conn
}

func (r *Record) encode() []byte {
	b, err := json.Marshal(r)
	if err != nil {
		panic(err) // a Record of strings, a number and a time always encodes
	}
	return b
}

// lease is the value of a node's lease key.
type lease struct {
	Epoch string `json:"epoch"`
}

func decodeLease(value []byte) (lease, bool) {
	var l lease
	if err := json.Unmarshal(value, &l); err != nil || l.Epoch == "" {
		return lease{}, false
	}
	return l, true
}
