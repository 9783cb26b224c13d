package presence

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// atTest is a time as nodes write it: UTC, to the nanosecond.
var atTest = time.Date(2026, 11, 26, 16, 9, 8, 123456789, time.UTC)

// oddRecords holds records with unusual strings, times and numbers.
var oddRecords = []Record{
	{State: Online, Node: "gw1", Reason: ReasonConnect, Epoch: "9f86d081884c7d65", Conn: 7, At: atTest},
	{State: Offline, Node: "gw_2-B", Reason: ReasonNodeLost, Epoch: "0123456789abcdef", Conn: 1, At: atTest.Truncate(time.Second)},
	{State: Offline, Node: "", Reason: "", Epoch: "", Conn: 0, At: time.Time{}},
	{State: Online, Node: `q"uo"te`, Reason: `back\slash`, Epoch: "tab\there", Conn: math.MaxUint64, At: atTest},
	{State: Offline, Node: "<&>", Reason: "\u2028\u2029", Epoch: "é漢字🙂", Conn: 1 << 53, At: atTest},
	{State: Online, Node: "gw1", Reason: "someday", Epoch: "e", Conn: 10, At: atTest.In(time.FixedZone("CET", 3600))},
	{State: Online, Node: "gw1", Reason: ReasonClosed, Epoch: "e", Conn: 10, At: atTest.In(time.FixedZone("", -(9*3600 + 30*60)))},
	{State: Offline, Node: "gw1", Reason: ReasonShutdown, Epoch: "e", Conn: 10, At: time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC)},
	{State: Offline, Node: "gw1", Reason: ReasonTimeout, Epoch: "e", Conn: 10, At: time.Date(0, 1, 1, 0, 0, 0, 1, time.UTC)},
}

// assertSameRecord checks that got is want, the time by its instant and
// zone: two parses of one offset make two equal zones, not one.
func assertSameRecord(t *testing.T, want, got Record, msg ...any) {
	t.Helper()
	assert.True(t, want.At.Equal(got.At), msg...)
	wantZone, wantOff := want.At.Zone()
	gotZone, gotOff := got.At.Zone()
	assert.Equal(t, wantZone, gotZone, msg...)
	assert.Equal(t, wantOff, gotOff, msg...)
	want.At, got.At = time.Time{}, time.Time{}
	assert.Equal(t, want, got, msg...)
}

func TestDecodeRecordGivesBackWhatEncodeWrote(t *testing.T) {
	for _, r := range oddRecords {
		got, ok := decodeRecord("dev", 42, r.encode())
		require.True(t, ok, "%s", r.encode())
		// RFC 3339 keeps the instant and the offset, not the zone's name.
		assert.True(t, r.At.Equal(got.At), "%s", r.encode())
		_, wantOff := r.At.Zone()
		_, gotOff := got.At.Zone()
		assert.Equal(t, wantOff, gotOff, "%s", r.encode())
		r.Device, r.Rev, r.At, got.At = "dev", 42, time.Time{}, time.Time{}
		assert.Equal(t, r, got, "%s", r.encode())
	}
}

func TestRecordsAsNodesWriteThemTakeTheDirectPath(t *testing.T) {
	// A node's record: a node id, a hex epoch, a reason of the package, a
	// UTC time (a whole second has no fraction).
	for _, reason := range []Reason{ReasonConnect, ReasonTimeout, ReasonClosed, ReasonShutdown, ReasonNodeLost} {
		for _, when := range []time.Time{atTest, atTest.Truncate(time.Second), atTest.Truncate(time.Millisecond), time.Now().UTC()} {
			r := Record{State: Offline, Node: "Gw_9-z", Reason: reason, Epoch: newEpoch(), Conn: 12345678901, At: when}
			got, ok := parseRecord(r.encode())
			require.True(t, ok, "%s", r.encode())
			assertSameRecord(t, r, got)
		}
	}
}

func TestDecodeRecordRejectsValuesThatAreNotRecords(t *testing.T) {
	for _, v := range []string{
		``, `null`, `{}`, `[]`, `"online"`,
		`{"state":"gone","node":"n","reason":"connect","epoch":"e","conn":1,"at":"2026-11-26T16:09:08Z"}`,
		`{"state":"online","node":"n","reason":"connect","epoch":"e","conn":18446744073709551616,"at":"2026-11-26T16:09:08Z"}`,
		`{"state":"online","node":"n","reason":"connect","epoch":"e","conn":-1,"at":"2026-11-26T16:09:08Z"}`,
		`{"state":"online","node":"n","reason":"connect","epoch":"e","conn":1,"at":"yesterday"}`,
		`{"state":"online","node":"n","reason":"connect","epoch":"e","conn":1,"at":"2026-11-26T16:09:08Z"`,
	} {
		_, ok := decodeRecord("dev", 1, []byte(v))
		assert.False(t, ok, v)
	}
}

