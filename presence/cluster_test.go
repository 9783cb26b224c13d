package presence_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-schedule/schedule/presence"
	"github.com/go-schedule/schedule/presence/embedded"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// openWithin bounds each node's Open in the test below. A node that waits
// for a stream another node is still creating was seen to hang about 13 s
// with one deadline for the whole request; with short per-try deadlines
// the three nodes are ready within a few seconds, so 10 s fails the old
// behaviour and leaves a loaded machine a wide margin.
const openWithin = 10 * time.Second

// Three nodes started at once on a fresh three-server cluster, each on a
// server of its own and each creating the buckets with three replicas:
// all three open, on the same buckets.
func TestNodesStartedAtOnceOnAFreshClusterAllBecomeReady(t *testing.T) {
	servers, err := embedded.StartCluster("presence", 3, t.TempDir())
	require.NoError(t, err)
	for _, s := range servers {
		t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	}
	nodes := make([]*presence.Node, len(servers))
	errs := make([]error, len(servers))
	took := make([]time.Duration, len(servers))
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, s := range servers {
		nc := dial(t, s.ClientURL())
		wg.Go(func() {
			<-start
			c, cancel := context.WithTimeout(context.Background(), openWithin)
			defer cancel()
			began := time.Now()
			nodes[i], errs[i] = presence.Open(c, nc, presence.Config{Node: fmt.Sprintf("gw%d", i+1), Lease: testLease, Replicas: 3})
			took[i] = time.Since(began)
		})
	}
	close(start)
	wg.Wait()
	for i, n := range nodes {
		if n != nil {
			t.Cleanup(func() { _, _ = n.Close(context.Background()) })
		}
		require.NoError(t, errs[i], "node gw%d did not open within %v", i+1, openWithin)
	}
	t.Logf("the three nodes opened in %v", took)

	// One set of buckets: a device recorded by each node is seen by the others.
	for i, n := range nodes {
		_, err := n.Connect(ctx(t), fmt.Sprintf("dev%d", i), nil)
		require.NoError(t, err)
	}
	for i := range nodes {
		for j, other := range nodes {
			r, err := other.Lookup(ctx(t), fmt.Sprintf("dev%d", i))
			require.NoError(t, err, "gw%d looks up dev%d", j+1, i)
			assert.Equal(t, fmt.Sprintf("gw%d", i+1), r.Node)
		}
	}
}
