package jobs

import (
	"bytes"
	"encoding/json"
)

// State is where a job stands.
type State string

// The states of a job. A job that is done, cancelled or never added has no
// record; [Client.Get] reports it as [StateUnknown].
const (
	StatePending State = "pending"
	StateRunning State = "running"
	StateDead    State = "dead"
	StateUnknown State = "unknown"
)

// header is the first line of a job's value: JSON, then '\n', then the
// payload's bytes as they were given. Times are Unix milliseconds.
type header struct {
	State   State  `json:"state"`
	Due     int64  `json:"due"`               // due time of Attempt
	Attempt int    `json:"attempt"`           // the attempt due next, running, or last (dead)
	Node    string `json:"node,omitempty"`    // running: the worker that runs it
	Epoch   string `json:"epoch,omitempty"`   // running: that worker's lease epoch
	Started int64  `json:"started,omitempty"` // running: when the attempt started
	Run     uint64 `json:"run,omitempty"`     // running: this start's number within the epoch
}

// encodeRecord returns the value of a job.
func encodeRecord(h header, payload []byte) []byte {
	b, _ := json.Marshal(h) // a header always marshals
	out := make([]byte, 0, len(b)+1+len(payload))
	out = append(out, b...)
	out = append(out, '\n')
	return append(out, payload...)
}

// decodeRecord splits a job's value into its header and payload; false if
// the value is not a job record. The payload aliases value.
func decodeRecord(value []byte) (header, []byte, bool) {
	line, payload, ok := bytes.Cut(value, []byte{'\n'})
	if !ok {
		return header{}, nil, false
	}
	var h header
	if json.Unmarshal(line, &h) != nil || h.Attempt < 1 {
		return header{}, nil, false
	}
	switch h.State {
	case StatePending, StateRunning, StateDead:
		return h, payload, true
	}
	return header{}, nil, false
}

// leaseValue is a worker's lease record in the nodes bucket.
type leaseValue struct {
	Epoch    string `json:"epoch"`
	Draining bool   `json:"draining,omitempty"` // stopping: it takes no partitions
}
