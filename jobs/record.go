package jobs

import (
	"bytes"
	"encoding/json"
	"strconv"
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

// encodeRecord returns the value of a job. The header's bytes are those
// json.Marshal makes of it (appendHeader), written without reflection:
// a worker writes two records per attempt.
func encodeRecord(h header, payload []byte) []byte {
	out := make([]byte, 0, 128+len(payload))
	out = appendHeader(out, h)
	out = append(out, '\n')
	return append(out, payload...)
}

// appendHeader appends h as json.Marshal writes it: the fields in order,
// the omitempty ones only when set.
func appendHeader(b []byte, h header) []byte {
	b = append(b, `{"state":`...)
	b = appendString(b, string(h.State))
	b = append(b, `,"due":`...)
	b = strconv.AppendInt(b, h.Due, 10)
	b = append(b, `,"attempt":`...)
	b = strconv.AppendInt(b, int64(h.Attempt), 10)
	if h.Node != "" {
		b = append(b, `,"node":`...)
		b = appendString(b, h.Node)
	}
	if h.Epoch != "" {
		b = append(b, `,"epoch":`...)
		b = appendString(b, h.Epoch)
	}
	if h.Started != 0 {
		b = append(b, `,"started":`...)
		b = strconv.AppendInt(b, h.Started, 10)
	}
	if h.Run != 0 {
		b = append(b, `,"run":`...)
		b = strconv.AppendUint(b, h.Run, 10)
	}
	return append(b, '}')
}

// plainByte reports whether c stands for itself inside a JSON string as
// json.Marshal writes it: printable ASCII but for the quote, the
// backslash and the three bytes it escapes for HTML.
func plainByte(c byte) bool {
	return c >= 0x20 && c < 0x7f && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
}

// appendString appends s as a JSON string, as json.Marshal writes it. The
// names and states a worker writes are plain; anything else goes through
// json.Marshal.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if !plainByte(s[i]) {
			q, _ := json.Marshal(s) // a string always marshals
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// decodeRecord splits a job's value into its header and payload; false if
// the value is not a job record. The payload aliases value.
func decodeRecord(value []byte) (header, []byte, bool) {
	line, payload, ok := bytes.Cut(value, []byte{'\n'})
	if !ok {
		return header{}, nil, false
	}
	h, ok := parseHeader(line)
	if !ok {
		// Not in the form appendHeader writes (a record written by hand,
		// say): encoding/json decides.
		h = header{}
		if json.Unmarshal(line, &h) != nil {
			return header{}, nil, false
		}
	}
	if h.Attempt < 1 {
		return header{}, nil, false
	}
	switch h.State {
	case StatePending, StateRunning, StateDead:
		return h, payload, true
	}
	return header{}, nil, false
}

// parseHeader reads a header line in the form appendHeader writes, or in
// any order of its fields: no spaces, each known field at most once,
// strings of plain bytes, integers without fraction or exponent. It
// returns false for anything else, which json.Unmarshal then reads; what
// it accepts, it reads as json.Unmarshal would.
func parseHeader(line []byte) (header, bool) {
	var h header
	if len(line) < 2 || line[0] != '{' || line[len(line)-1] != '}' {
		return h, false
	}
	p := line[1 : len(line)-1]
	var seen uint8
	for len(p) > 0 {
		name, rest, ok := cutString(p)
		if !ok || len(rest) == 0 || rest[0] != ':' {
			return h, false
		}
		p = rest[1:]
		var bit uint8
		var s []byte
		var n int64
		switch string(name) {
		case "state":
			bit = 1
			if s, p, ok = cutString(p); ok {
				h.State = stateOf(s)
			}
		case "node":
			bit = 2
			if s, p, ok = cutString(p); ok {
				h.Node = string(s)
			}
		case "epoch":
			bit = 4
			if s, p, ok = cutString(p); ok {
				h.Epoch = string(s)
			}
		case "due":
			bit = 8
			h.Due, p, ok = cutInt(p, true)
		case "started":
			bit = 16
			h.Started, p, ok = cutInt(p, true)
		case "attempt":
			bit = 32
			n, p, ok = cutInt(p, true)
			h.Attempt = int(n)
			ok = ok && int64(h.Attempt) == n
		case "run":
			bit = 64
			n, p, ok = cutInt(p, false)
			h.Run = uint64(n)
		default:
			return h, false
		}
		if !ok || seen&bit != 0 {
			return h, false
		}
		seen |= bit
		if len(p) > 0 {
			if p[0] != ',' || len(p) == 1 {
				return h, false
			}
			p = p[1:]
		}
	}
	return h, true
}

// stateOf returns s as a State, without allocating for the three a record
// holds.
func stateOf(s []byte) State {
	for _, st := range [...]State{StatePending, StateRunning, StateDead} {
		if string(s) == string(st) {
			return st
		}
	}
	return State(s)
}

// cutString reads a JSON string of plain bytes at the start of p and
// returns its contents.
func cutString(p []byte) ([]byte, []byte, bool) {
	if len(p) == 0 || p[0] != '"' {
		return nil, p, false
	}
	for i := 1; i < len(p); i++ {
		switch c := p[i]; {
		case c == '"':
			return p[1:i], p[i+1:], true
		case c < 0x20 || c >= 0x7f || c == '\\':
			return nil, p, false
		}
	}
	return nil, p, false
}

// cutInt reads a JSON integer at the start of p: no fraction, no
// exponent, no leading zero, a sign only if signed, and within an int64.
func cutInt(p []byte, signed bool) (int64, []byte, bool) {
	i, neg := 0, false
	if signed && len(p) > 0 && p[0] == '-' {
		i, neg = 1, true
	}
	start := i
	var u uint64
	for ; i < len(p) && p[i] >= '0' && p[i] <= '9'; i++ {
		if u > (1<<63)/10 {
			return 0, p, false
		}
		u = u*10 + uint64(p[i]-'0')
		if u > 1<<63 {
			return 0, p, false
		}
	}
	switch {
	case i == start, p[start] == '0' && i > start+1, !neg && u == 1<<63:
		return 0, p, false
	case i < len(p) && (p[i] == '.' || p[i] == 'e' || p[i] == 'E'):
		return 0, p, false
	}
	if neg {
		return -int64(u), p[i:], true // -(1<<63) wraps to itself, as wanted
	}
	return int64(u), p[i:], true
}

// leaseValue is a worker's lease record in the nodes bucket.
type leaseValue struct {
	Epoch    string `json:"epoch"`
	Draining bool   `json:"draining,omitempty"` // stopping: it takes no partitions
}
