package presence_test

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-schedule/schedule/presence"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stormDevices is the size of the bursts below: hundreds of times the
// writes a node keeps in flight, enough requests that, all sent at once on
// the node's connection, they would hold a refresh back for longer than
// the one-second lease.
const stormDevices = 30_000

// lostMsg is what a node logs when it lost its lease.
const lostMsg = "lease lost: closing connections, recording nothing for them"

// warnings counts the warnings a node logs, by message.
type warnings struct {
	mu  sync.Mutex
	got map[string]int
}

func (w *warnings) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }
func (w *warnings) WithAttrs([]slog.Attr) slog.Handler           { return w }
func (w *warnings) WithGroup(string) slog.Handler                { return w }
func (w *warnings) Handle(_ context.Context, r slog.Record) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.got[r.Message]++
	return nil
}

func (w *warnings) all() map[string]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return maps.Clone(w.got)
}

// openLoggedNode opens node id like openNode and counts its warnings.
func openLoggedNode(t *testing.T, url, id string) (*presence.Node, *warnings) {
	t.Helper()
	w := &warnings{got: make(map[string]int)}
	n, err := presence.Open(ctx(t), dial(t, url), presence.Config{Node: id, Lease: testLease, Logger: slog.New(w)})
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = n.Close(context.Background()) })
	return n, w
}

// connectAll connects devices named prefix-0… on n, parallel at once,
// and returns how many failed.
func connectAll(t *testing.T, n *presence.Node, prefix string, count, parallel int, e *ends) int64 {
	t.Helper()
	c, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	var failed atomic.Int64
	sem := make(chan struct{}, parallel)
	for i := range count {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			dev := fmt.Sprintf("%s-%d", prefix, i)
			if _, err := n.Connect(c, dev, e.fn(dev)); err != nil {
				failed.Add(1)
			}
		})
	}
	wg.Wait()
	return failed.Load()
}

func TestConnectStormKeepsTheLease(t *testing.T) {
	if testing.Short() {
		t.Skip("a burst of 30,000 connects")
	}
	url := startServer(t)
	n, w := openLoggedNode(t, url, "gw1")
	epoch := n.Epoch()
	e := newEnds()

	failed := connectAll(t, n, "storm", stormDevices, stormDevices, e)

	assert.Zero(t, failed, "every connect recorded")
	assert.Empty(t, w.all(), "no refresh unconfirmed for a lease, no lease lost")
	assert.Equal(t, epoch, n.Epoch(), "the lease was never lost")
	assert.Equal(t, stormDevices, n.Connections())
	e.mu.Lock()
	assert.Zero(t, len(e.got), "no connection ended by the node")
	e.mu.Unlock()
}

func TestNodeThatLostItsLeaseWithManyDevicesReRegistersAndReapsEachOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("30,000 devices")
	}
	url := startServer(t)
	n, w := openLoggedNode(t, url, "gw1")
	t.Cleanup(func() { t.Logf("warnings: %v", w.all()) })
	e := newEnds()
	require.Zero(t, connectAll(t, n, "dev", stormDevices, 16, e)) // no storm: this test is about the recovery
	h := watchAll(t, url)                                         // replays every online
	oldEpoch := n.Epoch()

	// The lease goes, as when it expires: the node's next refresh is
	// refused on its expected revision.
	nodes, err := jsOf(t, url).KeyValue(ctx(t), "presence-nodes")
	require.NoError(t, err)
	require.NoError(t, nodes.Delete(ctx(t), "gw1"))

	eventually(t, time.Minute, func() bool { return n.Epoch() != oldEpoch }, "registered again")
	_, err = n.Connect(ctx(t), "after", nil)
	require.NoError(t, err, "the node serves devices again")
	h.caughtUp(t, "after")

	eventually(t, time.Minute, func() bool {
		for i := range stormDevices {
			if len(h.of(fmt.Sprintf("dev-%d", i))) < 2 {
				return false
			}
		}
		return true
	}, "every device of the lost epoch recorded")
	time.Sleep(2 * testLease) // the second pass, one lease after the first; a duplicate would come now
	lostOnce := 0
	for i := range stormDevices {
		dev := fmt.Sprintf("dev-%d", i)
		recs := h.of(dev)
		if assert.Len(t, recs, 2, dev) && recs[1].Reason == presence.ReasonNodeLost && recs[1].Epoch == oldEpoch {
			lostOnce++
		}
		if got := e.of(dev); assert.Len(t, got, 1, dev) {
			assert.ErrorIs(t, got[0], presence.ErrLeaseLost)
		}
	}
	assert.Equal(t, stormDevices, lostOnce, "each device recorded node_lost once, under the lost epoch")
	assert.Equal(t, 1, n.Connections(), "the connection made after the loss stays")
	assert.Equal(t, 1, w.all()[lostMsg], "the lease was lost once, by the test")
}
