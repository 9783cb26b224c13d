package presence_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/go-schedule/schedule/presence"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestOpenRejectsBadConfig(t *testing.T) {
	nc := dial(t, startServer(t))
	for _, c := range []struct {
		cfg  presence.Config
		want error
	}{
		{presence.Config{Node: ""}, presence.ErrInvalidNodeID},
		{presence.Config{Node: "a.b"}, presence.ErrInvalidNodeID},
		{presence.Config{Node: "a", Lease: 500 * time.Millisecond}, presence.ErrInvalidLease},
		{presence.Config{Node: "a", Lease: 1500 * time.Millisecond}, presence.ErrInvalidLease},
		{presence.Config{Node: "a", Replicas: 6}, presence.ErrInvalidReplicas},
		{presence.Config{Node: "a", Replicas: -1}, presence.ErrInvalidReplicas},
	} {
		_, err := presence.Open(ctx(t), nc, c.cfg)
		assert.ErrorIs(t, err, c.want, "%+v", c.cfg)
	}
	_, err := presence.Open(ctx(t), nil, presence.Config{Node: "a"})
	assert.ErrorIs(t, err, presence.ErrNilConn)
}

func TestConnectRejectsBadDeviceIDs(t *testing.T) {
	n := openNode(t, startServer(t), "gw1")
	for _, id := range []string{"", "a b", string(make([]byte, 129)), "tab\t"} {
		_, err := n.Connect(ctx(t), id, nil)
		assert.ErrorIs(t, err, presence.ErrInvalidDeviceID, "%q", id)
	}
}

func TestOddDeviceIDsAreRecordedAndLookedUpAsTheyAre(t *testing.T) {
	url := startServer(t)
	n := openNode(t, url, "gw1")
	h := watchAll(t, url)
	for _, id := range oddIDs {
		_, err := n.Connect(ctx(t), id, nil)
		require.NoError(t, err, id)
		r, err := n.Lookup(ctx(t), id)
		require.NoError(t, err)
		assert.Equal(t, id, r.Device)
		assert.Equal(t, presence.Online, r.State)
		assert.Equal(t, "gw1", r.Node)
	}
	eventually(t, 5*time.Second, func() bool { return len(h.of(oddIDs[len(oddIDs)-1])) == 1 }, "watch sees the last")
	for _, id := range oddIDs {
		assert.Len(t, h.of(id), 1, id)
	}
}

func TestOfflineIsRecordedOnceWithItsReason(t *testing.T) {
	n := openNode(t, startServer(t), "gw1")
	c, err := n.Connect(ctx(t), "dev", nil)
	require.NoError(t, err)
	require.NoError(t, c.Offline(ctx(t), presence.ReasonTimeout))
	r, err := n.Lookup(ctx(t), "dev")
	require.NoError(t, err)
	assert.Equal(t, presence.Offline, r.State)
	assert.Equal(t, presence.ReasonTimeout, r.Reason)
	assert.Greater(t, r.Rev, c.Revision())

	assert.ErrorIs(t, c.Offline(ctx(t), presence.ReasonClosed), presence.ErrAlreadyOffline, "a second offline records nothing")
	again, err := n.Lookup(ctx(t), "dev")
	require.NoError(t, err)
	assert.Equal(t, r.Rev, again.Rev)
	assert.ErrorIs(t, c.Offline(ctx(t), presence.ReasonShutdown), presence.ErrInvalidReason)
}

func TestLookupOfUnknownDeviceIsErrNotFound(t *testing.T) {
	n := openNode(t, startServer(t), "gw1")
	_, err := n.Lookup(ctx(t), "nobody")
	assert.ErrorIs(t, err, presence.ErrNotFound)
}

