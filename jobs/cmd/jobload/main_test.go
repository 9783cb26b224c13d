package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/go-schedule/schedule/bench/loadtest"
)

// TestMain runs the command's code as a child (the NATS engine or an
// asynq worker) when the run under test starts this test binary again;
// otherwise it runs the tests, and fails if one leaves a goroutine behind.
func TestMain(m *testing.M) {
	loadtest.RunIfChild(run)
	goleak.VerifyTestMain(m, goleak.IgnoreCurrent())
}

// jobsModule is the jobs module, where the run builds jobworker and
// jobctl: the default of -jobs.
var jobsModule = filepath.Join("..", "..")

// TestTinyLoadOnTheNATSSide runs every phase on the go-schedule side only,
// with real jobworker and jobctl processes on a NATS engine, at a size of
// a few seconds a phase: the run must get to its verdict, and the table
// must show every row with the jobs it expects. The verdict itself is not
// asserted, since lateness on a shared machine is not a unit test's to
// judge; no job may be lost, which is not a matter of timing.
func TestTinyLoadOnTheNATSSide(t *testing.T) {
	if _, err := os.Stat(filepath.Join(jobsModule, "cmd", "jobworker")); err != nil {
		t.Skipf("the jobs module has no cmd/jobworker yet at %s: the load has nothing to drive", jobsModule)
	}
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), []string{"-small", "-systems", "jobs", "-out", out, "-scale", "2000", "-quiet", "1s",
		"-rate", "300", "-stream", "2s", "-kill-jobs", "1500", "-kill-due", "600", "-kill-span", "3s", "-ceiling", "300", "-step", "1s"},
		nil, &stdout, &stderr)
	t.Logf("report:\n%s", stdout.String())
	require.NotContains(t, stderr.String(), "the run failed", "standard error:\n%s", stderr.String())
	require.Contains(t, []int{loadtest.ExitPass, loadtest.ExitFail}, code)

	report := stdout.String()
	for _, row := range []string{"scale: jobs pending", "scale: add rate", "scale: worker memory (RSS) per pending job",
		"scale: engine store per pending job", "quiet: engine msgs per pending job", "stream: lateness p99",
		"stream: CPU per started job, workers + engine", "stream: engine msgs per job", "kill: last recovered job started",
		"kill: jobs lost", "kill: jobs started again", "ceiling: CPU per job at each rate", "ceiling: highest rate"} {
		assert.Contains(t, report, row)
	}
	assert.Contains(t, report, "600 / 600", "every streamed job started (300 a second for 2 s)")
	assert.Regexp(t, `target  stream: jobs not started by the end of the wait +0  ok`, report)
	assert.Regexp(t, `target  kill: jobs lost +0  ok`, report)
	assert.Contains(t, report, out, "the report names its directory")

	last := strings.TrimSpace(stderr.String())
	last = last[strings.LastIndexByte(last, '\n')+1:]
	assert.Regexp(t, `^jobload: (PASS|FAIL): `, last, "the verdict is the last line of standard error")
	assert.Contains(t, stderr.String(), "[jobload] go-schedule jobs (NATS): stream:", "progress on standard error")

	b, err := os.ReadFile(filepath.Join(out, "results.json"))
	require.NoError(t, err)
	var results []result
	require.NoError(t, json.Unmarshal(b, &results))
	require.Len(t, results, 1)
	assert.Equal(t, 2000, results[0].ScaleN)
	assert.Zero(t, results[0].Kill.Unfinished)

	raw, err := filepath.Glob(filepath.Join(out, "jobs-stream-w*.jsonl"))
	require.NoError(t, err)
	assert.Len(t, raw, 3, "each worker's raw output is kept")
}

// TestTinyStreamOnTheAsynqSide runs the stream phase on asynq workers
// (this test binary started again) and a redis-server, if one is
// installed: every job must start, and the report must state asynq's
// options. The verdict is FAIL, since go-schedule's side is not measured.
func TestTinyStreamOnTheAsynqSide(t *testing.T) {
	if _, ok := findRedis(""); !ok {
		t.Skip(redisInstall)
	}
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), []string{"-small", "-systems", "asynq", "-phases", "stream", "-out", out,
		"-rate", "200", "-stream", "2s"}, nil, &stdout, &stderr)
	t.Logf("report:\n%s", stdout.String())
	require.NotContains(t, stderr.String(), "the run failed", "standard error:\n%s", stderr.String())
	assert.Equal(t, loadtest.ExitFail, code)
	assert.Contains(t, stderr.String(), "nothing of go-schedule's was measured")
	assert.Contains(t, stdout.String(), "400 / 400", "every job started (200 a second for 2 s)")
	assert.Contains(t, stdout.String(), "DelayedTaskCheckInterval 100ms")
}

