package presence

import (
	"context"
	"errors"
	"maps"
	"slices"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// reapOrphans records node_lost for every online record whose node holds
// no lease after the scan, and reports how many it recorded. The records
// of a node that holds one are that node's business, even under an older
// epoch (it restarted; see reapOlderEpochs). Each write compares the
// revision scanned: a record that changed since (a newer connection,
// another reaper) is left alone. A reap has no deadline of its own: its
// scan of every record and its window of writes each fail only when the
// engine stops answering for a lease (errStalled), however long the whole
// takes; a reap that fails keeps what it wrote, and the next skips those
// records.
//
// The scan keeps only the records of nodes that held no lease before it
// either: the periodic scan of a fleet whose nodes all live keeps none.
// A node that held its lease before the scan and holds none after it had
// its records passed over; the reap then scans again, and that node is
// among those without a lease before the next scan.
func (n *Node) reapOrphans(ctx context.Context) (int, error) {
	total := 0
	for {
		before, err := n.liveNodes(ctx, n.cfg.Lease)
		if err != nil {
			return total, err
		}
		reaped, again, err := n.reapOrphansOnce(ctx, before)
		total += reaped
		if err != nil || !again {
			return total, err
		}
	}
}

// reapOrphansOnce is one scan of reapOrphans, passing over the records of
// the nodes in before; again reports that one of those went meanwhile.
func (n *Node) reapOrphansOnce(ctx context.Context, before map[string]string) (reaped int, again bool, err error) {
	recs, err := n.scanRecords(ctx, n.cfg.Lease, func(r Record) bool {
		_, held := before[r.Node]
		return r.State == Online && !held
	})
	if err != nil {
		return 0, false, err
	}
	// The leases are read after the records: a node that recorded a
	// device during the scan held its lease before, so it is seen live.
	live, err := n.liveNodes(ctx, n.cfg.Lease)
	if err != nil {
		return 0, false, err
	}
	if err := n.confirmGone(ctx, recs, before, live); err != nil {
		return 0, false, err
	}
	dead := recs[:0]
	for _, r := range recs {
		if _, ok := live[r.Node]; !ok {
			dead = append(dead, r)
		}
	}
	reaped, err = n.recordLost(ctx, dead)
	return reaped, wentDuring(before, live), err
}

// wentDuring reports whether a node of before is missing from after.
func wentDuring(before, after map[string]string) bool {
	for node := range before {
		if _, ok := after[node]; !ok {
			return true
		}
	}
	return false
}

// recordLost writes node_lost for recs (writeNodeLost) and logs how many
// it recorded.
func (n *Node) recordLost(ctx context.Context, recs []Record) (int, error) {
	reaped, err := n.writeNodeLost(ctx, recs)
	if reaped > 0 {
		n.log.Info("recorded devices node_lost", "devices", reaped)
	}
	return reaped, err
}

// confirmGone reads the lease of each node that recs or before name and
// the listing live does not, and adds those it finds to live.
func (n *Node) confirmGone(ctx context.Context, recs []Record, before, live map[string]string) error {
	nodes := make(map[string]bool, len(before))
	for node := range before {
		nodes[node] = true
	}
	for i := range recs {
		nodes[recs[i].Node] = true
	}
	for node := range nodes {
		if err := n.confirm(ctx, node, live); err != nil {
			return err
		}
	}
	return nil
}

// confirm reads node's lease unless live has it, and adds it to live if
// it is held. A listing is a watch that ends when it has had as many
// entries as the bucket held when it began; a lease refreshed during it
// is delivered again and counts twice, so another lease can fall after
// the end. A read of the key is exact, and the nodes missing are few:
// usually the lost ones.
func (n *Node) confirm(ctx context.Context, node string, live map[string]string) error {
	if _, ok := live[node]; ok {
		return nil
	}
	gctx, cancel := context.WithTimeout(ctx, attemptWithin)
	e, err := n.nodes.Get(gctx, node)
	cancel()
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
		return nil
	case err != nil:
		return err
	}
	if l, ok := decodeLease(e.Value()); ok {
		live[node] = l.Epoch
	}
	return nil
}

