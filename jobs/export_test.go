package jobs

import "context"

// AttemptAt runs the attempt of job key recorded at revision rev, as a
// fire of this worker's heap would.
func (w *Worker) AttemptAt(key string, rev uint64) { w.attempt(kvKey(key), rev, nil) }

// KVKey is kvKey, for tests that read the engine directly.
func KVKey(key string) string { return kvKey(key) }

// Held returns how many partitions the worker holds.
func (w *Worker) Held() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, pw := range w.held {
		if pw != nil {
			n++
		}
	}
	return n
}

// ForgetLease drops node's lease from the worker's view of the live
// workers, as if the watch of the leases had not delivered it yet (a
// worker that registered after this one's last share-out), and shares
// the partitions out again by that view.
func (w *Worker) ForgetLease(node string) {
	w.mu.Lock()
	delete(w.live, node)
	w.mu.Unlock()
	w.rebalance()
}

// LeaseOf is leaseOf: the epoch of node's lease as the stream leader
// holds it, and whether there is one.
func (c *Client) LeaseOf(ctx context.Context, node string) (string, bool, error) {
	lv, ok, err := c.leaseOf(ctx, node)
	return lv.Epoch, ok, err
}

// Epoch returns the worker's current lease epoch.
func (w *Worker) Epoch() string { return w.currentEpoch() }

// Kept returns how many values of pending jobs the worker keeps for their
// fires, and their bytes.
func (w *Worker) Kept() (n, bytes int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.kept), w.keptBytes
}

// Reregister registers the worker again under a new epoch, as its lease
// loop does when it finds its lease lost.
func (w *Worker) Reregister(ctx context.Context) error {
	w.leaseMu.Lock()
	defer w.leaseMu.Unlock()
	return w.register(ctx)
}

// Refresh refreshes the worker's lease once, as its lease loop does, and
// returns what it learned: "held", "lost" or "unclear".
func (w *Worker) Refresh(ctx context.Context) string {
	w.leaseMu.Lock()
	defer w.leaseMu.Unlock()
	return [...]string{leaseHeld: "held", leaseLost: "lost", leaseUnclear: "unclear"}[w.refresh(ctx, w.draining)]
}

// LiveEpoch returns the epoch of node's lease in the worker's view of the
// live workers, "" if there is none.
func (w *Worker) LiveEpoch(node string) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.live[node].Epoch
}

// LapseLease makes the worker take its lease for unconfirmed, as after a
// whole lease of unanswered refreshes; the next confirmed write ends that.
func (w *Worker) LapseLease() { w.heldUntil.Store(0) }
