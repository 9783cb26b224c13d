package jobs_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-schedule/schedule/jobs"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAddGetCancelByKey(t *testing.T) {
	_, url := startServer(t)
	c := openClient(t, url, "q")
	due := time.UnixMilli(time.Now().Add(time.Hour).UnixMilli())
	require.NoError(t, c.Add(ctxOf(t), "order 42", due, []byte("x")))

	in, err := c.Get(ctxOf(t), "order 42")
	require.NoError(t, err)
	assert.Equal(t, jobs.StatePending, in.State)
	assert.Equal(t, due, in.Due)
	assert.Equal(t, 1, in.Attempt)

	existed, err := c.Cancel(ctxOf(t), "order 42")
	require.NoError(t, err)
	assert.True(t, existed)
	in, err = c.Get(ctxOf(t), "order 42")
	require.NoError(t, err)
	assert.Equal(t, jobs.StateUnknown, in.State)
	existed, err = c.Cancel(ctxOf(t), "order 42")
	require.NoError(t, err)
	assert.False(t, existed, "a second cancel finds nothing")
}

func TestAddReplacesDueTimeAndPayload(t *testing.T) {
	_, url := startServer(t)
	c := openClient(t, url, "q")
	later := time.Now().Add(time.Hour)
	require.NoError(t, c.Add(ctxOf(t), "k", later, []byte("old")))
	var evs events
	got := make(chan string, 1)
	startWorker(t, url, "q", "w1", func(_ context.Context, j jobs.Job) error { got <- string(j.Payload); return nil }, &evs, jobs.WorkerConfig{})
	require.NoError(t, c.Add(ctxOf(t), "k", time.Now().Add(200*time.Millisecond), []byte("new")))
	select {
	case p := <-got:
		assert.Equal(t, "new", p)
	case <-time.After(10 * time.Second):
		t.Fatal("the replacement did not run")
	}
}

func TestAddUniqueLeavesPendingAloneAndReplacesDead(t *testing.T) {
	_, url := startServer(t)
	c := openClient(t, url, "q")
	require.NoError(t, c.AddUnique(ctxOf(t), "u", time.Now().Add(time.Hour), nil))
	assert.ErrorIs(t, c.AddUnique(ctxOf(t), "u", time.Now(), nil), jobs.ErrExists)

	var evs events
	startWorker(t, url, "q", "w1", func(context.Context, jobs.Job) error { return errors.New("no") }, &evs, jobs.WorkerConfig{Retry: []time.Duration{}})
	require.NoError(t, c.AddUnique(ctxOf(t), "d", time.Now(), nil))
	eventually(t, 10*time.Second, func() bool { return len(evs.of("d")) == 2 }, "d dies")
	in, err := c.Get(ctxOf(t), "d")
	require.NoError(t, err)
	require.Equal(t, jobs.StateDead, in.State)
	require.NoError(t, c.AddUnique(ctxOf(t), "d", time.Now().Add(time.Hour), nil), "a dead job is replaced")
	in, err = c.Get(ctxOf(t), "d")
	require.NoError(t, err)
	assert.Equal(t, jobs.StatePending, in.State)
}

func TestBadInputIsRefusedBeforeTheEngine(t *testing.T) {
	_, url := startServer(t)
	c := openClient(t, url, "q")
	for _, k := range []string{"", strings.Repeat("k", 257), "\xff"} {
		assert.ErrorIs(t, c.Add(ctxOf(t), k, time.Now(), nil), jobs.ErrInvalidKey, "%q", k)
	}
	assert.ErrorIs(t, c.Add(ctxOf(t), "k", time.Now(), make([]byte, jobs.MaxPayload+1)), jobs.ErrPayloadTooLarge)
	_, err := jobs.Open(ctxOf(t), dial(t, url), jobs.Config{Queue: "a b"})
	assert.ErrorIs(t, err, jobs.ErrInvalidName)
	_, err = c.StartWorker(ctxOf(t), jobs.WorkerConfig{Node: "n", Lease: 1500 * time.Millisecond, Handler: succeed})
	assert.ErrorIs(t, err, jobs.ErrInvalidLease)
}