func TestMoveToAnotherNodeEndsTheOldConnectionAndItsOfflineRecordsNothing(t *testing.T) {
	url := startServer(t)
	a, b := openNode(t, url, "gwA"), openNode(t, url, "gwB")
	h := watchAll(t, url)
	e := newEnds()
	old, err := a.Connect(ctx(t), "dev", e.fn("old"))
	require.NoError(t, err)
	_, err = b.Connect(ctx(t), "dev", e.fn("new"))
	require.NoError(t, err)

	eventually(t, 3*time.Second, func() bool { return len(e.of("old")) == 1 }, "the old connection is ended")
	assert.ErrorIs(t, e.of("old")[0], presence.ErrSuperseded)
	assert.ErrorIs(t, old.Offline(ctx(t), presence.ReasonClosed), presence.ErrSuperseded)

	r, err := a.Lookup(ctx(t), "dev")
	require.NoError(t, err)
	assert.Equal(t, presence.Online, r.State)
	assert.Equal(t, "gwB", r.Node)
	eventually(t, 3*time.Second, func() bool {
		recs := h.of("dev")
		return len(recs) > 0 && recs[len(recs)-1].Rev == r.Rev
	}, "the watch reaches the record at gwB")
	time.Sleep(testLease) // anything recorded after it would show now
	for _, rec := range h.of("dev") {
		assert.Equal(t, presence.Online, rec.State, "no offline: %+v", h.of("dev"))
	}
	assert.Equal(t, r.Rev, h.of("dev")[len(h.of("dev"))-1].Rev)
	assert.Empty(t, e.of("new"))
}

func TestReconnectToTheSameNodeEndsTheOldConnection(t *testing.T) {
	n := openNode(t, startServer(t), "gw1")
	e := newEnds()
	old, err := n.Connect(ctx(t), "dev", e.fn("old"))
	require.NoError(t, err)
	_, err = n.Connect(ctx(t), "dev", e.fn("new"))
	require.NoError(t, err)
	assert.Equal(t, []error{presence.ErrSuperseded}, e.of("old"))
	assert.ErrorIs(t, old.Offline(ctx(t), presence.ReasonTimeout), presence.ErrSuperseded)
	r, err := n.Lookup(ctx(t), "dev")
	require.NoError(t, err)
	assert.Equal(t, presence.Online, r.State)
	assert.Equal(t, 1, n.Connections())
}

// A device reconnects at node B while its old connection at node A times
// out: whatever the order, the last record is online at B, and no offline
// comes after the online at B.
func TestTimeoutRacingReconnectElsewhereNeverOverridesTheNewerOnline(t *testing.T) {
	url := startServer(t)
	a, b := openNode(t, url, "gwA"), openNode(t, url, "gwB")
	h := watchAll(t, url)
	const devices = 50
	olds := make([]*presence.Conn, devices)
	for i := range olds {
		var err error
		olds[i], err = a.Connect(ctx(t), devName(i), nil)
		require.NoError(t, err)
	}
	var wg sync.WaitGroup
	for i := range devices {
		wg.Go(func() { _ = olds[i].Offline(ctx(t), presence.ReasonTimeout) })
		wg.Go(func() {
			_, err := b.Connect(ctx(t), devName(i), nil)
			assert.NoError(t, err)
		})
	}
	wg.Wait()
	for i := range devices {
		r, err := b.Lookup(ctx(t), devName(i))
		require.NoError(t, err)
		assert.Equal(t, presence.Online, r.State, devName(i))
		assert.Equal(t, "gwB", r.Node)
		eventually(t, 3*time.Second, func() bool {
			recs := h.of(devName(i))
			return len(recs) > 0 && recs[len(recs)-1].Rev == r.Rev
		}, "the watch reaches the last record")
		assertNoStaleOffline(t, h.of(devName(i)))
	}
}

// assertNoStaleOffline checks that no offline follows an online of
// another connection.
func assertNoStaleOffline(t *testing.T, recs []presence.Record) {
	t.Helper()
	for i := 1; i < len(recs); i++ {
		prev, cur := recs[i-1], recs[i]
		if cur.State == presence.Offline && prev.State == presence.Online {
			assert.True(t, cur.Node == prev.Node && cur.Epoch == prev.Epoch && cur.Conn == prev.Conn,
				"offline %+v after the online of another connection %+v", cur, prev)
		}
		assert.Greater(t, cur.Rev, prev.Rev)
	}
}

func devName(i int) string { return "dev." + string(rune('a'+i%26)) + "/" + itoa(i) }

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	s := ""
	for ; i > 0; i /= 10 {
		s = string(rune('0'+i%10)) + s
	}
	return s
}

