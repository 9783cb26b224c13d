package jobs_test

import (
	"fmt"
	"io"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-schedule/schedule/jobs"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestJobctlLoadAddsAsItReads checks that jobctl load adds each line as it
// reads it: jobs written on its input are in the engine while the input
// is still open.
func TestJobctlLoadAddsAsItReads(t *testing.T) {
	_, url := startServer(t)
	c := openClient(t, url, jobs.DefaultQueue)
	cmd := exec.Command(filepath.Join(bin, "jobctl"), "-nats", url, "load")
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	for i := range 10 {
		_, err := fmt.Fprintf(stdin, "{\"job\":\"r%d\",\"in\":\"1h\"}\n", i)
		require.NoError(t, err)
	}
	eventually(t, 10*time.Second, func() bool {
		in, err := c.Get(ctxOf(t), "r9")
		return err == nil && in.State == jobs.StatePending
	}, "the last line written is added before the input ends")
	require.NoError(t, stdin.Close())
	require.NoError(t, cmd.Wait(), errb.String())
	assert.JSONEq(t, `{"added":10}`, out.String())
}

// loadLines feeds n lines to jobctl load on a fresh embedded server and
// checks every job is stored; it returns how long the command took.
func loadLines(t *testing.T, n int) time.Duration {
	_, url := startServer(t)
	pr, pw := io.Pipe()
	go func() {
		payload := strings.Repeat("p", 100)
		for i := range n {
			if _, err := fmt.Fprintf(pw, "{\"job\":\"device-%08d\",\"in\":\"1h\",\"payload\":%q}\n", i, payload); err != nil {
				return
			}
		}
		_ = pw.Close()
	}()
	cmd := exec.Command(filepath.Join(bin, "jobctl"), "-nats", url, "load")
	cmd.Stdin = pr
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	took := time.Since(start)
	_ = pr.Close()
	require.NoError(t, err, errb.String())
	assert.JSONEq(t, fmt.Sprintf(`{"added":%d}`, n), out.String())
	js, err := jetstream.New(dial(t, url))
	require.NoError(t, err)
	s, err := js.Stream(ctxOf(t), "KV_jobs-"+jobs.DefaultQueue)
	require.NoError(t, err)
	info, err := s.Info(ctxOf(t))
	require.NoError(t, err)
	assert.Equal(t, uint64(n), info.State.Msgs, "every job is stored")
	return took
}

// TestJobctlLoadsManyLines loads more lines than one window of adds in
// flight several times over.
func TestJobctlLoadsManyLines(t *testing.T) {
	loadLines(t, 20_000)
}

// TestJobctlLoadsHundredThousandLines checks the contract's bulk load:
// 100,000 lines load in well under a minute (the race-built command,
// against an embedded server in the test process).
func TestJobctlLoadsHundredThousandLines(t *testing.T) {
	if !*heavy {
		t.Skip("heavy: run with -jobs.heavy")
	}
	took := loadLines(t, 100_000)
	t.Logf("100,000 lines with 100-byte payloads loaded in %v", took)
	assert.Less(t, took, time.Minute)
}

// TestLoaderKeepsUnderTheClientsLimitWhenAnswersLag adds more jobs than
// nats.go lets a client have unanswered, through a proxy that holds every
// answer 700 ms (longer than nats.go waits for room, 200 ms): a Loader that let its adds in flight reach the client's
// limit would fail them ("stalled with too many outstanding async
// published messages"); it waits for answers first.
func TestLoaderKeepsUnderTheClientsLimitWhenAnswersLag(t *testing.T) {
	_, url := startServer(t)
	openClient(t, url, "q") // the buckets, made without the lag
	c, err := jobs.Open(ctxOf(t), dial(t, lagProxy(t, url, 700*time.Millisecond)), jobs.Config{Queue: "q"})
	require.NoError(t, err)
	l := c.NewLoader()
	const n = 4500
	for i := range n {
		require.NoError(t, l.Add(ctxOf(t), fmt.Sprint("j", i), time.Now().Add(time.Hour), nil), "add %d", i)
	}
	failed, err := l.Wait(ctxOf(t))
	require.NoError(t, err)
	assert.Zero(t, failed)
}

// lagProxy forwards TCP connections to the NATS server at url, holding
// every chunk the server sends for lag; it returns the proxy's URL.
func lagProxy(t *testing.T, url string, lag time.Duration) string {
	t.Helper()
	var l atomic.Int64
	l.Store(int64(lag))
	return lagProxyOf(t, url, &l)
}

// lagProxyOf is lagProxy with a lag the test may change as it runs (in
// nanoseconds): each chunk is held for the lag when it arrives.
func lagProxyOf(t *testing.T, url string, lag *atomic.Int64) string {
	t.Helper()
	target := strings.TrimPrefix(url, "nats://")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var wg sync.WaitGroup
	t.Cleanup(func() { _ = ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", target)
			if err != nil {
				_ = in.Close()
				continue
			}
			t.Cleanup(func() { _ = in.Close(); _ = out.Close() })
			wg.Go(func() { _, _ = io.Copy(out, in); _ = out.Close() })
			type chunk struct {
				at time.Time
				b  []byte
			}
			held := make(chan chunk, 1<<16)
			wg.Go(func() {
				defer close(held)
				for {
					b := make([]byte, 32<<10)
					n, err := out.Read(b)
					if n > 0 {
						held <- chunk{time.Now().Add(time.Duration(lag.Load())), b[:n]}
					}
					if err != nil {
						return
					}
				}
			})
			wg.Go(func() {
				defer func() { _ = in.Close() }()
				for ch := range held {
					if d := time.Until(ch.at); d > 0 {
						<-time.After(d)
					}
					if _, err := in.Write(ch.b); err != nil {
						return
					}
				}
			})
		}
	})
	return "nats://" + ln.Addr().String()
}