// TestJobsStartOnTimeNeverEarly checks guarantee 2 on one worker: no
// attempt starts before its due time, and due is the time asked.
func TestJobsStartOnTimeNeverEarly(t *testing.T) {
	_, url := startServer(t)
	c := openClient(t, url, "q")
	var evs events
	startWorker(t, url, "q", "w1", succeed, &evs, jobs.WorkerConfig{})
	dues := map[string]time.Time{}
	base := time.Now().Add(time.Second)
	for i := range 50 {
		k := fmt.Sprintf("job-%d", i)
		dues[k] = time.UnixMilli(base.Add(time.Duration(i*13) * time.Millisecond).UnixMilli())
		require.NoError(t, c.Add(ctxOf(t), k, dues[k], nil))
	}
	eventually(t, 15*time.Second, func() bool { return evs.count(jobs.EventDone) == 50 }, "all done")
	for k, due := range dues {
		st := evs.of(k)[0]
		require.Equal(t, jobs.EventStart, st.Kind)
		assert.Equal(t, due, st.Due, "due is the time asked, to the millisecond")
		assert.False(t, st.At.Before(due), "%s started %v early", k, due.Sub(st.At))
		assert.Less(t, st.At.Sub(due), time.Second, "%s late", k)
	}
}

// TestRetriesFollowTheWaitsThenDead checks the retry rule: after failed
// attempt N, attempt N+1 is due Retry[N-1] later; then dead.
func TestRetriesFollowTheWaitsThenDead(t *testing.T) {
	_, url := startServer(t)
	c := openClient(t, url, "q")
	var evs events
	waits := []time.Duration{100 * time.Millisecond, 300 * time.Millisecond}
	startWorker(t, url, "q", "w1", func(context.Context, jobs.Job) error { return errors.New("boom") }, &evs, jobs.WorkerConfig{Retry: waits})
	require.NoError(t, c.Add(ctxOf(t), "r", time.Now(), nil))
	eventually(t, 10*time.Second, func() bool { return len(evs.of("r")) == 6 }, "three attempts end")
	got := evs.of("r")
	kinds := []jobs.EventKind{}
	for _, ev := range got {
		kinds = append(kinds, ev.Kind)
	}
	assert.Equal(t, []jobs.EventKind{"start", "fail", "start", "fail", "start", "dead"}, kinds)
	for i, w := range waits {
		fail, next := got[2*i+1], got[2*i+2]
		assert.Equal(t, w, fail.Next.Sub(fail.At).Round(time.Millisecond), "the wait after attempt %d", i+1)
		assert.Equal(t, time.UnixMilli(fail.Next.UnixMilli()), next.Due)
		assert.Equal(t, i+2, next.Attempt)
		assert.False(t, next.At.Before(next.Due))
	}
	in, err := c.Get(ctxOf(t), "r")
	require.NoError(t, err)
	assert.Equal(t, jobs.StateDead, in.State)
	assert.Equal(t, 3, in.Attempt)
}

// TestReplacementDuringRunningAttemptStands checks guarantee 3: the end of
// an attempt running when its job is replaced is superseded, and the
// replacement neither is erased nor runs early.
func TestReplacementDuringRunningAttemptStands(t *testing.T) {
	_, url := startServer(t)
	c := openClient(t, url, "q")
	var evs events
	release := make(chan struct{})
	startWorker(t, url, "q", "w1", func(_ context.Context, j jobs.Job) error {
		if string(j.Payload) == "slow" {
			<-release
		}
		return nil
	}, &evs, jobs.WorkerConfig{})
	require.NoError(t, c.Add(ctxOf(t), "k", time.Now(), []byte("slow")))
	eventually(t, 10*time.Second, func() bool { return len(evs.of("k")) == 1 }, "the first attempt starts")
	due := time.UnixMilli(time.Now().Add(1500 * time.Millisecond).UnixMilli())
	require.NoError(t, c.Add(ctxOf(t), "k", due, []byte("fast")))
	close(release)
	eventually(t, 10*time.Second, func() bool { return len(evs.of("k")) == 4 }, "both attempts end")
	got := evs.of("k")
	assert.Equal(t, jobs.EventSuperseded, got[1].Kind)
	assert.Equal(t, jobs.EventStart, got[2].Kind)
	assert.Equal(t, due, got[2].Due)
	assert.False(t, got[2].At.Before(due), "the replacement never runs early")
	assert.Equal(t, jobs.EventDone, got[3].Kind)
}

