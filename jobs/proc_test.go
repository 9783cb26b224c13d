package jobs_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// line is one stdout line of jobworker.
type line struct {
	Event   string `json:"event"`
	Job     string `json:"job"`
	Attempt int    `json:"attempt"`
	Due     int64  `json:"due"`
	At      int64  `json:"at"`
	Next    int64  `json:"next"`
	Node    string `json:"node"`
}

// proc is a jobworker process and the lines it printed.
type proc struct {
	cmd   *exec.Cmd
	mu    sync.Mutex
	lines []line
	url   string
	ready chan struct{}
	done  chan struct{}
	err   error
}

// startWorkerProc starts jobworker with args; the test's end kills it.
func startWorkerProc(t *testing.T, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(filepath.Join(bin, "jobworker"), args...), ready: make(chan struct{}), done: make(chan struct{})}
	out, err := p.cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, p.cmd.Start())
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(out)
		first := true
		for sc.Scan() {
			if s, ok := strings.CutPrefix(sc.Text(), "nats on "); ok && first {
				p.url = s
				first = false
				continue
			}
			first = false
			var l line
			if json.Unmarshal(sc.Bytes(), &l) != nil {
				continue
			}
			p.mu.Lock()
			p.lines = append(p.lines, l)
			p.mu.Unlock()
			if l.Event == "ready" {
				close(p.ready)
			}
		}
		p.err = p.cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
	})
	select {
	case <-p.ready:
	case <-p.done:
		t.Fatalf("jobworker %v exited before ready: %v", args, p.err)
	case <-time.After(30 * time.Second):
		t.Fatalf("jobworker %v: no ready line", args)
	}
	return p
}

func (p *proc) all() []line {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]line(nil), p.lines...)
}

// byEvent returns the lines of event ev across procs.
func byEvent(ev string, ps ...*proc) []line {
	var out []line
	for _, p := range ps {
		for _, l := range p.all() {
			if l.Event == ev {
				out = append(out, l)
			}
		}
	}
	return out
}

// jobctl runs jobctl with args and stdin, and returns its stdout, stderr
// and exit status.
func jobctl(t *testing.T, stdin string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(filepath.Join(bin, "jobctl"), args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return out.String(), errb.String(), code
}

func TestJobworkerBadFlagsExitTwo(t *testing.T) {
	for _, args := range [][]string{
		{"-nope"}, {"-lease", "500ms"}, {"-lease", "1500ms"}, {"-workers", "0"}, {"-replicas", "0"},
		{"-replicas", "6"}, {"-node", "a b"}, {"-nats", "nats://127.0.0.1:1"}, {"-retry", "1s,x"}, {"-retry", "-1s"},
		{"-queue", "a.b"},
	} {
		cmd := exec.Command(filepath.Join(bin, "jobworker"), args...)
		var errb strings.Builder
		cmd.Stderr = &errb
		err := cmd.Run()
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee, "%v", args)
		assert.Equal(t, 2, ee.ExitCode(), "%v", args)
		assert.NotEmpty(t, errb.String(), "%v says why", args)
	}
}

func TestJobctlBadInputExitsTwo(t *testing.T) {
	n := []string{"-nats", "nats://127.0.0.1:1"}
	for _, args := range [][]string{
		{}, {"-nats", "nats://127.0.0.1:1"}, append(n, "frob"), append(n, "add", "-in", "1s"),
		append(n, "add", "-key", "k"), append(n, "add", "-key", "k", "-in", "1s", "-at", "2026-01-01T00:00:00Z"),
		append(n, "add", "-key", "k", "-at", "tomorrow"), append(n, "add", "-key", "", "-in", "1s"),
		append(n, "add", "-key", strings.Repeat("k", 257), "-in", "1s"), append(n, "add", "-key", "\xff", "-in", "1s"),
		append(n, "add", "-key", "k", "-in", "1s", "-payload", strings.Repeat("p", 64<<10+1)),
		append(n, "get"), append(n, "cancel", "-key", ""),
	} {
		_, stderr, code := jobctl(t, "", args...)
		assert.Equal(t, 2, code, "%q", args)
		assert.NotEmpty(t, stderr, "%q says why", args)
	}
}

func TestUnreachableEngineExitsOneNamingTheURL(t *testing.T) {
	url := "nats://127.0.0.1:1"
	start := time.Now()
	_, stderr, code := jobctl(t, "", "-nats", url, "get", "-key", "k")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, url)
	cmd := exec.Command(filepath.Join(bin, "jobworker"), "-nats", url, "-node", "n")
	var errb strings.Builder
	cmd.Stderr = &errb
	err := cmd.Run()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, 1, ee.ExitCode())
	assert.Contains(t, errb.String(), url)
	assert.Less(t, time.Since(start), 30*time.Second)
}

