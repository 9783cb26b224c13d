package loadtest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testResult is the server result of the tests' children.
type testResult struct {
	Usage
	Mode string `json:"mode"`
	N    int    `json:"n"`
}

// lines decodes the messages an Emitter wrote, leaving out progress.
func lines(t *testing.T, out string) []Message[testResult] {
	t.Helper()
	var ms []Message[testResult]
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var m Message[testResult]
		require.NoError(t, json.Unmarshal(sc.Bytes(), &m), "%s", sc.Text())
		if m.Event != EventProgress {
			ms = append(ms, m)
		}
	}
	return ms
}

func TestEmitterWritesOneJSONLineAMessageWithoutEscapingHTML(t *testing.T) {
	var out bytes.Buffer
	e := NewEmitter[testResult](&out)
	e.Emit(Message[testResult]{Event: EventReady, Addr: "<here>"})
	e.Emit(Message[testResult]{Event: EventResult, Server: &testResult{N: 3}})
	got := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	require.Len(t, got, 2)
	assert.Equal(t, `{"event":"ready","addr":"<here>"}`, got[0])
	assert.Contains(t, got[1], `"n":3`)
}

func TestEmitterFinishReportsOnlyRealErrors(t *testing.T) {
	var out bytes.Buffer
	e := NewEmitter[testResult](&out)
	assert.Equal(t, ExitPass, e.Finish(nil))
	assert.Equal(t, ExitPass, e.Finish(context.Canceled))
	assert.Empty(t, out.String())
	assert.Equal(t, ExitFail, e.Finish(errors.New("lost")))
	assert.Equal(t, `{"event":"error","error":"lost"}`+"\n", out.String())
}

func TestCommandsDeliversLinesUntilTheEnd(t *testing.T) {
	var got []string
	for c := range Commands(strings.NewReader("go\nreport\n")) {
		got = append(got, c)
	}
	assert.Equal(t, []string{CmdGo, CmdReport}, got)
}

func TestClientCountsAddEveryCount(t *testing.T) {
	c := ClientCounts{1, 2, 3, 4, 5, 6, 7}
	c.Add(ClientCounts{10, 20, 30, 40, 50, 60, 70})
	assert.Equal(t, ClientCounts{11, 22, 33, 44, 55, 66, 77}, c)
}

func TestLatenessKeepsMicrosecondsInOrderAndCopies(t *testing.T) {
	var l Lateness
	l.Add(1500 * time.Nanosecond)
	l.Add(-2 * time.Millisecond)
	got := l.Micros()
	assert.Equal(t, []int64{1, -2000}, got)
	got[0] = 99
	assert.Equal(t, []int64{1, -2000}, l.Micros())
}

func TestLatenessTakesConcurrentAdds(t *testing.T) {
	var l Lateness
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				l.Add(time.Microsecond)
			}
		})
	}
	wg.Wait()
	assert.Len(t, l.Micros(), 800)
}

func TestNewLoaderNeedsAServerAndAnIPSource(t *testing.T) {
	_, err := NewLoader(LoadConfig{}, time.Second)
	assert.EqualError(t, err, "no -server")
	_, err = NewLoader(LoadConfig{Servers: []string{"a:1"}, Source: "localhost"}, time.Second)
	assert.EqualError(t, err, `-source "localhost" is not an IP address`)

	l, err := NewLoader(LoadConfig{Servers: []string{"a:1"}, Source: "127.4.5.6"}, time.Second)
	require.NoError(t, err)
	assert.Equal(t, &net.TCPAddr{IP: net.ParseIP("127.4.5.6")}, l.Dialer.LocalAddr)
	assert.Equal(t, DialTimeout, l.Dialer.Timeout)
	l, err = NewLoader(LoadConfig{Servers: []string{"a:1"}}, time.Second)
	require.NoError(t, err)
	assert.Nil(t, l.Dialer.LocalAddr, "any source")
}

func TestLoaderServerStartsAtItsIndexAndGoesRound(t *testing.T) {
	l, err := NewLoader(LoadConfig{Index: 1, Servers: []string{"a", "b", "c"}}, time.Second)
	require.NoError(t, err)
	var got []string
	for k := range 4 {
		got = append(got, l.Server(k))
	}
	assert.Equal(t, []string{"b", "c", "a", "b"}, got)
}

func TestLoaderClosedCountsLatenessAndEarlyCloses(t *testing.T) {
	l, err := NewLoader(LoadConfig{Servers: []string{"a"}}, time.Second)
	require.NoError(t, err)
	assert.False(t, l.Closed(1500*time.Millisecond))
	assert.True(t, l.Closed(900*time.Millisecond))
	assert.False(t, l.Closed(time.Second), "exactly the timeout is not early")
	res := l.Result()
	assert.Equal(t, int64(3), res.SilentClosed)
	assert.Equal(t, int64(1), res.Early)
	assert.Equal(t, []int64{500000, -100000, 0}, res.Lateness)
}

func TestLoaderFellSilentReportsTheLastWriteOfEachClientInUnixNanoseconds(t *testing.T) {
	l, err := NewLoader(LoadConfig{Servers: []string{"a"}}, time.Second)
	require.NoError(t, err)
	assert.Nil(t, l.Result().LastWrites, "no client fell silent")
	at := time.Unix(1700000000, 123456789)
	l.FellSilent("s1", at.Add(-time.Second))
	l.FellSilent("s2", at)
	l.FellSilent("s1", at.Add(time.Millisecond))
	res := l.Result()
	assert.Equal(t, map[string]int64{"s1": at.UnixNano() + 1e6, "s2": at.UnixNano()}, res.LastWrites)
	l.FellSilent("s3", at)
	assert.Len(t, res.LastWrites, 2, "a result is a copy")
}