// TestCancelRacingDueTime cancels jobs just as they come due, while they
// would otherwise retry every 300 ms: after the cancels, no attempt of any
// of them starts (100 ms allowed for a start already landed to be
// reported), and none is left.
func TestCancelRacingDueTime(t *testing.T) {
	_, url := startServer(t)
	c := openClient(t, url, "q")
	var evs events
	wait := 300 * time.Millisecond
	startWorker(t, url, "q", "w1", func(context.Context, jobs.Job) error { return errors.New("again") }, &evs, jobs.WorkerConfig{Retry: []time.Duration{wait, wait, wait, wait}})
	due := time.Now().Add(500 * time.Millisecond)
	const n = 40
	for i := range n {
		require.NoError(t, c.Add(ctxOf(t), fmt.Sprint("c", i), due, nil))
	}
	time.Sleep(time.Until(due))
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			_, err := c.Cancel(ctxOf(t), fmt.Sprint("c", i))
			assert.NoError(t, err)
		})
	}
	wg.Wait()
	settled := time.Now().Add(100 * time.Millisecond)
	time.Sleep(4 * wait)
	for _, ev := range evs.all() {
		if ev.Kind == jobs.EventStart {
			assert.True(t, ev.At.Before(settled), "%s attempt %d started after its cancel", ev.Key, ev.Attempt)
		}
	}
	for i := range n {
		in, err := c.Get(ctxOf(t), fmt.Sprint("c", i))
		require.NoError(t, err)
		assert.Equal(t, jobs.StateUnknown, in.State)
	}
}

// TestOddKeysRoundTrip runs jobs whose keys hold spaces, dots, wildcards,
// non-ASCII and 256 bytes, and gets each back as given.
func TestOddKeysRoundTrip(t *testing.T) {
	_, url := startServer(t)
	c := openClient(t, url, "q")
	var evs events
	startWorker(t, url, "q", "w1", succeed, &evs, jobs.WorkerConfig{})
	keys := []string{"a b", "a.b", "*", ">", "a.*.>", "héllo wörld", "日本", "_5F", "Case", "case", strings.Repeat("é", 128), "-"}
	for _, k := range keys {
		require.NoError(t, c.Add(ctxOf(t), k, time.Now(), nil), "%q", k)
	}
	eventually(t, 10*time.Second, func() bool { return evs.count(jobs.EventDone) == len(keys) }, "all done")
	for _, k := range keys {
		assert.Len(t, evs.of(k), 2, "%q", k)
	}
}

// TestJobsSpreadOverWorkers checks guarantee 4 and exactly-once on a
// healthy fleet of three in-process workers.
func TestJobsSpreadOverWorkers(t *testing.T) {
	_, url := startServer(t)
	c := openClient(t, url, "q")
	var evs events
	ws := []*jobs.Worker{}
	for i := range 3 {
		ws = append(ws, startWorker(t, url, "q", fmt.Sprint("w", i), succeed, &evs, jobs.WorkerConfig{}))
	}
	eventually(t, 10*time.Second, func() bool {
		n := 0
		for _, w := range ws {
			n += w.Held()
		}
		return n == jobs.Partitions
	}, "the partitions are shared out")
	const n = 300
	for i := range n {
		require.NoError(t, c.Add(ctxOf(t), fmt.Sprint("s", i), time.Now().Add(500*time.Millisecond), nil))
	}
	eventually(t, 20*time.Second, func() bool { return evs.count(jobs.EventDone) == n }, "all done")
	per := map[string]int{}
	for _, ev := range evs.all() {
		if ev.Kind == jobs.EventStart {
			per[ev.Node]++
		}
	}
	assert.Equal(t, n, evs.count(jobs.EventStart), "each job starts once")
	for _, w := range ws {
		assert.Greater(t, per[w.Node()], n/10, "%s runs its share", w.Node())
	}
}

