package presence

import "context"

// Crash stops the node's goroutines and its kick subscription without
// writing anything: what the engine sees of a process killed with SIGKILL.
// A later Close does nothing, as after a Close.
func (n *Node) Crash() {
	n.mu.Lock()
	n.closed = true
	n.mu.Unlock()
	close(n.stop)
	n.cancel()
	_ = n.kick.Unsubscribe()
	n.wg.Wait()
	n.leaseNC.Close()
	close(n.closeEnd)
}

// ReapOrphans runs one reap of the devices of nodes without a lease.
func (n *Node) ReapOrphans() (int, error) {
	return n.reapOrphans(context.Background())
}

// ReapOrphansOnce runs one scan of a reap of the devices of nodes without
// a lease, passing over the devices of the nodes named, as if the listing
// before the scan had found them live.
func (n *Node) ReapOrphansOnce(live ...string) (reaped int, again bool, err error) {
	before := make(map[string]string, len(live))
	for _, id := range live {
		before[id] = ""
	}
	return n.reapOrphansOnce(context.Background(), before)
}

// Epoch returns the node's current epoch.
func (n *Node) Epoch() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.epoch
}