// TestCommandsRunJobsOnOneEmbeddedNode drives both commands through the
// contract on one embedded worker: add, -unique, get in every state,
// cancel, load with a malformed line, retries to dead.
func TestCommandsRunJobsOnOneEmbeddedNode(t *testing.T) {
	w := startWorkerProc(t, "-store", t.TempDir(), "-retry", "200ms")
	n := []string{"-nats", w.url}
	out, _, code := jobctl(t, "", append(n, "add", "-key", "a b.*>é", "-in", "300ms")...)
	require.Equal(t, 0, code)
	var added struct {
		Job string `json:"job"`
		Due int64  `json:"due"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &added))
	assert.Equal(t, "a b.*>é", added.Job)

	_, _, code = jobctl(t, "", append(n, "add", "-key", "slow", "-in", "0s", "-payload", `{"sleep":"8s"}`)...)
	require.Equal(t, 0, code)
	_, stderr, code := jobctl(t, "", append(n, "add", "-key", "slow", "-in", "0s", "-unique")...)
	assert.Equal(t, 3, code, stderr)
	_, _, code = jobctl(t, "", append(n, "add", "-key", "f", "-at", time.Now().Add(200*time.Millisecond).Format(time.RFC3339Nano), "-payload", `{"fail":5}`)...)
	require.Equal(t, 0, code)
	_, _, code = jobctl(t, "", append(n, "add", "-key", "later", "-in", "1h")...)
	require.Equal(t, 0, code)

	eventually(t, 10*time.Second, func() bool { return len(byEvent("dead", w)) == 1 }, "f dies after one retry")
	out, _, _ = jobctl(t, "", append(n, "get", "-key", "f")...)
	assert.JSONEq(t, `{"job":"f","state":"dead","attempt":2}`, out)
	out, _, _ = jobctl(t, "", append(n, "get", "-key", "slow")...)
	assert.Contains(t, out, `"state":"running"`)
	out, _, _ = jobctl(t, "", append(n, "get", "-key", "later")...)
	assert.Contains(t, out, `"state":"pending"`)
	out, _, _ = jobctl(t, "", append(n, "cancel", "-key", "later")...)
	assert.JSONEq(t, `{"job":"later","cancelled":true}`, out)
	out, _, _ = jobctl(t, "", append(n, "get", "-key", "later")...)
	assert.JSONEq(t, `{"job":"later","state":"unknown"}`, out)

	var in strings.Builder
	for i := range 200 {
		fmt.Fprintf(&in, "{\"job\":\"l%d\",\"in\":\"100ms\",\"payload\":\"p\"}\n", i)
	}
	in.WriteString("not json\n")
	out, stderr, code = jobctl(t, in.String(), append(n, "load")...)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "line 201")
	assert.JSONEq(t, `{"added":200}`, out)
	eventually(t, 30*time.Second, func() bool { return len(byEvent("done", w)) == 202 }, "every job done")

	for _, st := range byEvent("start", w) {
		assert.GreaterOrEqual(t, st.At, st.Due, "%s starts on time", st.Job)
	}
	fail := byEvent("fail", w)[0]
	assert.InDelta(t, 200, fail.Next-fail.At, 1)
	require.NoError(t, w.cmd.Process.Signal(syscall.SIGTERM))
	<-w.done
	assert.NoError(t, w.err)
	all := w.all()
	assert.Equal(t, "stopped", all[len(all)-1].Event)
}

// TestRestartOnSameStoreFindsItsJobs checks guarantee 1 on one node: a
// worker killed with SIGKILL and started again on the same -store runs
// every job it held, the attempt it was running included.
func TestRestartOnSameStoreFindsItsJobs(t *testing.T) {
	store := t.TempDir()
	w := startWorkerProc(t, "-store", store, "-lease", "1s")
	n := []string{"-nats", w.url}
	_, _, code := jobctl(t, "", append(n, "add", "-key", "running", "-in", "0s", "-payload", `{"sleep":"30s"}`)...)
	require.Equal(t, 0, code)
	var in strings.Builder
	for i := range 20 {
		fmt.Fprintf(&in, "{\"job\":\"p%d\",\"in\":\"5s\"}\n", i)
	}
	_, _, code = jobctl(t, in.String(), append(n, "load")...)
	require.Equal(t, 0, code)
	eventually(t, 10*time.Second, func() bool { return len(byEvent("start", w)) == 1 }, "the slow attempt starts")
	require.NoError(t, w.cmd.Process.Kill())
	<-w.done

	again := startWorkerProc(t, "-store", store, "-lease", "1s")
	eventually(t, 20*time.Second, func() bool { return len(byEvent("done", again)) == 20 }, "the pending jobs run after the restart")
	starts := byEvent("start", again)
	var slow []line
	for _, s := range starts {
		if s.Job == "running" {
			slow = append(slow, s)
		}
	}
	require.Len(t, slow, 1, "the abandoned attempt starts again")
	assert.Equal(t, 1, slow[0].Attempt, "with the same attempt number")
}

// TestSIGKILLedWorkersJobsStartElsewhere checks guarantee 5 with worker
// processes on a shared engine: the killed worker's jobs start elsewhere
// within 2 leases + 5 s; only its started attempts may start again.
func TestSIGKILLedWorkersJobsStartElsewhere(t *testing.T) {
	_, url := startServer(t)
	args := func(node string) []string { return []string{"-nats", url, "-node", node, "-lease", "1s"} }
	a := startWorkerProc(t, args("a")...)
	b := startWorkerProc(t, args("b")...)
	var in strings.Builder
	for i := range 200 {
		fmt.Fprintf(&in, "{\"job\":\"k%d\",\"in\":\"2s\"}\n", i)
	}
	_, _, code := jobctl(t, in.String(), "-nats", url, "load")
	require.Equal(t, 0, code)
	time.Sleep(500 * time.Millisecond)
	kill := time.Now()
	require.NoError(t, b.cmd.Process.Kill())
	<-b.done
	eventually(t, 20*time.Second, func() bool { return len(byEvent("done", a, b)) >= 200 }, "every job done")
	assert.Empty(t, byEvent("start", b), "b died before any was due")
	for _, s := range byEvent("start", a) {
		late := time.UnixMilli(s.At).Sub(time.UnixMilli(s.Due))
		bound := 2*time.Second + 5*time.Second - time.UnixMilli(s.Due).Sub(kill)
		assert.Less(t, late, bound, "%s", s.Job)
	}
	assert.Len(t, byEvent("start", a), 200, "each job starts once")
}

// TestSIGTERMHandsPendingJobsAtOnce checks guarantee 6 with processes: a
// worker stopped with SIGTERM prints stopped and exits 0, and its pending
// jobs start on the other within 1 s of their due time, with a lease far
// longer than that.
func TestSIGTERMHandsPendingJobsAtOnce(t *testing.T) {
	_, url := startServer(t)
	args := func(node string) []string { return []string{"-nats", url, "-node", node, "-lease", "30s"} }
	a := startWorkerProc(t, args("a")...)
	b := startWorkerProc(t, args("b")...)
	var in strings.Builder
	for i := range 100 {
		fmt.Fprintf(&in, "{\"job\":\"k%d\",\"in\":\"2s\"}\n", i)
	}
	_, _, code := jobctl(t, in.String(), "-nats", url, "load")
	require.Equal(t, 0, code)
	require.NoError(t, b.cmd.Process.Signal(syscall.SIGTERM))
	<-b.done
	require.NoError(t, b.err)
	eventually(t, 20*time.Second, func() bool { return len(byEvent("done", a, b)) >= 100 }, "every job done")
	for _, s := range byEvent("start", a) {
		assert.Less(t, s.At-s.Due, int64(1000), "%s", s.Job)
	}
	assert.Len(t, byEvent("start", a, b), 100)
}

// TestSIGKILLedWorkerOnR3HandsItsRunningAttemptsOver checks guarantees 1
// and 5 with worker processes on a three-server cluster and replicated
// buckets: the attempts a killed worker was running start again on the
// other worker, with the same attempt numbers, within 2 leases + 5 s of
// the kill; the other worker's own attempts do not start again; every job
// ends done.
func TestSIGKILLedWorkerOnR3HandsItsRunningAttemptsOver(t *testing.T) {
	urls := startCluster(t)
	args := func(node string, i int) []string {
		return []string{"-nats", strings.Join(rotate(urls, i), ","), "-node", node, "-lease", "1s", "-replicas", "3"}
	}
	a := startWorkerProc(t, args("a", 0)...)
	b := startWorkerProc(t, args("b", 1)...)
	const n = 20
	var in strings.Builder
	for i := range n {
		fmt.Fprintf(&in, "{\"job\":\"s%d\",\"in\":\"0s\",\"payload\":%q}\n", i, `{"sleep":"3s"}`)
	}
	_, _, code := jobctl(t, in.String(), "-nats", urls[2], "-replicas", "3", "load")
	require.Equal(t, 0, code)
	eventually(t, 10*time.Second, func() bool { return len(byEvent("start", a)) > 0 && len(byEvent("start", b)) > 0 }, "both workers run attempts")
	require.NoError(t, b.cmd.Process.Kill())
	kill := time.Now()
	<-b.done
	abandoned := byEvent("start", b)
	require.Empty(t, byEvent("done", b), "b was killed while its attempts slept")

	eventually(t, 30*time.Second, func() bool { return len(byEvent("done", a)) == n }, "every job done on a")
	onA := map[string][]line{}
	for _, s := range byEvent("start", a) {
		onA[s.Job] = append(onA[s.Job], s)
	}
	for _, s := range abandoned {
		again := onA[s.Job]
		if assert.Len(t, again, 1, "%s: b's attempt starts again on a, once", s.Job) {
			assert.Equal(t, s.Attempt, again[0].Attempt, "%s: with the same attempt number", s.Job)
			assert.Less(t, time.UnixMilli(again[0].At).Sub(kill), 2*time.Second+5*time.Second, s.Job)
		}
	}
	assert.Len(t, onA, n, "every job started on a")
	assert.Len(t, byEvent("start", a), n, "a's own attempts do not start again")
}