// TestCollectorCountsLostTwiceAndLateness feeds a collector the lines of
// three jobs: one started on time, one started twice with the same
// attempt and 5 ms early, one never.
func TestCollectorCountsLostTwiceAndLateness(t *testing.T) {
	c := newCollector()
	for _, l := range []string{
		`nats on nats://127.0.0.1:4222`,
		`{"event":"ready","node":"w0"}`,
		`{"event":"start","job":"j-0000000","attempt":1,"due":1000,"at":1003,"node":"w0"}`,
		`{"event":"done","job":"j-0000000","attempt":1,"at":1004,"node":"w0"}`,
		`{"event":"start","job":"j-0000001","attempt":1,"due":2000,"at":1995,"node":"w0"}`,
		`{"event":"start","job":"j-0000001","attempt":1,"due":2000,"at":9000,"node":"w1"}`,
	} {
		c.line([]byte(l))
	}
	o := c.outcome(3, func(i int) string { return key("j", i) })
	assert.Equal(t, outcome{Expected: 3, Started: 2, Lost: 1, Unfinished: 2, Twice: 1, Repeated: 1, Early: 1, Lateness: []int64{-5000, 3000}}, o)
	assert.Equal(t, 1, c.readyCount())
	assert.Equal(t, 1, c.ends["done"])
}

// TestUnfinishedOnNamesTheJobsLastStartedOnANode checks which jobs the
// kill phase asks the engine about: not finished, and last started on the
// killed worker.
func TestUnfinishedOnNamesTheJobsLastStartedOnANode(t *testing.T) {
	c := newCollector()
	keys := func(i int) string { return key("k", i) }
	for _, e := range []event{
		{Event: "start", Job: "k-0000000", Attempt: 1, Node: "w0"}, // in flight on w0 at the end
		{Event: "start", Job: "k-0000001", Attempt: 1, Node: "w0"},
		{Event: "done", Job: "k-0000001", Attempt: 1, Node: "w0"},
		{Event: "start", Job: "k-0000002", Attempt: 1, Node: "w0"},
		{Event: "start", Job: "k-0000002", Attempt: 1, Node: "w1"}, // started again elsewhere
		{Event: "start", Job: "k-0000003", Attempt: 1, Node: "w1"},
	} {
		c.add(e)
	}
	assert.Equal(t, []string{"k-0000000"}, c.unfinishedOn(5, keys, "w0"), "k-0000004 never started")
}

func TestLastRecoveryIsTheLatestRestartOrLateFirstStart(t *testing.T) {
	c := newCollector()
	keys := func(i int) string { return key("k", i) }
	c.add(event{Event: "start", Job: "k-0000000", Attempt: 1, Due: 1000, At: 1500})
	c.add(event{Event: "start", Job: "k-0000001", Attempt: 1, Due: 1000, At: 4000})
	c.add(event{Event: "start", Job: "k-0000002", Attempt: 1, Due: 9000, At: 9100})
	last, ok := c.lastRecovery(3, keys, time.Second)
	require.True(t, ok)
	assert.Equal(t, int64(4000), last, "the start 3 s late")

	c.add(event{Event: "start", Job: "k-0000000", Attempt: 1, Due: 1000, At: 5000})
	last, _ = c.lastRecovery(3, keys, time.Second)
	assert.Equal(t, int64(5000), last, "the abandoned attempt started again")

	_, ok = c.lastRecovery(1, func(int) string { return "k-0000002" }, time.Second)
	assert.False(t, ok, "a start 100 ms late needed no recovery")
}