// TestStopHandsPendingJobsToLiveWorkersAtOnce checks guarantee 6: the
// pending jobs of a stopped worker start on time elsewhere, with no lease
// wait (the lease here is far longer than the test).
func TestStopHandsPendingJobsToLiveWorkersAtOnce(t *testing.T) {
	_, url := startServer(t)
	c := openClient(t, url, "q")
	var evs events
	cfg := jobs.WorkerConfig{Lease: 30 * time.Second}
	w0 := startWorker(t, url, "q", "w0", succeed, &evs, cfg)
	require.Equal(t, jobs.Partitions, w0.Held())
	due := time.Now().Add(1500 * time.Millisecond)
	for i := range 50 {
		require.NoError(t, c.Add(ctxOf(t), fmt.Sprint("h", i), due, nil))
	}
	eventually(t, 5*time.Second, func() bool { return w0.Pending() == 50 }, "w0 holds every job")
	w1 := startWorker(t, url, "q", "w1", succeed, &evs, cfg)
	eventually(t, 5*time.Second, func() bool { return w1.Held() > 0 }, "w1 takes partitions")
	require.NoError(t, w0.Stop(ctxOf(t)))
	eventually(t, 10*time.Second, func() bool { return evs.count(jobs.EventDone) == 50 }, "all done")
	for _, ev := range evs.all() {
		if ev.Kind == jobs.EventStart {
			assert.Equal(t, "w1", ev.Node)
			assert.Less(t, ev.At.Sub(ev.Due), time.Second, "%s starts within 1 s of its due time", ev.Key)
		}
	}
}

// TestClaimLostDuringTakeoverStartsOnce races two workers' starts of the
// same recorded attempt (both believe they hold its partition): the
// compare-and-set on the record's revision lets exactly one start it.
func TestClaimLostDuringTakeoverStartsOnce(t *testing.T) {
	_, url := startServer(t)
	c := openClient(t, url, "q")
	var evs events
	cfg := jobs.WorkerConfig{Lease: 30 * time.Second}
	a := startWorker(t, url, "q", "a", succeed, &evs, cfg)
	b := startWorker(t, url, "q", "b", succeed, &evs, cfg)
	for i := range 20 {
		k := fmt.Sprint("t", i)
		// Due already: its owner's heap fires it too, a third contender.
		require.NoError(t, c.Add(ctxOf(t), k, time.Now().Add(-time.Second), nil))
		in, err := c.Get(ctxOf(t), k)
		require.NoError(t, err)
		var wg sync.WaitGroup
		wg.Go(func() { a.AttemptAt(k, in.Revision) })
		wg.Go(func() { b.AttemptAt(k, in.Revision) })
		wg.Wait()
	}
	eventually(t, 10*time.Second, func() bool { return evs.count(jobs.EventDone) == 20 }, "all done")
	assert.Equal(t, 20, evs.count(jobs.EventStart), "each job starts once")
	assert.Equal(t, 0, evs.count(jobs.EventSuperseded))
}

// TestAttemptLongerThanLeaseRunsOnce checks guarantee 3 for an attempt
// that outlives several leases: its worker lives, so nobody else starts it.
func TestAttemptLongerThanLeaseRunsOnce(t *testing.T) {
	_, url := startServer(t)
	c := openClient(t, url, "q")
	var evs events
	h := func(ctx context.Context, j jobs.Job) error {
		select {
		case <-time.After(3500 * time.Millisecond):
		case <-ctx.Done():
		}
		return nil
	}
	cfg := jobs.WorkerConfig{Lease: time.Second}
	startWorker(t, url, "q", "a", h, &evs, cfg)
	startWorker(t, url, "q", "b", h, &evs, cfg)
	for i := range 6 {
		require.NoError(t, c.Add(ctxOf(t), fmt.Sprint("l", i), time.Now(), nil))
	}
	eventually(t, 20*time.Second, func() bool { return evs.count(jobs.EventDone) == 6 }, "all done")
	assert.Equal(t, 6, evs.count(jobs.EventStart))
}