func TestCloseRecordsShutdownForEveryDeviceAndEndsThem(t *testing.T) {
	url := startServer(t)
	n, err := presence.Open(ctx(t), dial(t, url), presence.Config{Node: "gw1", Lease: testLease})
	require.NoError(t, err)
	e := newEnds()
	for i := range 10 {
		_, err := n.Connect(ctx(t), devName(i), e.fn(devName(i)))
		require.NoError(t, err)
	}
	recorded, err := n.Close(ctx(t))
	require.NoError(t, err)
	assert.Equal(t, 10, recorded)
	for i := range 10 {
		assert.Equal(t, []error{presence.ErrClosed}, e.of(devName(i)))
		r, err := n.Lookup(ctx(t), devName(i))
		require.NoError(t, err)
		assert.Equal(t, presence.ReasonShutdown, r.Reason)
	}
	_, err = n.Connect(ctx(t), "late", nil)
	assert.ErrorIs(t, err, presence.ErrClosed)
}

func TestCloseIsIdempotent(t *testing.T) {
	n, err := presence.Open(ctx(t), dial(t, startServer(t)), presence.Config{Node: "gw1", Lease: testLease})
	require.NoError(t, err)
	_, err = n.Connect(ctx(t), "dev", nil)
	require.NoError(t, err)
	recorded, err := n.Close(ctx(t))
	require.NoError(t, err)
	require.Equal(t, 1, recorded)
	recorded, err = n.Close(ctx(t))
	assert.NoError(t, err, "a second Close")
	assert.Zero(t, recorded, "a second Close records nothing")
}

// A crashed node's devices are recorded node_lost by the live nodes, once
// each, within two leases and a few seconds.
func TestCrashedNodesDevicesAreRecordedNodeLostOnceEach(t *testing.T) {
	url := startServer(t)
	dead := openNode(t, url, "gwDead")
	openNode(t, url, "gwB")
	openNode(t, url, "gwC")
	h := watchAll(t, url)
	const devices = 200
	for i := range devices {
		_, err := dead.Connect(ctx(t), devName(i), nil)
		require.NoError(t, err)
	}
	h.caughtUp(t, devName(devices-1))
	dead.Crash()
	killed := time.Now()
	eventually(t, 2*testLease+5*time.Second, func() bool {
		for i := range devices {
			recs := h.of(devName(i))
			if recs[len(recs)-1].State != presence.Offline {
				return false
			}
		}
		return true
	}, "every device recorded offline")
	t.Logf("last node_lost %v after the crash", time.Since(killed))
	time.Sleep(testLease) // any late reaper would write now
	for i := range devices {
		recs := h.of(devName(i))
		require.Len(t, recs, 2, devName(i))
		assert.Equal(t, presence.ReasonNodeLost, recs[1].Reason)
		assert.Equal(t, "gwDead", recs[1].Node)
	}
}

// reaperLease is the lease of the reapers in the test below.
const reaperLease = 5 * time.Second

// Reapers running at once on several nodes record each device once: the
// compare-and-set by revision lets one write win.
func TestSeveralReapersAtOnceRecordEachDeviceOnce(t *testing.T) {
	url := startServer(t)
	dead := openNode(t, url, "gwDead")
	h := watchAll(t, url)
	// The reapers' lease bounds how long a reap's scan may go without an
	// answer; twelve scans at once on a loaded machine can pass one
	// second. What is tested is the compare-and-set, not the lease.
	var reapers []*presence.Node
	for _, id := range []string{"r1", "r2", "r3", "r4"} {
		r, err := presence.Open(ctx(t), dial(t, url), presence.Config{Node: id, Lease: reaperLease})
		require.NoError(t, err)
		t.Cleanup(func() { _, _ = r.Close(context.Background()) })
		reapers = append(reapers, r)
	}
	const devices = 300
	for i := range devices {
		_, err := dead.Connect(ctx(t), devName(i), nil)
		require.NoError(t, err)
	}
	h.caughtUp(t, devName(devices-1))
	dead.Crash()
	// Remove the lease at once rather than waiting for it to expire, so
	// that the reapers race each other rather than the fast path.
	js := jsOf(t, url)
	kv, err := js.KeyValue(ctx(t), "presence-nodes")
	require.NoError(t, err)
	require.NoError(t, kv.Delete(ctx(t), "gwDead"))

	var total sync.Map
	var wg sync.WaitGroup
	for i, r := range reapers {
		for j := range 3 {
			wg.Go(func() {
				n, err := r.ReapOrphans()
				assert.NoError(t, err)
				total.Store(i*10+j, n)
			})
		}
	}
	wg.Wait()
	sum := 0
	total.Range(func(_, v any) bool { sum += v.(int); return true })
	// The nodes' own reconcile, woken by the deletion, reaps too: every
	// device must still be recorded exactly once.
	assert.LessOrEqual(t, sum, devices)
	time.Sleep(testLease) // any late reap of the calls above would write now
	for i := range devices {
		r, err := reapers[0].Lookup(ctx(t), devName(i))
		require.NoError(t, err)
		assert.Equal(t, presence.ReasonNodeLost, r.Reason)
		eventually(t, 3*time.Second, func() bool {
			recs := h.of(devName(i))
			return len(recs) > 0 && recs[len(recs)-1].Rev == r.Rev
		}, "the watch reaches the last record")
		recs := h.of(devName(i))
		require.Len(t, recs, 2, "online, then one node_lost")
	}
}