func TestAJobWithoutDoneIsUnfinished(t *testing.T) {
	c := newCollector()
	c.add(event{Event: "start", Job: "k-0000000", Attempt: 1, Due: 1000, At: 1000})
	c.add(event{Event: "start", Job: "k-0000001", Attempt: 1, Due: 1000, At: 1000})
	c.add(event{Event: "done", Job: "k-0000001", Attempt: 1, At: 1001})
	o := c.outcome(2, func(i int) string { return key("k", i) })
	assert.Equal(t, 1, o.Unfinished)
	assert.Zero(t, o.Lost)
	assert.Equal(t, 1, c.finishedCount())
}

func TestProcReadsThisProcess(t *testing.T) {
	assert.Positive(t, procRSS(os.Getpid()))
	assert.GreaterOrEqual(t, procCPU(os.Getpid()), time.Duration(0))
	assert.Zero(t, procRSS(-1), "no such process")
}

func TestDirSizeSumsTheFiles(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "a"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "x"), make([]byte, 100), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a", "y"), make([]byte, 23), 0o644))
	assert.Equal(t, int64(123), dirSize(dir))
	assert.Zero(t, dirSize(filepath.Join(dir, "missing")))
}

func TestSmallSetsTheSizesNotGiven(t *testing.T) {
	c, err := parseFlags([]string{"-small", "-rate", "700"}, &bytes.Buffer{})
	require.NoError(t, err)
	assert.Equal(t, 700, c.Rate, "a size given wins")
	assert.Equal(t, 5000, c.Scale)
	assert.Equal(t, []int{500, 1000}, c.Ceiling)
	assert.Equal(t, time.Second, c.Lease)

	c, err = parseFlags(nil, &bytes.Buffer{})
	require.NoError(t, err)
	assert.Equal(t, 1_000_000, c.Scale, "the issue's sizes by default")
	assert.Equal(t, 10_000, c.Rate)
	assert.Equal(t, 100_000, c.KillJobs)
	assert.Equal(t, 10_000, c.KillDue, "a tenth of the pending jobs come due around the kill")
}

func TestBadFlagsAreRefused(t *testing.T) {
	for _, args := range [][]string{
		{"-systems", "river"}, {"-phases", "scale,scale"}, {"-ceiling", "20,10"}, {"-lease", "1500ms"},
		{"-workers", "1"}, {"-rate", "0"}, {"-kill-jobs", "10", "-kill-due", "11"}, {"-quiet", "0s"}, {"extra"},
	} {
		var stderr bytes.Buffer
		code := run(t.Context(), args, nil, &bytes.Buffer{}, &stderr)
		assert.Equal(t, loadtest.ExitUsage, code, "%q", args)
		assert.Contains(t, stderr.String(), "jobload: ", "%q", args)
	}
}

// judged returns a report whose every target is met, with asynq beside.
func judged() *report {
	c, _ := parseFlags(nil, &bytes.Buffer{})
	jobs := &result{System: sysJobs, scaleMeasured: true, ScaleN: 1_000_000, WorkerPerJob: 200, QuietPerJob: 0,
		streamMeasured: true, Stream: streamResult{Rate: 10_000, outcome: outcome{Expected: 100, Started: 100,
			Lateness: []int64{1000, 2000}}, CPU: 10 * time.Millisecond},
		killMeasured: true, KillLate: true, KillTakeover: 3 * time.Second}
	peer := &result{System: sysAsynq, streamMeasured: true, Stream: streamResult{Rate: 10_000,
		outcome: outcome{Expected: 100, Started: 100}, CPU: 20 * time.Millisecond}}
	return &report{cfg: c, dir: "out", results: []*result{jobs, peer}}
}

func TestEveryTargetMetPasses(t *testing.T) {
	var stdout, stderr bytes.Buffer
	r := judged()
	r.dir = t.TempDir()
	assert.Equal(t, loadtest.ExitPass, r.write(&stdout, &stderr))
	assert.Contains(t, stderr.String(), "jobload: PASS")
	assert.NotContains(t, stdout.String(), "WRONG")
}