// TestQuietFleetSendsNothingPerPendingJob checks guarantee 9: while
// nothing is due or added, the engine's inbound messages over a second do
// not grow with the number of pending jobs.
func TestQuietFleetSendsNothingPerPendingJob(t *testing.T) {
	s, url := startServer(t)
	c := openClient(t, url, "q")
	var evs events
	startWorker(t, url, "q", "w1", succeed, &evs, jobs.WorkerConfig{Lease: 3 * time.Second})
	measure := func() int64 {
		v0, err := s.Varz(nil)
		require.NoError(t, err)
		time.Sleep(3 * time.Second)
		v1, err := s.Varz(nil)
		require.NoError(t, err)
		return v1.InMsgs - v0.InMsgs
	}
	l := c.NewLoader()
	for i := range 2000 {
		require.NoError(t, l.Add(ctxOf(t), fmt.Sprint("q", i), time.Now().Add(time.Hour), nil))
	}
	_, err := l.Wait(ctxOf(t))
	require.NoError(t, err)
	time.Sleep(time.Second)
	quiet := measure()
	assert.Less(t, quiet, int64(50), "2,000 pending jobs: %d messages in 3 s", quiet)
}

// TestBacklogStartsSoonAfterTheFirstWorker checks guarantee 7: 1,000 jobs
// that came due while no worker ran all start within 5 s of the first
// worker's ready.
func TestBacklogStartsSoonAfterTheFirstWorker(t *testing.T) {
	_, url := startServer(t)
	c := openClient(t, url, "q")
	l := c.NewLoader()
	for i := range 1000 {
		require.NoError(t, l.Add(ctxOf(t), fmt.Sprint("b", i), time.Now().Add(-time.Minute), nil))
	}
	_, err := l.Wait(ctxOf(t))
	require.NoError(t, err)
	var evs events
	startWorker(t, url, "q", "w1", succeed, &evs, jobs.WorkerConfig{})
	ready := time.Now()
	eventually(t, 30*time.Second, func() bool { return evs.count(jobs.EventDone) == 1000 }, "the backlog drains")
	for _, ev := range evs.all() {
		if ev.Kind == jobs.EventStart {
			assert.Less(t, ev.At.Sub(ready), 5*time.Second, "%s", ev.Key)
		}
	}
	assert.Equal(t, 1000, evs.count(jobs.EventStart))
}

// TestRunningUnderAnEpochNotYetSeenIsNotStartedAgain checks guarantee 3
// when one worker's view of the leases lags: a record running under the
// epoch of a live worker whose lease this worker has not seen yet (one
// that registered after its last share-out) is that worker's attempt,
// not an abandoned one, and is not started a second time.
func TestRunningUnderAnEpochNotYetSeenIsNotStartedAgain(t *testing.T) {
	_, url := startServer(t)
	c := openClient(t, url, "q")
	var evs events
	h, release := blockingFirst()
	cfg := jobs.WorkerConfig{Lease: 30 * time.Second}
	ws := map[string]*jobs.Worker{
		"a": startWorker(t, url, "q", "a", h, &evs, cfg),
		"b": startWorker(t, url, "q", "b", h, &evs, cfg),
	}
	require.NoError(t, c.Add(ctxOf(t), "k", time.Now(), nil))
	eventually(t, 10*time.Second, func() bool { return len(evs.of("k")) == 1 }, "the attempt starts")
	runner := evs.of("k")[0].Node
	other := ws[map[string]string{"a": "b", "b": "a"}[runner]]
	in, err := c.Get(ctxOf(t), "k")
	require.NoError(t, err)
	require.Equal(t, jobs.StateRunning, in.State)

	other.ForgetLease(runner)
	other.AttemptAt("k", in.Revision)
	close(release)
	eventually(t, 10*time.Second, func() bool { return evs.count(jobs.EventDone) >= 1 }, "the attempt ends")
	assert.Equal(t, 1, evs.count(jobs.EventStart), "the running attempt starts once")
	assert.Equal(t, 0, evs.count(jobs.EventSuperseded))
}

