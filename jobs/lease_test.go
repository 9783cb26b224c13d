package jobs_test

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-schedule/schedule/jobs"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRefreshWithoutAnswerIsUnclear checks that a refresh no answer
// reached (here, its context ended before any request went out) is not
// taken for a lost lease, and that the next refresh that is answered finds
// the lease held. TestUnansweredRefreshesKeepTheEpoch checks what the lease
// loop does with it.
func TestRefreshWithoutAnswerIsUnclear(t *testing.T) {
	_, url := startServer(t)
	var evs events
	w := startWorker(t, url, "q", "a", succeed, &evs, jobs.WorkerConfig{Lease: 30 * time.Second})
	ended, cancel := context.WithCancel(context.Background())
	cancel()

	assert.Equal(t, "unclear", w.Refresh(ended))
	assert.Equal(t, "held", w.Refresh(ctxOf(t)))
}

// TestRefreshFindsAPurgedLeaseLost checks the other side: a lease the
// engine no longer holds (purged, as an operator hands a worker's jobs
// over) is lost.
func TestRefreshFindsAPurgedLeaseLost(t *testing.T) {
	_, url := startServer(t)
	var evs events
	w := startWorker(t, url, "q", "a", succeed, &evs, jobs.WorkerConfig{Lease: 30 * time.Second})
	js, err := jetstream.New(dial(t, url))
	require.NoError(t, err)
	nodes, err := js.KeyValue(ctxOf(t), "jobs-q-nodes")
	require.NoError(t, err)
	require.NoError(t, nodes.Purge(ctxOf(t), "a"))

	assert.Equal(t, "lost", w.Refresh(ctxOf(t)))
}

// TestAttemptRunningUnderTheWorkersEarlierEpochDoesNotStartAgain checks
// that a worker which registered again under a new epoch while one of its
// attempts ran (its lease had run out) does not take that attempt for an
// abandoned one: a fire of the job finds it running here and leaves it,
// and the attempt's end is recorded.
func TestAttemptRunningUnderTheWorkersEarlierEpochDoesNotStartAgain(t *testing.T) {
	_, url := startServer(t)
	c := openClient(t, url, "q")
	var evs events
	// Only the first run waits: a second one must not hold up the
	// synchronous AttemptAt below.
	h, release := blockingFirst()
	w := startWorker(t, url, "q", "a", h, &evs, jobs.WorkerConfig{Lease: 30 * time.Second})
	require.NoError(t, c.Add(ctxOf(t), "k", time.Now(), nil))
	eventually(t, 10*time.Second, func() bool { return len(evs.of("k")) == 1 }, "the attempt starts")
	in, err := c.Get(ctxOf(t), "k")
	require.NoError(t, err)
	require.Equal(t, jobs.StateRunning, in.State)
	epoch := w.Epoch()
	require.NoError(t, w.Reregister(ctxOf(t)))
	require.NotEqual(t, epoch, w.Epoch(), "a new epoch")
	eventually(t, 10*time.Second, func() bool { return w.LiveEpoch("a") == w.Epoch() }, "the worker sees its new lease")

	w.AttemptAt("k", in.Revision)
	close(release)
	eventually(t, 10*time.Second, func() bool { return evs.count(jobs.EventDone) >= 1 }, "the attempt ends")
	assert.Equal(t, 1, evs.count(jobs.EventStart), "the running attempt starts once")
	assert.Equal(t, 0, evs.count(jobs.EventSuperseded), "its end is recorded")
}

// TestWorkerWhoseLeaseWentUnconfirmedStartsNothing checks the fence of a
// worker whose refreshes went unanswered for a whole lease: it starts no
// attempt, since the others may be starting its jobs again, until a write
// of its lease is confirmed.
func TestWorkerWhoseLeaseWentUnconfirmedStartsNothing(t *testing.T) {
	_, url := startServer(t)
	c := openClient(t, url, "q")
	var evs events
	w := startWorker(t, url, "q", "a", succeed, &evs, jobs.WorkerConfig{Lease: 30 * time.Second})
	w.LapseLease()
	require.NoError(t, c.Add(ctxOf(t), "k", time.Now().Add(time.Hour), nil))
	in, err := c.Get(ctxOf(t), "k")
	require.NoError(t, err)
	require.NoError(t, c.Add(ctxOf(t), "k", time.Now(), nil)) // due now, a revision on
	in, err = c.Get(ctxOf(t), "k")
	require.NoError(t, err)

	w.AttemptAt("k", in.Revision)
	assert.Empty(t, evs.of("k"), "no start while the lease is unconfirmed")
	require.Equal(t, "held", w.Refresh(ctxOf(t)))
	eventually(t, 10*time.Second, func() bool { return evs.count(jobs.EventDone) == 1 }, "the job runs once the lease is confirmed")
}

// TestUnansweredRefreshesKeepTheEpoch runs a worker whose answers from the
// engine come later than a refresh waits (a third of the lease): its lease
// loop finds its refreshes unanswered, and keeps its epoch rather than
// register again under a new one.
func TestUnansweredRefreshesKeepTheEpoch(t *testing.T) {
	_, url := startServer(t)
	openClient(t, url, "q") // the buckets
	var logs lockedBuffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	var lag atomic.Int64 // none while the worker starts: it asks for 32 watches
	c, err := jobs.Open(ctxOf(t), dial(t, lagProxyOf(t, url, &lag)), jobs.Config{Queue: "q"})
	require.NoError(t, err)
	w, err := c.StartWorker(ctxOf(t), jobs.WorkerConfig{Node: "a", Lease: time.Second, Handler: succeed, Logger: log})
	require.NoError(t, err)
	t.Cleanup(func() {
		lag.Store(0)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = w.Stop(ctx)
	})
	epoch := w.Epoch()
	lag.Store(int64(700 * time.Millisecond)) // longer than a refresh waits, a third of the lease

	eventually(t, 20*time.Second, func() bool { return bytes.Contains(logs.Bytes(), []byte("lease refresh unanswered")) }, "a refresh goes unanswered")
	assert.Equal(t, epoch, w.Epoch(), "the epoch stays")
	assert.NotContains(t, logs.String(), "registering again")
}

// lockedBuffer is a bytes.Buffer safe for a logger and a test at once.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) Bytes() []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return bytes.Clone(l.b.Bytes())
}

func (l *lockedBuffer) String() string { return string(l.Bytes()) }