// FuzzDecodeRecord checks that decodeRecord decodes any value as
// encoding/json does: the same verdict, the same record.
func FuzzDecodeRecord(f *testing.F) {
	for _, r := range oddRecords {
		f.Add(r.encode())
	}
	enc := string(oddRecords[0].encode())
	for _, v := range []string{
		``, `null`, `{}`,
		enc + ` `, ` ` + enc, strings.Replace(enc, `,`, ` ,`, 1),
		strings.Replace(enc, `"state"`, `"State"`, 1),
		strings.Replace(enc, `"gw1"`, `"g\u0077\"1"`, 1),
		strings.Replace(enc, `"gw1"`, "\"g\xffw\"", 1),
		strings.Replace(enc, `"gw1"`, `null`, 1),
		strings.Replace(enc, `:7,`, `:07,`, 1),
		strings.Replace(enc, `:7,`, `:7.0,`, 1),
		strings.Replace(enc, `:7,`, `:18446744073709551615,`, 1),
		strings.Replace(enc, `:7,`, `:18446744073709551616,`, 1),
		strings.Replace(enc, `:7,`, `:99999999999999999999,`, 1),
		strings.Replace(enc, `Z"`, `+01:00"`, 1),
		strings.Replace(enc, `Z"`, `+24:00"`, 1),
		strings.Replace(enc, `.123456789Z`, `,5Z`, 1),
		strings.Replace(enc, `"online"`, `"offline"`, 1),
		strings.Replace(enc, `"online"`, `"Online"`, 1),
		strings.Replace(enc, `,"at"`, `,"rev":3,"at"`, 1),
		enc[:len(enc)-1] + `,"conn":8}`,
		`{"state":"online","node":"n","reason":"connect","epoch":"e","conn":1,"at":null}`,
		`{"state":"online"}`,
	} {
		f.Add([]byte(v))
	}
	f.Fuzz(func(t *testing.T, value []byte) {
		want, wantOK := unmarshalRecord(value)
		got, gotOK := decodeRecord("", 0, value)
		require.Equal(t, wantOK, gotOK, "%q", value)
		assertSameRecord(t, want, got, "%q", value)
	})
}

// typical is a record as a node writes it.
var typical = Record{State: Online, Node: "gw3", Reason: ReasonConnect, Epoch: "9f86d081884c7d65", Conn: 123456, At: atTest}

func BenchmarkDecodeRecord(b *testing.B) {
	value := typical.encode()
	b.Run("json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, ok := unmarshalRecord(value); !ok {
				b.Fatal("not decoded")
			}
		}
	})
	b.Run("direct", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, ok := decodeRecord("", 0, value); !ok {
				b.Fatal("not decoded")
			}
		}
	})
}

// BenchmarkScanRecords runs a reap's scan callback over the values of
// 100,000 devices of 10 nodes, 1 in 100 offline, without the engine:
// "json-all" as it was (every record decoded by encoding/json and kept),
// "direct-online" with the direct decoder keeping the online records,
// "direct-live" as the periodic scan of a fleet whose 10 nodes are all
// live is now (records decoded directly, none kept).
func BenchmarkScanRecords(b *testing.B) {
	const devices, nodes = 100_000, 10
	type entry struct {
		key   string
		value []byte
	}
	entries := make([]entry, devices)
	live := make(map[string]string, nodes)
	for i := range entries {
		r := typical
		r.Node, r.Conn = fmt.Sprintf("gw%d", i%nodes), uint64(i)
		if i%100 == 0 {
			r.State, r.Reason = Offline, ReasonTimeout
		}
		live[r.Node] = r.Epoch
		entries[i] = entry{EncodeKey(fmt.Sprintf("device-%06d", i)), r.encode()}
	}
	report := func(b *testing.B, kept int) {
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*devices), "ns/record")
		b.ReportMetric(float64(kept), "kept/op")
	}
	b.Run("json-all", func(b *testing.B) {
		b.ReportAllocs()
		kept := 0
		for b.Loop() {
			var out []Record
			for i, e := range entries {
				device, ok := DecodeKey(e.key)
				if !ok {
					continue
				}
				if r, ok := unmarshalRecord(e.value); ok {
					r.Device, r.Rev = device, uint64(i)
					out = append(out, r)
				}
			}
			kept = len(out)
		}
		report(b, kept)
	})
	keep := map[string]func(Record) bool{
		"direct-online": func(r Record) bool { return r.State == Online },
		"direct-live": func(r Record) bool {
			_, held := live[r.Node]
			return r.State == Online && !held
		},
	}
	for _, name := range []string{"direct-online", "direct-live"} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			kept := 0
			for b.Loop() {
				var out []Record
				for i, e := range entries {
					if r, ok := keptRecord(e.key, uint64(i), e.value, keep[name]); ok {
						out = append(out, r)
					}
				}
				kept = len(out)
			}
			report(b, kept)
		})
	}
}