// TestPurgedLeaseHandsRunningAttemptElsewhere checks the other side of the
// epoch rule: a running attempt whose worker's lease is gone (purged, as
// an operator hands a worker's jobs over) is known dead, and the worker
// that holds its partition starts it again with the same attempt number;
// the first run's end is then superseded.
func TestPurgedLeaseHandsRunningAttemptElsewhere(t *testing.T) {
	_, url := startServer(t)
	c := openClient(t, url, "q")
	var evs events
	slow, release := blocking()
	cfg := jobs.WorkerConfig{Lease: 30 * time.Second}
	startWorker(t, url, "q", "b", slow, &evs, cfg)
	require.NoError(t, c.Add(ctxOf(t), "k", time.Now(), nil))
	eventually(t, 10*time.Second, func() bool { return len(evs.of("k")) == 1 }, "the attempt starts on b")
	startWorker(t, url, "q", "a", succeed, &evs, cfg)

	js, err := jetstream.New(dial(t, url))
	require.NoError(t, err)
	nodes, err := js.KeyValue(ctxOf(t), "jobs-q-nodes")
	require.NoError(t, err)
	require.NoError(t, nodes.Purge(ctxOf(t), "b"))
	eventually(t, 10*time.Second, func() bool { return len(evs.of("k")) >= 3 }, "the attempt starts again on a and ends")
	close(release)
	eventually(t, 10*time.Second, func() bool { return len(evs.of("k")) == 4 }, "b's run ends")
	var a []jobs.Event
	for _, ev := range evs.of("k") {
		if ev.Node == "a" {
			a = append(a, ev)
		} else if ev.Kind != jobs.EventStart {
			assert.Equal(t, jobs.EventSuperseded, ev.Kind, "b's end records nothing")
		}
	}
	require.Len(t, a, 2)
	assert.Equal(t, jobs.EventStart, a[0].Kind)
	assert.Equal(t, 1, a[0].Attempt, "the same attempt number")
	assert.Equal(t, jobs.EventDone, a[1].Kind)
}

// TestRunningUnderAnEpochKnownOnlyByReadStartsAgainWhenItDies checks that
// an epoch a worker found alive only by reading its lease (its watch of the
// leases never delivered it) is still watched for its end: when that lease
// goes, the attempt running under it starts again.
func TestRunningUnderAnEpochKnownOnlyByReadStartsAgainWhenItDies(t *testing.T) {
	_, url := startServer(t)
	c := openClient(t, url, "q")
	var evs events
	slow, release := blocking()
	cfg := jobs.WorkerConfig{Lease: 30 * time.Second}
	b := startWorker(t, url, "q", "b", slow, &evs, cfg)
	a := startWorker(t, url, "q", "a", succeed, &evs, cfg)
	eventually(t, 10*time.Second, func() bool { return a.Held()+b.Held() == jobs.Partitions }, "the partitions are shared out")
	// A key of b's partitions, so that a meets its record only once its
	// view has lost b.
	var key string
	for i := 0; key == ""; i++ {
		require.NoError(t, c.Add(ctxOf(t), fmt.Sprint("k", i), time.Now(), nil))
		eventually(t, 10*time.Second, func() bool { return len(evs.of(fmt.Sprint("k", i))) > 0 }, "k%d starts", i)
		if evs.of(fmt.Sprint("k", i))[0].Node == "b" {
			key = fmt.Sprint("k", i)
		}
	}
	a.ForgetLease("b") // a now holds every partition and reads b's lease to learn the epoch is alive
	eventually(t, 10*time.Second, func() bool { return a.Held() == jobs.Partitions }, "a holds every partition")

	js, err := jetstream.New(dial(t, url))
	require.NoError(t, err)
	nodes, err := js.KeyValue(ctxOf(t), "jobs-q-nodes")
	require.NoError(t, err)
	require.NoError(t, nodes.Purge(ctxOf(t), "b"))
	eventually(t, 10*time.Second, func() bool {
		for _, ev := range evs.of(key) {
			if ev.Node == "a" && ev.Kind == jobs.EventDone {
				return true
			}
		}
		return false
	}, "%s starts again on a once b's lease is gone", key)
	close(release)
	eventually(t, 10*time.Second, func() bool { return len(evs.of(key)) == 4 }, "b's attempt ends too")
	assert.Equal(t, jobs.EventSuperseded, evs.of(key)[3].Kind, "b's end records nothing")
}

