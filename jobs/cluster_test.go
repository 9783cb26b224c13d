package jobs_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-schedule/schedule/jobs"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rotate returns urls starting at the i-th.
func rotate(urls []string, i int) []string {
	return append(append([]string(nil), urls[i:]...), urls[:i]...)
}

// TestThreeWorkersStartAtOnceOnFreshR3 starts three workers at the same
// moment on a fresh three-server cluster, each creating the replicated
// buckets: all become ready, and every job runs once.
func TestThreeWorkersStartAtOnceOnFreshR3(t *testing.T) {
	urls := startCluster(t)
	var evs events
	ws := make([]*jobs.Worker, 3)
	errs := make([]error, 3)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range 3 {
		nc := dialAll(t, rotate(urls, i))
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			c, err := jobs.Open(ctx, nc, jobs.Config{Replicas: 3})
			if err != nil {
				errs[i] = err
				return
			}
			ws[i], errs[i] = c.StartWorker(ctx, jobs.WorkerConfig{Node: fmt.Sprint("w", i), Lease: 2 * time.Second, Handler: succeed, OnEvent: evs.add})
		})
	}
	wg.Wait()
	for i, w := range ws {
		require.NoError(t, errs[i], "worker %d", i)
		t.Cleanup(func() {
			c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = w.Stop(c)
		})
	}
	t.Logf("three workers ready in %v", time.Since(start))
	c, err := jobs.Open(ctxOf(t), dialAll(t, urls), jobs.Config{Replicas: 3})
	require.NoError(t, err)
	for i := range 60 {
		require.NoError(t, c.Add(ctxOf(t), fmt.Sprint("r", i), time.Now().Add(time.Second), nil))
	}
	eventually(t, 30*time.Second, func() bool { return evs.count(jobs.EventDone) == 60 }, "all done")
	assert.Equal(t, 60, evs.count(jobs.EventStart), "each job starts once")
}

// TestR3ServerLossLosesNoJob checks guarantee 8: with one server of three
// shut down while jobs come due, every job still runs, and those due
// during the failover start within 10 s of their due time.
func TestR3ServerLossLosesNoJob(t *testing.T) {
	servers, urls := startClusterServers(t)
	var evs events
	for i := range 3 {
		c, err := jobs.Open(ctxOf(t), dialAll(t, rotate(urls, i)), jobs.Config{Replicas: 3})
		require.NoError(t, err)
		w, err := c.StartWorker(ctxOf(t), jobs.WorkerConfig{Node: fmt.Sprint("w", i), Lease: 2 * time.Second, Handler: succeed, OnEvent: evs.add})
		require.NoError(t, err)
		t.Cleanup(func() {
			c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = w.Stop(c)
		})
	}
	c, err := jobs.Open(ctxOf(t), dialAll(t, rotate(urls, 1)), jobs.Config{Replicas: 3})
	require.NoError(t, err)
	const n = 150
	base := time.Now().Add(time.Second)
	for i := range n {
		require.NoError(t, c.Add(ctxOf(t), fmt.Sprint("f", i), base.Add(time.Duration(i)*20*time.Millisecond), nil))
	}
	time.Sleep(time.Until(base.Add(time.Second)))
	servers[0].Shutdown()
	eventually(t, 60*time.Second, func() bool {
		done := map[string]bool{}
		for _, ev := range evs.all() {
			if ev.Kind == jobs.EventDone {
				done[ev.Key] = true
			}
		}
		return len(done) == n
	}, "every job done")
	for _, ev := range evs.all() {
		if ev.Kind == jobs.EventStart {
			assert.Less(t, ev.At.Sub(ev.Due), 10*time.Second, "%s", ev.Key)
		}
	}
}

