package jobs_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-schedule/schedule/jobs"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRefreshWithoutAnswerLeavesTheLeaseAndItsEpoch checks that a refresh
// no answer reached (here, its context ended before any request went out)
// is not taken for a lost lease: the worker keeps its epoch, and the next
// refresh that is answered finds the lease held.
func TestRefreshWithoutAnswerLeavesTheLeaseAndItsEpoch(t *testing.T) {
	_, url := startServer(t)
	var evs events
	w := startWorker(t, url, "q", "a", succeed, &evs, jobs.WorkerConfig{Lease: 30 * time.Second})
	epoch := w.Epoch()
	ended, cancel := context.WithCancel(context.Background())
	cancel()

	assert.Equal(t, "unclear", w.Refresh(ended))
	assert.Equal(t, epoch, w.Epoch(), "the epoch stays")
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
	slow, release := blocking()
	w := startWorker(t, url, "q", "a", slow, &evs, jobs.WorkerConfig{Lease: 30 * time.Second})
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
