package presence

import (
	"encoding/json"
	"math"
)

// decodeRecord returns the record of device at revision rev from value, and
// false for a value that is not a record. A value in the form encode writes
// is parsed directly (the reaper's scan decodes every record of the
// fleet); any other value goes to encoding/json, so that every value
// decodes exactly as encoding/json decodes it.
func decodeRecord(device string, rev uint64, value []byte) (Record, bool) {
	r, ok := parseRecord(value)
	if !ok {
		r, ok = unmarshalRecord(value)
	}
	if !ok {
		return Record{}, false
	}
	r.Device, r.Rev = device, rev
	return r, true
}

// unmarshalRecord decodes value with encoding/json.
func unmarshalRecord(value []byte) (Record, bool) {
	var r Record
	if err := json.Unmarshal(value, &r); err != nil || (r.State != Online && r.State != Offline) {
		return Record{}, false
	}
	return r, true
}

// parseRecord decodes value if it is exactly in the form encode writes:
//
//	{"state":"online","node":"gw1","reason":"connect","epoch":"9f…","conn":7,"at":"2026-01-02T03:04:05.123Z"}
//
// in that field order, without spaces, each string of printable ASCII
// other than '"' and '\' (the characters encoding/json writes as they
// are), the number without a sign, fraction or leading zero, the state
// online or offline. It reports false for any other value, which may still
// be a record: decodeRecord then asks encoding/json.
func parseRecord(value []byte) (Record, bool) {
	var (
		r                              Record
		state, node, reason, epoch, at []byte
	)
	c := cursor(value)
	ok := c.lit(`{"state":`) && c.str(&state) &&
		c.lit(`,"node":`) && c.str(&node) &&
		c.lit(`,"reason":`) && c.str(&reason) &&
		c.lit(`,"epoch":`) && c.str(&epoch) &&
		c.lit(`,"conn":`) && c.uint(&r.Conn) &&
		c.lit(`,"at":`) && c.str(&at) &&
		c.lit(`}`) && len(c) == 0
	if !ok {
		return Record{}, false
	}
	switch string(state[1 : len(state)-1]) {
	case string(Online):
		r.State = Online
	case string(Offline):
		r.State = Offline
	default:
		return Record{}, false
	}
	// encoding/json hands the quoted string to Time.UnmarshalJSON as it is.
	if r.At.UnmarshalJSON(at) != nil {
		return Record{}, false
	}
	r.Node = string(node[1 : len(node)-1])
	r.Reason = reasonOf(reason[1 : len(reason)-1])
	r.Epoch = string(epoch[1 : len(epoch)-1])
	return r, true
}

// reasonOf returns the Reason b names, the constant itself for the
// package's reasons.
func reasonOf(b []byte) Reason {
	for _, r := range [...]Reason{ReasonConnect, ReasonTimeout, ReasonClosed, ReasonShutdown, ReasonNodeLost} {
		if string(b) == string(r) {
			return r
		}
	}
	return Reason(b)
}

// cursor is what remains of a value being parsed. Each method consumes
// one token and reports whether it was there; after a false, the cursor
// is left as it was.
type cursor []byte

// lit consumes s.
func (c *cursor) lit(s string) bool {
	if len(*c) < len(s) || string((*c)[:len(s)]) != s {
		return false
	}
	*c = (*c)[len(s):]
	return true
}

// str consumes a string of printable ASCII other than '"' and '\', and
// sets q to it, quotes included.
func (c *cursor) str(q *[]byte) bool {
	b := *c
	if len(b) == 0 || b[0] != '"' {
		return false
	}
	for i := 1; i < len(b); i++ {
		switch ch := b[i]; {
		case ch == '"':
			*q, *c = b[:i+1], b[i+1:]
			return true
		case ch < 0x20 || ch > 0x7e || ch == '\\':
			return false
		}
	}
	return false
}

// uint consumes a number of decimal digits, without a leading zero, that
// fits a uint64, and sets v to it.
func (c *cursor) uint(v *uint64) bool {
	b := *c
	var n uint64
	i := 0
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		d := uint64(b[i] - '0')
		if n > (math.MaxUint64-d)/10 {
			return false
		}
		n = n*10 + d
	}
	if i == 0 || b[0] == '0' && i > 1 {
		return false
	}
	*v, *c = n, b[i:]
	return true
}