// A reap passes over the devices of the nodes live before its scan; when
// one of them has gone by the end of the scan, it scans again.
func TestReapScansAgainForANodeThatWentDuringItsScan(t *testing.T) {
	url := startServer(t)
	dead := openNode(t, url, "gwDead")
	reaper := openNode(t, url, "r1")
	h := watchAll(t, url)
	const devices = 50
	for i := range devices {
		_, err := dead.Connect(ctx(t), devName(i), nil)
		require.NoError(t, err)
	}
	h.caughtUp(t, devName(devices-1))
	dead.Crash()
	kv, err := jsOf(t, url).KeyValue(ctx(t), "presence-nodes")
	require.NoError(t, err)
	require.NoError(t, kv.Delete(ctx(t), "gwDead"))

	reaped, again, err := reaper.ReapOrphansOnce("gwDead", "r1")
	require.NoError(t, err)
	assert.Zero(t, reaped, "gwDead was live before the scan: its devices are passed over")
	assert.True(t, again, "gwDead went during the scan")
	_, err = reaper.ReapOrphans()
	require.NoError(t, err)
	for i := range devices {
		r, err := reaper.Lookup(ctx(t), devName(i))
		require.NoError(t, err)
		assert.Equal(t, presence.ReasonNodeLost, r.Reason, devName(i))
	}
}

func TestRestartWithinTheLeaseKeepsReconnectedDevicesAndLosesTheRest(t *testing.T) {
	url := startServer(t)
	first := openNode(t, url, "gw1")
	h := watchAll(t, url)
	for i := range 4 {
		_, err := first.Connect(ctx(t), devName(i), nil)
		require.NoError(t, err)
	}
	h.caughtUp(t, devName(3))
	first.Crash()
	second := openNode(t, url, "gw1") // within the lease: takes it over
	assert.NotEqual(t, first.Epoch(), second.Epoch())
	for i := range 2 {
		_, err := second.Connect(ctx(t), devName(i), nil)
		require.NoError(t, err)
	}
	eventually(t, 2*testLease+5*time.Second, func() bool {
		for i := 2; i < 4; i++ {
			recs := h.of(devName(i))
			if recs[len(recs)-1].State != presence.Offline {
				return false
			}
		}
		return true
	}, "devices that did not come back are recorded node_lost")
	time.Sleep(testLease)
	for i := range 2 {
		recs := h.of(devName(i))
		require.Len(t, recs, 2, "online, online again: no offline between")
		assert.Equal(t, presence.Online, recs[1].State)
		assert.Equal(t, second.Epoch(), recs[1].Epoch)
	}
	for i := 2; i < 4; i++ {
		recs := h.of(devName(i))
		require.Len(t, recs, 2)
		assert.Equal(t, presence.ReasonNodeLost, recs[1].Reason)
		assert.Equal(t, "gw1", recs[1].Node)
	}
}