// writeNodeLost writes node_lost for each of recs, each compared with the
// revision scanned, keeping writesInFlight of them in flight as device
// writes are: a reap of tens of thousands of devices adds no more to the
// node's backlog than a connect storm does. It reports how many it
// recorded, and gives up when no answer comes for a lease.
func (n *Node) writeNodeLost(ctx context.Context, recs []Record) (int, error) {
	var (
		window   []jetstream.PubAckFuture // oldest first
		reaped   int
		firstErr error
	)
	stall := time.NewTimer(n.cfg.Lease)
	defer stall.Stop()
	// settle waits for the oldest write in flight.
	settle := func() error {
		f := window[0]
		window = window[1:]
		select {
		case <-f.Ok():
			reaped++
		case err := <-f.Err():
			if !isConflict(err) && firstErr == nil {
				firstErr = err
			}
		case <-stall.C:
			return errStalled
		case <-ctx.Done():
			return ctx.Err()
		}
		stall.Reset(n.cfg.Lease)
		return nil
	}
	for _, r := range recs {
		if len(window) == writesInFlight {
			if err := settle(); err != nil {
				return reaped, err
			}
		}
		rec := Record{State: Offline, Node: r.Node, Reason: ReasonNodeLost, Epoch: r.Epoch, Conn: r.Conn, At: time.Now().UTC()}
		m := &nats.Msg{Subject: n.deviceSubject(EncodeKey(r.Device)), Data: rec.encode()}
		f, err := n.js.PublishMsgAsync(m, jetstream.WithExpectLastSequencePerSubject(r.Rev))
		if err != nil {
			firstErr = err
			break
		}
		window = append(window, f)
	}
	for len(window) > 0 {
		if err := settle(); err != nil {
			return reaped, err
		}
	}
	return reaped, firstErr
}

// watchNodes follows the nodes bucket: the removal of a lease (its expiry
// marker, or a node's Close) asks for a reap, and the removal of this
// node's own lease wakes its lease loop. It is the fast path; the
// listing in reconcileLoop repairs what it misses.
func (n *Node) watchNodes() {
	defer n.wg.Done()
	for !n.stopped() {
		w, err := n.nodes.WatchAll(context.Background(), jetstream.UpdatesOnly())
		if err != nil {
			n.sleep(n.cfg.Lease / 3)
			continue
		}
		n.followNodes(w)
		stopWatch(w)
	}
}

// followNodes handles w's entries until the node stops or w ends.
func (n *Node) followNodes(w jetstream.KeyWatcher) {
	for {
		select {
		case <-n.stop:
			return
		case e, ok := <-w.Updates():
			if !ok {
				return
			}
			if e == nil || e.Operation() == jetstream.KeyValuePut {
				continue
			}
			if e.Key() == n.cfg.Node {
				signal(n.wake)
			} else {
				signal(n.reapNow)
			}
		}
	}
}

// signal sends on a channel of capacity one without waiting.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// reconcileLoop lists the leases once per lease. The live node with the
// smallest id reaps when a node seen live before has gone, when the watch
// asks, and every ScanEvery; if it dies, the next smallest takes over at
// its next listing. After a
// takeover (took) it reaps its predecessor's devices one lease later.
func (n *Node) reconcileLoop(took bool) {
	defer n.wg.Done()
	if took {
		n.reapOlderEpochsAt(time.Now().Add(n.cfg.Lease))
	}
	t := time.NewTimer(0)
	defer t.Stop()
	reconnects := n.nc.Stats().Reconnects
	for {
		reap := false
		select {
		case <-n.stop:
			return
		case <-n.reapNow:
			reap = true
		case <-n.ownDue:
		case <-t.C:
			t.Reset(n.cfg.Lease)
		}
		ctx, cancel := context.WithTimeout(n.run, n.cfg.Lease)
		live, err := n.liveNodes(ctx, n.cfg.Lease)
		cancel()
		if err == nil {
			n.mu.Lock()
			known := n.known
			n.mu.Unlock()
			for id := range known {
				if err == nil {
					err = n.confirm(n.run, id, live) // not a full scan for a listing that missed a lease
				}
			}
		}
		if err == nil {
			n.mu.Lock()
			for id := range n.known {
				if _, ok := live[id]; !ok {
					reap = true // gone since the last listing
				}
			}
			n.known = live
			leader := true
			for id := range live {
				if id < n.cfg.Node {
					leader = false
				}
			}
			if leader && time.Since(n.lastScan) >= n.cfg.ScanEvery {
				reap = true
			}
			// One reaper: the live node with the smallest id. Nodes whose
			// listings differ may both reap; the compare-and-set records
			// each device once all the same.
			reap = reap && leader
			n.mu.Unlock()
		} else {
			reap = false
		}
		if reap {
			if _, err := n.reapOrphans(n.run); err == nil {
				n.lastScan = time.Now()
			} else {
				signal(n.reapNow) // try again
				n.sleep(n.cfg.Lease / 3)
			}
		}
		if r := n.nc.Stats().Reconnects; r != reconnects {
			// Kicks sent while this node was disconnected are lost: check
			// each connection against its record.
			if n.verifyLocal(n.run) == nil {
				reconnects = r
			}
		}
		due := n.reapOwnIfDue()
		if !due.IsZero() {
			t.Reset(min(n.cfg.Lease, max(0, time.Until(due))+10*time.Millisecond))
		}
	}
}

