package jobs

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"net/http"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// newEpoch returns a fresh random lease epoch: it tells one life of a
// worker from the next under the same node name.
func newEpoch() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// leaseOf reads node's lease as the nodes bucket's stream leader holds
// it, and reports false if there is none (never written, expired, or
// purged). A KV Get is a direct get, which any replica of a replicated
// bucket may answer; one that has not yet applied a lease just created
// would make a live worker's epoch look over, and its running attempt
// start a second time. The leader answers only after it holds every
// acknowledged write. It costs one request, made only to settle an epoch
// this worker has not seen.
func (c *Client) leaseOf(ctx context.Context, node string) (leaseValue, bool, error) {
	req, _ := json.Marshal(struct {
		LastBySubject string `json:"last_by_subj"`
	}{kvSubject(c.nodesBucket(), node)})
	msg, err := c.nc.RequestWithContext(ctx, "$JS.API.STREAM.MSG.GET."+kvStream(c.nodesBucket()), req)
	if err != nil {
		return leaseValue{}, false, err
	}
	var resp struct {
		Message *struct {
			Header []byte `json:"hdrs"`
			Data   []byte `json:"data"`
		} `json:"message"`
		Error *struct {
			Code        int    `json:"code"`
			Description string `json:"description"`
		} `json:"error"`
	}
	if err := json.Unmarshal(msg.Data, &resp); err != nil {
		return leaseValue{}, false, fmt.Errorf("jobs: lease of %s: %w", node, err)
	}
	switch {
	case resp.Error != nil && resp.Error.Code == http.StatusNotFound:
		return leaseValue{}, false, nil
	case resp.Error != nil:
		return leaseValue{}, false, fmt.Errorf("jobs: lease of %s: %s", node, resp.Error.Description)
	case resp.Message == nil:
		return leaseValue{}, false, fmt.Errorf("jobs: lease of %s: an empty answer", node)
	}
	if len(resp.Message.Header) > 0 {
		h, err := nats.DecodeHeadersMsg(resp.Message.Header)
		if err != nil {
			return leaseValue{}, false, fmt.Errorf("jobs: lease of %s: %w", node, err)
		}
		// A delete, a purge or an expiry leaves a marker in the key's place.
		if h.Get(kvOperation) != "" || h.Get(jetstream.MarkerReasonHeader) != "" {
			return leaseValue{}, false, nil
		}
	}
	var lv leaseValue
	if json.Unmarshal(resp.Message.Data, &lv) != nil {
		return leaseValue{}, false, nil
	}
	return lv, true, nil
}

// kvOperation is the header of a KV delete or purge marker.
const kvOperation = "KV-Operation"

// register writes the worker's lease with a fresh epoch. A lease left
// under the same node name by an earlier life (a killed process restarted
// before its lease ran out) is taken over at its revision: that life's
// running attempts then belong to no live epoch and start again.
func (w *Worker) register(ctx context.Context) error {
	w.epoch = newEpoch()
	epoch := w.epoch
	w.own.Store(&epoch)
	val, _ := json.Marshal(leaseValue{Epoch: w.epoch})
	for {
		sent := time.Now()
		rev, err := w.c.nodes.Create(ctx, w.cfg.Node, val, jetstream.KeyTTL(w.cfg.Lease))
		if err == nil {
			w.leaseRev = rev
			w.confirm(sent)
			return nil
		}
		if errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, nats.ErrNoResponders) {
			// The bucket's stream has no leader to answer yet: one just
			// created on a cluster, or a leader moving. Try again until
			// ctx ends; a write that landed unanswered is found as this
			// worker's own lease by the next try, and taken over.
			select {
			case <-ctx.Done():
				return err
			case <-time.After(retryUnclear):
			}
			continue
		}
		if !errors.Is(err, jetstream.ErrKeyExists) {
			return err
		}
		e, err := w.c.nodes.Get(ctx, w.cfg.Node)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		sent = time.Now()
		rev, err = w.writeLease(ctx, val, e.Revision())
		if err == nil {
			w.leaseRev = rev
			w.confirm(sent)
			return nil
		}
		if ctx.Err() != nil {
			return err
		}
	}
}

// writeLease writes the lease with the worker's TTL if its last revision
// is still rev, and returns the new revision.
func (w *Worker) writeLease(ctx context.Context, val []byte, rev uint64) (uint64, error) {
	m := nats.NewMsg("$KV." + w.c.nodes.Bucket() + "." + w.cfg.Node)
	m.Data = val
	ack, err := w.c.js.PublishMsg(ctx, m, jetstream.WithMsgTTL(w.cfg.Lease), jetstream.WithExpectLastSequencePerSubject(rev))
	if err != nil {
		return 0, err
	}
	return ack.Sequence, nil
}

// leaseState is what a refresh learned of the worker's lease.
type leaseState uint8

const (
	leaseHeld    leaseState = iota // written, or found written, under the worker's epoch
	leaseLost                      // the engine holds no lease of this epoch: expired, removed or taken over
	leaseUnclear                   // no answer said either: the lease may still run
)