// A node cut off from the engine for longer than its lease finds, when it
// is back, that its devices were recorded node_lost by another node: it
// ends their connections, records nothing for them, and registers again
// under a new epoch.
func TestNodeCutOffLongerThanItsLeaseEndsConnectionsAndRecordsNothing(t *testing.T) {
	url := startServer(t)
	p, via := startProxy(t, url)
	cutNode := openNode(t, via, "gwCut")
	other := openNode(t, url, "gwOther")
	h := watchAll(t, url)
	e := newEnds()
	c, err := cutNode.Connect(ctx(t), "dev", e.fn("dev"))
	require.NoError(t, err)
	oldEpoch := cutNode.Epoch()

	p.Cut()
	eventually(t, 2*testLease+5*time.Second, func() bool {
		r, err := other.Lookup(ctx(t), "dev")
		return err == nil && r.Reason == presence.ReasonNodeLost
	}, "the other node records the device node_lost")
	assert.Empty(t, e.of("dev"), "cut off, the node cannot know yet")
	eventually(t, 3*time.Second, func() bool {
		recs := h.of("dev")
		return len(recs) == 2 && recs[1].Reason == presence.ReasonNodeLost
	}, "the watch sees node_lost")
	p.Heal()
	eventually(t, 10*time.Second, func() bool { return len(e.of("dev")) == 1 }, "back, the node ends the connection")
	assert.ErrorIs(t, e.of("dev")[0], presence.ErrLeaseLost)
	assert.ErrorIs(t, c.Offline(ctx(t), presence.ReasonTimeout), presence.ErrLeaseLost)
	eventually(t, 5*time.Second, func() bool { return cutNode.Epoch() != oldEpoch }, "registered again")
	_, err = cutNode.Connect(ctx(t), "dev", nil)
	require.NoError(t, err, "the node serves devices again")

	eventually(t, 3*time.Second, func() bool { return len(h.of("dev")) == 3 }, "three records")
	recs := h.of("dev")
	assert.Equal(t, []presence.Reason{presence.ReasonConnect, presence.ReasonNodeLost, presence.ReasonConnect},
		[]presence.Reason{recs[0].Reason, recs[1].Reason, recs[2].Reason})
}

func TestWatchReplaysCurrentStateThenFollows(t *testing.T) {
	url := startServer(t)
	n := openNode(t, url, "gw1")
	c, err := n.Connect(ctx(t), "a", nil)
	require.NoError(t, err)
	require.NoError(t, c.Offline(ctx(t), presence.ReasonClosed))
	_, err = n.Connect(ctx(t), "b", nil)
	require.NoError(t, err)

	wctx, cancel := context.WithCancel(context.Background())
	got := make(chan presence.Record, 10)
	replayed := make(chan int, 1)
	done := make(chan error, 1)
	go func() { done <- n.Watch(wctx, func(r presence.Record) { got <- r }, func(k int) { replayed <- k }) }()
	assert.Equal(t, 2, <-replayed)
	first, second := <-got, <-got
	assert.Equal(t, []string{"a", "b"}, []string{first.Device, second.Device})
	assert.Equal(t, presence.Offline, first.State)
	_, err = n.Connect(ctx(t), "a", nil)
	require.NoError(t, err)
	third := <-got
	assert.Equal(t, "a", third.Device)
	assert.Equal(t, presence.Online, third.State)
	assert.Greater(t, third.Rev, first.Rev)
	cancel()
	assert.ErrorIs(t, <-done, context.Canceled)
}

func TestPruneRemovesOnlyOfflineRecordsOlderThanTheCutoff(t *testing.T) {
	n := openNode(t, startServer(t), "gw1")
	c, err := n.Connect(ctx(t), "gone", nil)
	require.NoError(t, err)
	require.NoError(t, c.Offline(ctx(t), presence.ReasonClosed))
	_, err = n.Connect(ctx(t), "here", nil)
	require.NoError(t, err)
	pruned, err := n.Prune(ctx(t), time.Now().Add(time.Minute))
	require.NoError(t, err)
	assert.Equal(t, 1, pruned)
	_, err = n.Lookup(ctx(t), "gone")
	assert.ErrorIs(t, err, presence.ErrNotFound)
	_, err = n.Lookup(ctx(t), "here")
	assert.NoError(t, err)
}

