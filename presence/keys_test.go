package presence_test

import (
	"strings"
	"testing"

	"github.com/go-schedule/schedule/presence"
	"github.com/stretchr/testify/assert"
)

var oddIDs = []string{
	"plain-id", "a.b", "*", ">", "a.*.>", "dev:01/02", "#1", "$SYS", "100%", "_", "_2E",
	"..", "a..b", ".", "-", "~!\"'`()[]{}<>|\\^@,;?=+&", strings.Repeat("x", 128), strings.Repeat(".", 128),
}

func TestEncodeKeyGivesValidKeysThatDecodeBack(t *testing.T) {
	for _, id := range oddIDs {
		key := presence.EncodeKey(id)
		assert.Regexp(t, `^[-_A-Za-z0-9]+$`, key, "key of %q", id)
		got, ok := presence.DecodeKey(key)
		assert.True(t, ok, "decode %q", key)
		assert.Equal(t, id, got)
	}
}

func TestDecodeKeyRejectsWhatEncodeKeyNeverMakes(t *testing.T) {
	for _, key := range []string{"", "_", "_2", "_zz", "_41", "a.b", "_2e"} {
		_, ok := presence.DecodeKey(key)
		assert.False(t, ok, "key %q", key)
	}
}

func FuzzEncodeKeyRoundTrips(f *testing.F) {
	for _, id := range oddIDs {
		f.Add(id)
	}
	f.Fuzz(func(t *testing.T, id string) {
		got, ok := presence.DecodeKey(presence.EncodeKey(id))
		if id == "" {
			return
		}
		if !ok || got != id {
			t.Fatalf("%q round-trips to %q, %v", id, got, ok)
		}
	})
}

// DecodeKey accepts exactly what EncodeKey makes: whatever key it
// decodes, EncodeKey gives back.
func FuzzDecodeKeyAcceptsOnlyEncodeKeyResults(f *testing.F) {
	for _, id := range oddIDs {
		f.Add(presence.EncodeKey(id))
	}
	for _, key := range []string{"", "_", "_2", "_zz", "_41", "a.b", "_2e", "a_2Eb_", "é"} {
		f.Add(key)
	}
	f.Fuzz(func(t *testing.T, key string) {
		id, ok := presence.DecodeKey(key)
		if ok && presence.EncodeKey(id) != key {
			t.Fatalf("%q decodes to %q, which encodes to %q", key, id, presence.EncodeKey(id))
		}
	})
}

func TestValidDeviceIDAcceptsPrintableASCIIUpTo128Bytes(t *testing.T) {
	assert.True(t, presence.ValidDeviceID("a"))
	assert.True(t, presence.ValidDeviceID(strings.Repeat("~", 128)))
	assert.False(t, presence.ValidDeviceID(""))
	assert.False(t, presence.ValidDeviceID(strings.Repeat("a", 129)))
	assert.False(t, presence.ValidDeviceID("a b"))
	assert.False(t, presence.ValidDeviceID("a\x7f"))
	assert.False(t, presence.ValidDeviceID("é"))
}

func TestValidNodeID(t *testing.T) {
	assert.True(t, presence.ValidNodeID("gw-1_A"))
	assert.True(t, presence.ValidNodeID(strings.Repeat("n", 64)))
	assert.False(t, presence.ValidNodeID(""))
	assert.False(t, presence.ValidNodeID(strings.Repeat("n", 65)))
	assert.False(t, presence.ValidNodeID("gw.1"))
	assert.False(t, presence.ValidNodeID("gw*"))
}
