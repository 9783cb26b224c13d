package presence

import (
	"context"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// reap records node_lost for every online record that dead says is
// orphaned, given the leases held after the scan, and reports how many it
// recorded. Each write compares the revision scanned: a record that
// changed since (a newer connection, another reaper) is left alone.
func (n *Node) reap(ctx context.Context, dead func(r *Record, live map[string]string) bool) (int, error) {
	recs, err := n.scanRecords(ctx)
	if err != nil {
		return 0, err
	}
	// The leases are read after the records: a node that recorded a
	// device during the scan held its lease before, so it is seen live.
	live, err := n.liveNodes(ctx)
	if err != nil {
		return 0, err
	}
	var batch []*Record
	for i := range recs {
		if r := &recs[i]; r.State == Online && dead(r, live) {
			batch = append(batch, r)
		}
	}
	reaped := 0
	for len(batch) > 0 {
		k := min(len(batch), reapBatch)
		done, err := n.reapBatch(ctx, batch[:k])
		reaped += done
		if err != nil {
			return reaped, err
		}
		batch = batch[k:]
	}
	if reaped > 0 {
		n.log.Info("recorded devices node_lost", "devices", reaped)
	}
	return reaped, nil
}

// reapBatch bounds the node_lost writes in flight at once: enough to
// record tens of thousands of devices in a second or two, few enough not
// to stall the connection's asynchronous publisher.
const reapBatch = 1024

// reapBatch writes node_lost for each of recs, all in flight at once, each
// compared with the revision scanned, and reports how many it recorded.
func (n *Node) reapBatch(ctx context.Context, recs []*Record) (int, error) {
	futures := make([]jetstream.PubAckFuture, 0, len(recs))
	var firstErr error
	for _, r := range recs {
		rec := Record{State: Offline, Node: r.Node, Reason: ReasonNodeLost, Epoch: r.Epoch, Conn: r.Conn, At: time.Now().UTC()}
		m := &nats.Msg{Subject: n.deviceSubject(EncodeKey(r.Device)), Data: rec.encode()}
		f, err := n.js.PublishMsgAsync(m, jetstream.WithExpectLastSequencePerSubject(r.Rev))
		if err != nil {
			firstErr = err
			break
		}
		futures = append(futures, f)
	}
	reaped := 0
	for _, f := range futures {
		select {
		case <-f.Ok():
			reaped++
		case err := <-f.Err():
			if !isConflict(err) && firstErr == nil {
				firstErr = err
			}
		case <-ctx.Done():
			return reaped, ctx.Err()
		}
	}
	return reaped, firstErr
}

// orphaned says a record is orphaned when its node holds no lease. The
// records of a node that holds one are that node's business, even under
// an older epoch (it restarted; see reapPredecessor).
func orphaned(r *Record, live map[string]string) bool {
	_, ok := live[r.Node]
	return !ok
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
		_ = w.Stop()
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
		n.reapOlderEpochsLater()
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
		case <-t.C:
			t.Reset(n.cfg.Lease)
		}
		ctx, cancel := context.WithTimeout(context.Background(), n.cfg.Lease)
		live, err := n.liveNodes(ctx)
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
			if _, err := n.reap(ctx, orphaned); err == nil {
				n.lastScan = time.Now()
			} else {
				signal(n.reapNow) // try again
				n.sleep(n.cfg.Lease / 3)
			}
		}
		if r := n.nc.Stats().Reconnects; r != reconnects {
			// Kicks sent while this node was disconnected are lost: check
			// each connection against its record.
			if n.verifyLocal(ctx) == nil {
				reconnects = r
			}
		}
		n.mu.Lock()
		due := n.predecessorDue
		n.mu.Unlock()
		if !due.IsZero() && time.Now().After(due) {
			if n.reapPredecessor(ctx) == nil {
				n.mu.Lock()
				if n.predecessorDue.Equal(due) {
					n.predecessorDue = time.Time{}
				}
				n.mu.Unlock()
				due = time.Time{}
			}
		}
		cancel()
		if !due.IsZero() {
			t.Reset(min(n.cfg.Lease, time.Until(due)+10*time.Millisecond))
		}
	}
}

// reapOlderEpochsLater asks the reconcile loop to record node_lost, one
// lease from now, for this node's devices still online under an earlier
// epoch: after a takeover, the devices that did not reconnect; after a
// lost lease, any online write of the old epoch that landed after the
// node's own reap.
func (n *Node) reapOlderEpochsLater() {
	n.mu.Lock()
	n.predecessorDue = time.Now().Add(n.cfg.Lease)
	n.mu.Unlock()
}

// reapPredecessor records node_lost for the devices still online under an
// earlier epoch of this node's id: those that did not reconnect within a
// lease of the restart.
func (n *Node) reapPredecessor(ctx context.Context) error {
	epoch, err := n.waitLive(ctx)
	if err != nil {
		return err
	}
	_, err = n.reap(ctx, func(r *Record, _ map[string]string) bool {
		return r.Node == n.cfg.Node && r.Epoch != epoch
	})
	return err
}

// verifyLocal ends every connection of this node whose device's record
// belongs to another connection now: the kicks a disconnected node missed.
func (n *Node) verifyLocal(ctx context.Context) error {
	n.mu.Lock()
	conns := make([]*Conn, 0, len(n.byDevice))
	for _, c := range n.byDevice {
		conns = append(conns, c)
	}
	n.mu.Unlock()
	for _, c := range conns {
		r, found, err := n.get(ctx, c.device, c.key)
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