func TestCeilingShowsTheCPUPerJobOfEachStep(t *testing.T) {
	var stdout bytes.Buffer
	r := judged()
	r.dir = t.TempDir()
	r.cfg.Phases = []string{phaseCeiling}
	r.results[0].ceilDone = true
	r.results[0].Steps = []streamResult{
		{Rate: 1000, outcome: outcome{Started: 100}, CPU: 50 * time.Millisecond},
		{Rate: 2000, outcome: outcome{Started: 200}, CPU: 60 * time.Millisecond},
	}
	r.write(&stdout, &bytes.Buffer{})
	assert.Regexp(t, `ceiling: CPU per job at each rate, workers \+ engine +1,000: 500 µs, 2,000: 300 µs +-`, stdout.String())
}

func TestEachMissedTargetFailsTheRun(t *testing.T) {
	for name, spoil := range map[string]func(j, p *result){
		"late": func(j, _ *result) {
			j.Stream.Lateness = append(slices.Repeat([]int64{1000}, 98), 11_000, 11_000) // p99 is the 99th
		},
		"lost":   func(j, _ *result) { j.Stream.Lost = 1 },
		"twice":  func(j, _ *result) { j.Stream.Twice = 1 },
		"cpu":    func(_, p *result) { p.Stream.CPU = 5 * time.Millisecond },
		"memory": func(j, _ *result) { j.WorkerPerJob = 301 },
		"quiet": func(j, _ *result) {
			j.QuietN1, j.QuietIn1, j.QuietIn2 = 100_000, 100, 30_000 // 29,900 more for 900,000 more jobs
		},
		"kill lost":    func(j, _ *result) { j.Kill.Unfinished = 1 },
		"kill so late": func(j, _ *result) { j.KillTakeover = 16 * time.Second },
	} {
		r := judged()
		r.dir = t.TempDir()
		spoil(r.results[0], r.results[1])
		var stdout, stderr bytes.Buffer
		assert.Equal(t, loadtest.ExitFail, r.write(&stdout, &stderr), name)
		assert.Contains(t, stderr.String(), "jobload: FAIL: ", name)
		assert.Contains(t, stdout.String(), "WRONG", name)
	}
}

func TestQuietToleratesJitterButNotTrafficPerJob(t *testing.T) {
	assert.True(t, quietOK(15, 17, 200, 2000), "2 more, within a tenth plus 3")
	assert.True(t, quietOK(100, 100, 100_000, 1_000_000))
	assert.True(t, quietOK(100, 500, 100_000, 1_000_000), "400 more for 900,000 more jobs")
	assert.True(t, quietOK(23, 30, 500, 5000), "7 more for 4,500 more jobs: the lease refreshes' phase")
	assert.False(t, quietOK(100, 10_000, 100_000, 1_000_000), "9,900 more for 900,000 more jobs")
	assert.False(t, quietOK(15, 40, 200, 2000))
}

func TestJudgeCountsIgnoresTimingOnly(t *testing.T) {
	r := judged()
	r.dir, r.cfg.CountsOnly = t.TempDir(), true
	r.results[0].KillTakeover = time.Minute
	var stdout, stderr bytes.Buffer
	assert.Equal(t, loadtest.ExitPass, r.write(&stdout, &stderr))
	assert.Contains(t, stdout.String(), "not judged with -judge counts")

	r.results[0].Kill.Unfinished = 1
	stdout.Reset()
	stderr.Reset()
	assert.Equal(t, loadtest.ExitFail, r.write(&stdout, &stderr))
}

func TestACeilingAloneIsReportedNotJudged(t *testing.T) {
	c, err := parseFlags([]string{"-phases", "ceiling"}, &bytes.Buffer{})
	require.NoError(t, err)
	r := &report{cfg: c, dir: t.TempDir(), results: []*result{{System: sysJobs, ceilDone: true, Ceiling: 1000,
		Steps: []streamResult{{Rate: 1000, outcome: outcome{Expected: 1, Started: 1, Lateness: []int64{5000}}, Lead: time.Second}}}}}
	var stdout, stderr bytes.Buffer
	assert.Equal(t, loadtest.ExitPass, r.write(&stdout, &stderr))
	assert.Contains(t, stderr.String(), "no target applies")
	assert.Contains(t, stdout.String(), "1,000: 5ms")
}

func TestMemoryIsNotJudgedAtASmallScale(t *testing.T) {
	r := judged()
	r.results[0].ScaleN, r.results[0].WorkerPerJob = 5000, 2000
	for _, ch := range r.checks() {
		assert.NotContains(t, ch.Name, "worker memory")
	}
}
