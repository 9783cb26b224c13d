package loadtest

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// serve runs Serve with s in a goroutine, with commands from the returned
// channel; wait returns what it wrote and its error.
func serve(ctx context.Context, s Server[testResult]) (cmds chan<- string, wait func() (string, error)) {
	ch := make(chan string)
	var out bytes.Buffer
	e := NewEmitter[testResult](&out)
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, e, ch, s) }()
	return ch, func() (string, error) {
		err := <-done
		return out.String(), err
	}
}

func TestServeSaysReadyThenReportsTheWindowOnReport(t *testing.T) {
	profile := filepath.Join(t.TempDir(), "new", "dir", "server.pprof")
	begun := 0
	cmds, wait := serve(t.Context(), Server[testResult]{
		Addr:    "127.0.0.1:1234",
		Open:    func() int64 { return 7 },
		Profile: profile,
		Begin:   func() { begun++ },
		End:     func(u Usage) testResult { return testResult{Usage: u, N: begun} },
	})
	cmds <- CmdGo
	cmds <- CmdReport
	close(cmds)
	out, err := wait()
	require.NoError(t, err)

	ms := lines(t, out)
	require.Len(t, ms, 2)
	assert.Equal(t, Message[testResult]{Event: EventReady, Addr: "127.0.0.1:1234"}, ms[0])
	assert.Equal(t, EventResult, ms[1].Event)
	require.NotNil(t, ms[1].Server)
	r := *ms[1].Server
	assert.Equal(t, 1, r.N, "Begin once, at go")
	assert.Equal(t, int64(7), r.Conns)
	assert.Equal(t, 7.0, r.AvgConns, "every sample saw 7")
	assert.Positive(t, r.Goroutines)
	assert.Positive(t, r.Goroutines-r.GoroutinesDelta, "goroutines before the window")
	fi, err := os.Stat(profile)
	require.NoError(t, err, "the profile, in the directory made for it")
	assert.Positive(t, fi.Size(), "a stopped profile is written out")
}

func TestServeEndsWithCommandsWithoutAWindow(t *testing.T) {
	cmds, wait := serve(t.Context(), Server[testResult]{
		Addr: "x",
		Open: func() int64 { return 0 },
		End:  func(Usage) testResult { t.Error("a result without report"); return testResult{} },
	})
	close(cmds)
	out, err := wait()
	require.NoError(t, err)
	assert.Len(t, lines(t, out), 1, "ready alone")
}

func TestServeStopsWhenTheContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cmds, wait := serve(ctx, Server[testResult]{Addr: "x", Open: func() int64 { return 0 }})
	cmds <- CmdGo
	cancel()
	_, err := wait()
	assert.ErrorIs(t, err, context.Canceled)
}

func TestUsageAddSumsButKeepsTheLongestWindow(t *testing.T) {
	u := Usage{Conns: 1, AvgConns: 0.5, RSSDelta: 2, HeapDelta: 3, Goroutines: 4, GoroutinesDelta: 5,
		CPU: time.Second, Window: 10 * time.Second, Switches: 6, GCs: 7}
	u.Add(Usage{Conns: 10, AvgConns: 5, RSSDelta: 20, HeapDelta: 30, Goroutines: 40, GoroutinesDelta: 50,
		CPU: 2 * time.Second, Window: 9 * time.Second, Switches: 60, GCs: 70})
	assert.Equal(t, Usage{Conns: 11, AvgConns: 5.5, RSSDelta: 22, HeapDelta: 33, Goroutines: 44, GoroutinesDelta: 55,
		CPU: 3 * time.Second, Window: 10 * time.Second, Switches: 66, GCs: 77}, u)
}

func TestSampleMemoryCountsThisProcess(t *testing.T) {
	s := SampleMemory()
	assert.Positive(t, s.RSS)
	assert.Positive(t, s.Heap)
	assert.Positive(t, s.Goroutines)
	assert.Positive(t, s.GCs, "it collects first")
}

func TestLifetimeFormatsCPUAndPeakByRole(t *testing.T) {
	l := Lifetime{ServerCPU: 1234567 * time.Microsecond, LoaderCPU: 5 * time.Millisecond, ServerPeak: 3 << 20}
	assert.Equal(t, "1.23s / 10ms", l.CPU())
	assert.Equal(t, "3 MiB / -", l.Peak())
}