// reapOwnIfDue reaps the node's older epochs if that is due, and returns
// when it is due next (zero: not at all). A reap owed after a lost lease
// lets the writes go once it is done, and asks for one more a lease later.
func (n *Node) reapOwnIfDue() time.Time {
	n.mu.Lock()
	due := n.predecessorDue
	n.mu.Unlock()
	if due.IsZero() || time.Now().Before(due) {
		return due
	}
	epoch, err := n.reapOlderEpochs(n.run)
	n.mu.Lock()
	defer n.mu.Unlock()
	if err != nil {
		n.predecessorDue = time.Now().Add(n.cfg.Lease / 3) // try again
		return n.predecessorDue
	}
	if n.owed != "" && n.owed == epoch {
		n.owed = ""
		n.gateWrites()
		n.log.Info("devices of the lost lease recorded: writes go on", "epoch", epoch)
		// An online write of the lost epoch sent before the loss may land
		// after this reap.
		n.predecessorDue = time.Now().Add(n.cfg.Lease)
	} else if n.predecessorDue.Equal(due) {
		n.predecessorDue = time.Time{}
	}
	return n.predecessorDue
}

// reapOlderEpochsAt asks the reconcile loop to record node_lost, at t,
// for this node's devices still online under an earlier epoch: after a
// takeover, one lease later, the devices that did not reconnect; after a
// lost lease, at once, the devices of the lost epoch.
func (n *Node) reapOlderEpochsAt(t time.Time) {
	n.mu.Lock()
	n.predecessorDue = t
	n.mu.Unlock()
	signal(n.ownDue)
}

// reapOlderEpochs records node_lost for the devices still online under an
// earlier epoch of this node's id than the current one, and returns the
// current one. It reads no leases: those records are this node's, whether
// an earlier epoch's lease is held or not. Each write compares the
// revision scanned, as reapOrphans's do.
func (n *Node) reapOlderEpochs(ctx context.Context) (string, error) {
	epoch := n.epochNow()
	recs, err := n.scanRecords(ctx, n.cfg.Lease, func(r Record) bool {
		return r.State == Online && r.Node == n.cfg.Node && r.Epoch != epoch
	})
	if err == nil {
		_, err = n.recordLost(ctx, recs)
	}
	return epoch, err
}

// verifyLocal ends every connection of this node whose device's record
// belongs to another connection now: the kicks a disconnected node missed.
func (n *Node) verifyLocal(ctx context.Context) error {
	n.mu.Lock()
	conns := slices.Collect(maps.Values(n.byDevice))
	n.mu.Unlock()
	for _, c := range conns {
		gctx, cancel := context.WithTimeout(ctx, attemptWithin)
		r, found, err := n.get(gctx, c.device, c.key)
		cancel()
		if err != nil {
			return err
		}
		n.mu.Lock()
		mine := Record{Node: n.cfg.Node, Epoch: c.epoch, Conn: c.num}
		n.mu.Unlock()
		if found && r.State == Online && !r.sameConn(&mine) {
			n.forget(c)
			c.end(ErrSuperseded)
		}
	}
	return nil
}