// refresh extends the lease, with draining as given. An answer lost on the
// way (or refused while an earlier write is applied) is told from a lost
// lease by reading it. Only an answer of the engine's makes the lease lost:
// requests that go unanswered, on a slow engine or a loaded machine, leave
// it unclear, and the lease may still be running on its TTL. Taking that
// for a loss would register a new epoch, and the attempts this worker has
// running would look abandoned and start a second time.
func (w *Worker) refresh(ctx context.Context, draining bool) leaseState {
	val, _ := json.Marshal(leaseValue{Epoch: w.epoch, Draining: draining})
	for try := 0; try < 3; try++ {
		sent := time.Now()
		rev, err := w.writeLease(ctx, val, w.leaseRev)
		if err == nil {
			w.leaseRev = rev
			w.confirm(sent)
			return leaseHeld
		}
		e, gerr := w.c.nodes.Get(ctx, w.cfg.Node)
		if gerr != nil {
			if errors.Is(gerr, jetstream.ErrKeyNotFound) {
				return leaseLost
			}
			continue
		}
		var lv leaseValue
		if json.Unmarshal(e.Value(), &lv) != nil || lv.Epoch != w.epoch {
			return leaseLost
		}
		if e.Revision() != w.leaseRev {
			// Our write landed; its answer did not. When it landed is
			// unknown, so heldUntil stays: the next confirmed write moves it.
			w.leaseRev = e.Revision()
			if lv.Draining == draining {
				return leaseHeld
			}
		}
	}
	return leaseUnclear
}

// confirm records that the engine confirmed a lease write sent at sent.
// The lease's TTL runs from when the engine stored the write, which is
// after sent, so the lease lasts at least until sent plus the TTL.
func (w *Worker) confirm(sent time.Time) { w.heldUntil.Store(sent.Add(w.cfg.Lease).UnixNano()) }

// startable reports whether the worker may start an attempt: whether its
// lease is known to run still. A worker whose refreshes go unanswered for
// a whole lease may have lost it, and the other workers may be starting
// its jobs again: it starts none until a write of its lease is confirmed,
// or it registers again. Its fires wait meanwhile (retryUnclear).
func (w *Worker) startable() bool { return time.Now().UnixNano() < w.heldUntil.Load() }

// leaseLoop refreshes the lease every third of it until the worker stops.
// A lease lost (expired while the engine or this process stalled) is
// registered again under a new epoch: the attempts it had running may
// meanwhile have started elsewhere, and their ends here then find their
// records moved and record nothing. Those still running here that no
// other worker started are still this worker's own (runsHereLocked): it
// does not start them again. A refresh left unclear is tried again at the
// next tick.
func (w *Worker) leaseLoop() {
	defer close(w.leaseDone)
	t := time.NewTicker(w.cfg.Lease / 3)
	defer t.Stop()
	for tick := 1; ; tick++ {
		select {
		case <-w.quit:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), w.cfg.Lease/3)
		w.leaseMu.Lock()
		if !w.leaseEnded {
			switch w.refresh(ctx, w.draining) {
			case leaseLost:
				w.log.Warn("jobs: lease lost; registering again", "node", w.cfg.Node)
				if err := w.register(ctx); err != nil {
					w.log.Warn("jobs: register", "err", err)
				}
			case leaseUnclear:
				// Tried again at the next tick, a third of a lease on: if the
				// lease runs out meanwhile, that refresh finds it lost.
				w.log.Warn("jobs: lease refresh unanswered", "node", w.cfg.Node)
			}
		}
		w.leaseMu.Unlock()
		cancel()
		if tick%3 == 0 {
			// A context of its own: a refresh left unanswered has used up
			// the one above, and the listing is what finds a lease whose
			// expiry this worker missed.
			ctx, cancel := context.WithTimeout(context.Background(), w.cfg.Lease/3)
			w.relist(ctx) // once a lease
			cancel()
		}
		// A partition whose watch could not start (the engine busy with a
		// failover) is tried again here.
		w.rebalance()
	}
}

// owner returns which of nodes (non-empty) holds partition p: the node
// whose hash with p is highest (rendezvous hashing), so that a node that
// joins or leaves moves only the partitions it gains or held.
func owner(nodes []string, p int) string {
	var best string
	var bestH uint64
	for _, n := range nodes {
		h := fnv.New64a()
		_, _ = h.Write([]byte(n))
		_, _ = h.Write([]byte{byte(p), byte(p >> 8)})
		v := mix(h.Sum64())
		if best == "" || v > bestH || v == bestH && n < best {
			best, bestH = n, v
		}
	}
	return best
}

// mix spreads FNV's output over all 64 bits (the finalizer of splitmix64),
// so that close inputs rank independently.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// epochAlive reports whether node's lease in the engine still carries
// epoch: an attempt running under that epoch then belongs to a live
// worker. A lease that is gone, or that carries another epoch (the node
// registered again: its earlier life is over), means the epoch is dead.
func (w *Worker) epochAlive(ctx context.Context, node, epoch string) (bool, error) {
	if !ValidName(node) {
		return false, nil
	}
	lv, ok, err := w.c.leaseOf(ctx, node)
	if err != nil || !ok {
		return false, err
	}
	return lv.Epoch == epoch, nil
}

func (w *Worker) currentEpoch() string {
	w.leaseMu.Lock()
	defer w.leaseMu.Unlock()
	return w.epoch
}