// TestWorkerKeepsTheValuesOfNearJobsOnly checks what a worker keeps of a
// pending job beside its entry: the value of a job due within ten
// seconds, until its fire, and nothing for a job due later.
func TestWorkerKeepsTheValuesOfNearJobsOnly(t *testing.T) {
	_, url := startServer(t)
	c := openClient(t, url, "keep")
	var evs events
	got := make(chan []byte, 1)
	w := startWorker(t, url, "keep", "w1", func(_ context.Context, j jobs.Job) error { got <- j.Payload; return nil }, &evs, jobs.WorkerConfig{})
	ctx := ctxOf(t)
	payload := []byte("a payload of some bytes")
	require.NoError(t, c.Add(ctx, "far", time.Now().Add(time.Hour), payload))
	require.NoError(t, c.Add(ctx, "near", time.Now().Add(time.Minute/10), payload))
	eventually(t, 10*time.Second, func() bool { return w.Pending() == 2 }, "both jobs seen")
	n, size := w.Kept()
	assert.Equal(t, 1, n, "only the near job's value is kept")
	assert.GreaterOrEqual(t, size, len(payload))
	ok, err := c.Cancel(ctx, "near")
	require.NoError(t, err)
	require.True(t, ok)
	eventually(t, 10*time.Second, func() bool { n, _ := w.Kept(); return n == 0 && w.Pending() == 1 }, "a cancelled job keeps nothing")
	require.NoError(t, c.Add(ctx, "soon", time.Now().Add(200*time.Millisecond), payload))
	eventually(t, 10*time.Second, func() bool { return evs.count(jobs.EventDone) == 1 }, "the near job done")
	n, size = w.Kept()
	assert.Zero(t, n, "a fire takes the value")
	assert.Zero(t, size)
	assert.Equal(t, string(payload), string(<-got), "the handler gets the kept payload")
}

// TestOwnAbandonedStartIsStartedAgain checks that a record running under a
// worker's own live epoch, with no attempt of it running there (a start
// whose answer never reached the worker, or an end that could not be
// written), is started again by that worker rather than left running
// while the worker lives.
func TestOwnAbandonedStartIsStartedAgain(t *testing.T) {
	_, url := startServer(t)
	c := openClient(t, url, "q")
	var evs events
	w := startWorker(t, url, "q", "a", succeed, &evs, jobs.WorkerConfig{Lease: 30 * time.Second})
	require.NoError(t, c.Add(ctxOf(t), "k", time.Now().Add(time.Hour), []byte("p")))
	eventually(t, 10*time.Second, func() bool { return w.Pending() == 1 }, "the worker arms the job")
	in, err := c.Get(ctxOf(t), "k")
	require.NoError(t, err)

	// What a start leaves when its write lands and its answer is lost.
	js, err := jetstream.New(dial(t, url))
	require.NoError(t, err)
	kv, err := js.KeyValue(ctxOf(t), "jobs-q")
	require.NoError(t, err)
	now := time.Now().UnixMilli()
	val := fmt.Sprintf(`{"state":"running","due":%d,"attempt":1,"node":"a","epoch":%q,"started":%d,"run":999999}`+"\np", now, w.Epoch(), now)
	_, err = kv.Update(ctxOf(t), jobs.KVKey("k"), []byte(val), in.Revision)
	require.NoError(t, err)

	eventually(t, 10*time.Second, func() bool { return evs.count(jobs.EventDone) == 1 }, "the job is started again and done")
	assert.Equal(t, 1, evs.count(jobs.EventStart))
	got := evs.of("k")
	require.NotEmpty(t, got)
	assert.Equal(t, 1, got[0].Attempt, "with the same attempt number")
}
