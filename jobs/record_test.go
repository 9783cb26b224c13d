package jobs

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAppendHeaderIsJSONMarshal checks that the header bytes a worker
// writes are json.Marshal's, which the wire format states.
func TestAppendHeaderIsJSONMarshal(t *testing.T) {
	for _, h := range []header{
		{},
		{State: StatePending, Due: 1795850826213, Attempt: 1},
		{State: StateRunning, Due: 1795850826213, Attempt: 2, Node: "w1", Epoch: "9c1f0a3e5d7b2c41", Started: 1795850826215, Run: 17},
		{State: StateDead, Attempt: 3},
		{State: "odd <&> \"state\"\n\x00é\u2028\xff", Due: -1, Attempt: math.MinInt, Node: "a\\b", Run: math.MaxUint64, Started: math.MinInt64},
		{State: StatePending, Due: math.MaxInt64, Attempt: math.MaxInt, Epoch: "e"},
	} {
		want, err := json.Marshal(h)
		require.NoError(t, err)
		assert.Equal(t, string(want), string(appendHeader(nil, h)))
	}
}

// FuzzParseHeaderReadsAsJSON checks that a header line the fast reader
// accepts is read as encoding/json reads it, and that it accepts what a
// worker writes.
func FuzzParseHeaderReadsAsJSON(f *testing.F) {
	for _, s := range []string{
		`{"state":"pending","due":1795850826213,"attempt":1}`,
		`{"state":"running","due":1795850826213,"attempt":2,"node":"w1","epoch":"9c1f0a3e5d7b2c41","started":1795850826215,"run":17}`,
		`{"state":"dead","due":0,"attempt":3}`,
		`{"attempt":1,"state":"pending","due":5}`,
		`{"state":"pending","due":-0,"attempt":01}`,
		`{"state":"pending","due":1e3,"attempt":1}`,
		`{"state":"pending","due":9223372036854775808,"attempt":1}`,
		`{"state":"pending","due":-9223372036854775808,"attempt":1,"run":-0}`,
		`{"state":"pending","State":"dead","attempt":1}`,
		`{"state":"pending","state":"dead","attempt":1}`,
		`{"state":"pen\u0064ing","attempt":1,"x":null}`,
		`{"state":"pending","attempt":1,}`,
		`{ "state":"pending","attempt":1}`,
		`{}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		h, ok := parseHeader(line)
		if !ok {
			return
		}
		var j header
		require.NoError(t, json.Unmarshal(line, &j), "%q", line)
		require.Equal(t, j, h, "%q", line)
	})
}

// TestParseHeaderReadsWhatAWorkerWrites checks that the records a worker
// writes never need encoding/json to be read.
func TestParseHeaderReadsWhatAWorkerWrites(t *testing.T) {
	for _, h := range []header{
		{State: StatePending, Due: 1795850826213, Attempt: 1},
		{State: StateRunning, Due: 1795850826213, Attempt: 2, Node: "w-1_A", Epoch: "9c1f0a3e5d7b2c41", Started: 1795850826215, Run: 17},
		{State: StateDead, Attempt: 3},
	} {
		got, ok := parseHeader(appendHeader(nil, h))
		require.True(t, ok)
		assert.Equal(t, h, got)
		v := encodeRecord(h, []byte("payload\nwith a newline"))
		dh, payload, ok := decodeRecord(v)
		require.True(t, ok)
		assert.Equal(t, h, dh)
		assert.Equal(t, "payload\nwith a newline", string(payload))
	}
	assert.Zero(t, testing.AllocsPerRun(100, func() {
		_, _ = parseHeader([]byte(`{"state":"pending","due":1795850826213,"attempt":1}`))
	}))
}