func TestLoaderNoteKeepsTheFirstFewErrors(t *testing.T) {
	l, err := NewLoader(LoadConfig{Servers: []string{"a"}}, time.Second)
	require.NoError(t, err)
	for i := range maxErrors + 3 {
		l.Note("error %d", i)
	}
	errs := l.Result().Errors
	require.Len(t, errs, maxErrors)
	assert.Equal(t, "error 0", errs[0])
	assert.Equal(t, fmt.Sprintf("error %d", maxErrors-1), errs[maxErrors-1])
}

func TestLoaderWindowIsFallTimeoutAndGrace(t *testing.T) {
	l, err := NewLoader(LoadConfig{Servers: []string{"a"}, Fall: 8 * time.Second, Grace: 2 * time.Second}, 6*time.Second)
	require.NoError(t, err)
	assert.Equal(t, 16*time.Second, l.Window())
}

// runLoader runs RunLoader on l in a goroutine, with commands from the
// returned channel; wait returns its error and what it wrote.
func runLoader(ctx context.Context, l *Loader, connect func(k int)) (cmds chan<- string, wait func() (string, error)) {
	ch := make(chan string)
	var out bytes.Buffer
	e := NewEmitter[testResult](&out)
	done := make(chan error, 1)
	go func() { done <- RunLoader(ctx, l, e, ch, connect) }()
	return ch, func() (string, error) {
		err := <-done
		return out.String(), err
	}
}

func TestRunLoaderConnectsEveryClientOnceThenReportsAtTheWindowsEnd(t *testing.T) {
	l, err := NewLoader(LoadConfig{Servers: []string{"a"}, Live: 30, Silent: 20, Dialers: 4}, 0)
	require.NoError(t, err)
	var mu sync.Mutex
	var connected []int
	cmds, wait := runLoader(t.Context(), l, func(k int) {
		mu.Lock()
		connected = append(connected, k)
		mu.Unlock()
		if k < 30 {
			l.LiveConnected.Add(1)
			return
		}
		l.SilentConnected.Add(1)
		go func() {
			<-l.Started()
			l.Closed(0)
		}()
	})
	cmds <- CmdGo
	cmds <- "something else"
	close(cmds)
	out, err := wait()
	require.NoError(t, err)

	slices.Sort(connected)
	assert.Equal(t, 50, len(connected))
	for k, c := range connected {
		assert.Equal(t, k, c)
	}
	ms := lines(t, out)
	require.Len(t, ms, 2)
	assert.Equal(t, EventConnected, ms[0].Event)
	require.NotNil(t, ms[0].Progress)
	assert.Equal(t, ClientCounts{LiveConnected: 30, SilentConnected: 20}, *ms[0].Progress)
	assert.Equal(t, EventResult, ms[1].Event)
	require.NotNil(t, ms[1].Loader)
	assert.Equal(t, int64(30), ms[1].Loader.LiveConnected)
	assert.False(t, l.Start().IsZero())
}

func TestRunLoaderReturnsWhenTheParentGivesUpBeforeGo(t *testing.T) {
	l, err := NewLoader(LoadConfig{Servers: []string{"a"}, Live: 2, Dialers: 1}, 0)
	require.NoError(t, err)
	cmds, wait := runLoader(t.Context(), l, func(int) { l.LiveConnected.Add(1) })
	close(cmds)
	out, err := wait()
	require.NoError(t, err)
	ms := lines(t, out)
	require.Len(t, ms, 1, "connected, and no result")
	assert.Equal(t, EventConnected, ms[0].Event)
	select {
	case <-l.Started():
		t.Error("the window started")
	default:
	}
}

func TestRunLoaderStopsWhenTheContextEnds(t *testing.T) {
	l, err := NewLoader(LoadConfig{Servers: []string{"a"}, Live: 1000, Dialers: 2}, 0)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	cmds, wait := runLoader(ctx, l, func(int) {})
	_, err = wait()
	close(cmds)
	assert.ErrorIs(t, err, context.Canceled)
}

func TestMergeLoadsSumsCountsAndSortsEveryLateness(t *testing.T) {
	m := MergeLoads([]LoadResult{
		{ClientCounts: ClientCounts{LiveConnected: 3, SilentClosed: 2}, Lateness: []int64{5, -1}, Errors: []string{"a"}},
		{ClientCounts: ClientCounts{LiveConnected: 4, Early: 1}, Lateness: []int64{2}},
		{Errors: []string{"b", "c"}},
	})
	assert.Equal(t, ClientCounts{LiveConnected: 7, SilentClosed: 2, Early: 1}, m.ClientCounts)
	assert.Equal(t, []int64{-1, 2, 5}, m.Lateness)
	assert.Equal(t, []string{"a", "b", "c"}, m.Errors)
	assert.Equal(t, LoadResult{}, MergeLoads(nil))
}

func TestMergeLoadsJoinsTheLastWritesOfEveryProcess(t *testing.T) {
	m := MergeLoads([]LoadResult{{LastWrites: map[string]int64{"a": 1}}, {}, {LastWrites: map[string]int64{"b": 2, "c": 3}}})
	assert.Equal(t, map[string]int64{"a": 1, "b": 2, "c": 3}, m.LastWrites)
}

func TestMergeLoadsSortsTheWillLatenessesOfEveryProcess(t *testing.T) {
	m := MergeLoads([]LoadResult{{WillLateness: []int64{30, 10}}, {WillLateness: []int64{20}}, {}})
	assert.Equal(t, []int64{10, 20, 30}, m.WillLateness)
}