// TestLeaseReadOnR3IsTheLeaders checks the read that settles an epoch a
// worker has not seen, from a client on each server of an R3 cluster: it
// finds a live worker's lease with its epoch, and none once the worker
// has stopped and removed it.
func TestLeaseReadOnR3IsTheLeaders(t *testing.T) {
	urls := startCluster(t)
	clients := make([]*jobs.Client, len(urls))
	for i, u := range urls {
		c, err := jobs.Open(ctxOf(t), dial(t, u), jobs.Config{Replicas: 3})
		require.NoError(t, err)
		clients[i] = c
	}
	w, err := clients[0].StartWorker(ctxOf(t), jobs.WorkerConfig{Node: "a", Lease: 2 * time.Second, Handler: succeed})
	require.NoError(t, err)
	for i, c := range clients {
		epoch, ok, err := c.LeaseOf(ctxOf(t), "a")
		require.NoError(t, err, "server %d", i)
		assert.True(t, ok, "server %d", i)
		assert.Equal(t, w.Epoch(), epoch, "server %d", i)
		_, ok, err = c.LeaseOf(ctxOf(t), "nobody")
		require.NoError(t, err, "server %d", i)
		assert.False(t, ok, "server %d: a node that never registered", i)
	}
	require.NoError(t, w.Stop(ctxOf(t)))
	for i, c := range clients {
		_, ok, err := c.LeaseOf(ctxOf(t), "a")
		require.NoError(t, err, "server %d", i)
		assert.False(t, ok, "server %d: the lease is removed at Stop", i)
	}
}

// TestReplacementAfterWatchServerLossReachesTheWorker checks that a
// worker's partition watch outlives the loss of the server its consumer
// lives on: after that server is shut down, a job replaced to be due at
// once (an update that only the partition's watch brings to the worker)
// starts within 10 s of the replacement. A KV watch stayed silent about
// 20 s there.
func TestReplacementAfterWatchServerLossReachesTheWorker(t *testing.T) {
	servers, urls := startClusterServers(t)
	var evs events
	c, err := jobs.Open(ctxOf(t), dialAll(t, urls), jobs.Config{Replicas: 3})
	require.NoError(t, err)
	w, err := c.StartWorker(ctxOf(t), jobs.WorkerConfig{Node: "a", Lease: 2 * time.Second, Handler: succeed, OnEvent: evs.add})
	require.NoError(t, err)
	t.Cleanup(func() {
		c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = w.Stop(c)
	})
	require.NoError(t, c.Add(ctxOf(t), "k", time.Now().Add(time.Hour), nil))
	eventually(t, 10*time.Second, func() bool { return w.Pending() == 1 }, "the worker arms the job")

	// The server that hosts the consumer of k's partition.
	filter := "$KV.jobs-" + jobs.DefaultQueue + "." + strings.SplitN(jobs.KVKey("k"), ".", 2)[0] + ".>"
	host := -1
	for i, s := range servers {
		jsz, err := s.Jsz(&server.JSzOptions{Accounts: true, Streams: true, Consumer: true, Config: true})
		require.NoError(t, err)
		for _, a := range jsz.AccountDetails {
			for _, st := range a.Streams {
				for _, ci := range st.Consumer {
					if ci != nil && ci.Config != nil && (ci.Config.FilterSubject == filter || slices.Contains(ci.Config.FilterSubjects, filter)) {
						if ci.Cluster == nil || ci.Cluster.Leader == "" || ci.Cluster.Leader == s.Name() {
							host = i
						}
					}
				}
			}
		}
	}
	require.NotEqual(t, -1, host, "a consumer with filter %s", filter)
	servers[host].Shutdown()

	// The replacement, once the stream has a leader again.
	var replaced time.Time
	eventually(t, 20*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		replaced = time.Now()
		return c.Add(ctx, "k", replaced, nil) == nil
	}, "the replacement lands")
	eventually(t, 30*time.Second, func() bool { return evs.count(jobs.EventStart) == 1 }, "the replaced job starts")
	started := evs.all()[0].At
	assert.Less(t, started.Sub(replaced), 10*time.Second, "the replaced job starts soon after the replacement")
}
