package presence

import (
	"context"
	"time"

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
	reaped := 0
	for i := range recs {
		r := &recs[i]
		if r.State != Online || !dead(r, live) {
			continue
		}
		rec := Record{State: Offline, Node: r.Node, Reason: ReasonNodeLost, Epoch: r.Epoch, Conn: r.Conn, At: time.Now().UTC()}
		_, err := n.devices.Update(ctx, EncodeKey(r.Device), rec.encode(), r.Rev)
		if isConflict(err) {
			continue
		}
		if err != nil {
			return reaped, err
		}
		reaped++
	}
	if reaped > 0 {
		n.log.Info("recorded devices node_lost", "devices", reaped)
	}
	return reaped, nil
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

// reconcileLoop lists the leases once per lease and reaps when a node
// seen live before has gone; reaps when the watch asks; and, on the live
// node with the smallest id, scans every record each ScanEvery. After a
// takeover (took) it reaps its predecessor's devices one lease later.
func (n *Node) reconcileLoop(took bool) {
	defer n.wg.Done()
	predecessorDue := time.Time{}
	if took {
		predecessorDue = time.Now().Add(n.cfg.Lease)
	}
	t := time.NewTimer(0)
	defer t.Stop()
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
			n.mu.Unlock()
		}
		if reap {
			if _, err := n.reap(ctx, orphaned); err == nil {
				n.lastScan = time.Now()
			} else {
				signal(n.reapNow) // try again
				n.sleep(n.cfg.Lease / 3)
			}
		}
		if !predecessorDue.IsZero() && time.Now().After(predecessorDue) {
			if n.reapPredecessor(ctx) == nil {
				predecessorDue = time.Time{}
			}
		}
		cancel()
		if !predecessorDue.IsZero() {
			t.Reset(min(n.cfg.Lease, time.Until(predecessorDue)+10*time.Millisecond))
		}
	}
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