// A kick sent while the old node was disconnected is lost; back, the node
// checks its connections against their records and ends the one that
// moved.
func TestNodeBackFromADisconnectEndsConnectionsThatMovedMeanwhile(t *testing.T) {
	url := startServer(t)
	p, via := startProxy(t, url)
	a, err := presence.Open(ctx(t), dial(t, via), presence.Config{Node: "gwA", Lease: 5 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = a.Close(context.Background()) })
	b := openNode(t, url, "gwB")
	e := newEnds()
	_, err = a.Connect(ctx(t), "dev", e.fn("dev"))
	require.NoError(t, err)
	p.Cut()
	_, err = b.Connect(ctx(t), "dev", nil)
	require.NoError(t, err)
	time.Sleep(200 * time.Millisecond) // the kick is gone by now
	assert.Empty(t, e.of("dev"))
	p.Heal()
	eventually(t, 15*time.Second, func() bool { return len(e.of("dev")) == 1 }, "the moved connection is ended")
	assert.ErrorIs(t, e.of("dev")[0], presence.ErrSuperseded)
	r, err := b.Lookup(ctx(t), "dev")
	require.NoError(t, err)
	assert.Equal(t, "gwB", r.Node)
	assert.Equal(t, presence.Online, r.State)
}

// While the engine is unreachable, Connect waits for it and returns once
// the online is recorded.
func TestConnectWaitsForAnUnreachableEngine(t *testing.T) {
	url := startServer(t)
	p, via := startProxy(t, url)
	n, err := presence.Open(ctx(t), dial(t, via), presence.Config{Node: "gw1", Lease: 5 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = n.Close(context.Background()) })
	p.Cut()
	got := make(chan error, 1)
	go func() {
		_, err := n.Connect(ctx(t), "patient", nil)
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("Connect returned while the engine was away: %v", err)
	case <-time.After(time.Second):
	}
	p.Heal()
	select {
	case err := <-got:
		require.NoError(t, err)
	case <-time.After(20 * time.Second):
		t.Fatal("Connect did not return once the engine was back")
	}
	r, err := openNode(t, url, "reader").Lookup(ctx(t), "patient")
	require.NoError(t, err)
	assert.Equal(t, presence.Online, r.State)
}

// Many connections of one device at once, over three nodes: exactly one
// survives, and it is the one recorded.
func TestConcurrentConnectionsOfOneDeviceLeaveExactlyTheRecordedOne(t *testing.T) {
	url := startServer(t)
	nodes := []*presence.Node{openNode(t, url, "n1"), openNode(t, url, "n2"), openNode(t, url, "n3")}
	type attempt struct {
		c     *presence.Conn
		ended chan error
	}
	const tries = 24
	attempts := make([]attempt, tries)
	var wg sync.WaitGroup
	for i := range attempts {
		attempts[i].ended = make(chan error, 1)
		wg.Go(func() {
			c, err := nodes[i%3].Connect(ctx(t), "contested", func(err error) { attempts[i].ended <- err })
			if err != nil {
				assert.ErrorIs(t, err, presence.ErrSuperseded)
				return
			}
			attempts[i].c = c
		})
	}
	wg.Wait()
	r, err := nodes[0].Lookup(ctx(t), "contested")
	require.NoError(t, err)
	var survivors []int
	count := func() bool {
		survivors = survivors[:0]
		for i, a := range attempts {
			if a.c != nil && len(a.ended) == 0 {
				survivors = append(survivors, i)
			}
		}
		return len(survivors) == 1
	}
	for deadline := time.Now().Add(3 * time.Second); !count() && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	if len(survivors) != 1 {
		for i, a := range attempts {
			if a.c != nil {
				var e error
				select {
				case e = <-a.ended:
				default:
				}
				t.Logf("%d: rev %d ended %v", i, a.c.Revision(), e)
			}
		}
		t.Fatalf("record rev %d node %s conn %d: %d survivors", r.Rev, r.Node, r.Conn, len(survivors))
	}
	won := attempts[survivors[0]].c
	assert.Equal(t, r.Rev, won.Revision(), "the survivor is the recorded connection")
	for i, a := range attempts {
		if a.c != nil && i != survivors[0] {
			assert.ErrorIs(t, <-a.ended, presence.ErrSuperseded)
		}
	}
	total := 0
	for _, n := range nodes {
		total += n.Connections()
	}
	assert.Equal(t, 1, total, "one connection held across the nodes")
}
