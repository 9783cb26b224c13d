package presence

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/go-schedule/schedule/presence/ensure"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Node is one gateway node's presence: its lease, the connections it
// recorded online, and its share of reaping and reconcile. Its methods are
// safe for concurrent use.
type Node struct {
	*Store
	cfg Config
	nc  *nats.Conn
	log *slog.Logger

	// The node's own lease goes over a connection of its own (dialLease),
	// so that a refresh's answer never waits behind the node's traffic on
	// nc: a scan streaming every record to the reaper, or a connect
	// storm's writes. leaseJS and leaseKV (the nodes bucket) are bound on
	// it; they serve the node's own key only.
	leaseNC *nats.Conn
	leaseJS jetstream.JetStream
	leaseKV jetstream.KeyValue

	mu       sync.Mutex
	epoch    string
	leaseRev uint64    // revision of the last lease write acknowledged
	leaseOK  time.Time // when that write was sent
	held     bool      // the lease is known to be held
	// owed is the epoch registered after a lost lease while the devices
	// of the lost epoch are not yet all recorded node_lost: writes wait
	// for that reap, so that a device's new online never replaces its
	// old one unrecorded. Empty: nothing owed.
	owed     string
	live     bool // writes may go: held, and nothing owed
	liveCh   chan struct{}
	closed   bool
	closeEnd chan struct{} // closed when the first Close has returned
	seq      uint64
	conns    map[uint64]*Conn // every connection of this node, by number
	byDevice map[string]*Conn // the current connection of each device
	// While a Connect of a device is in flight here (inflight), floor
	// holds the highest revision of the device's record this node has
	// learnt of: a Connect whose write is older is superseded, even when
	// the newer connection has already ended or moved on.
	inflight map[string]int
	floor    map[string]uint64
	known    map[string]string // the live nodes of the last listing

	kick     *nats.Subscription
	slots    chan struct{} // one per device write in flight (writesInFlight)
	wake     chan struct{} // nudges the lease loop
	reapNow  chan struct{} // asks for a reap of nodes without a lease
	ownDue   chan struct{} // wakes the reconcile loop: a reap of older epochs is due
	stop     chan struct{}
	run      context.Context // ends when the node stops: the reaps' context
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	lastScan time.Time

	predecessorDue time.Time // when to reap this id's older epochs; zero: no need
}

// Open registers a node in the fleet on nc's engine and starts its lease,
// its watch of the other nodes and its reconcile, in goroutines that
// Close ends. The lease goes over a second connection to the engine, which
// Open dials with nc's options and Close closes (see "Under load" in the
// package documentation). If a lease for cfg.Node exists (the node
// restarted), Open takes it over, and one lease later records node_lost
// for each device still online under the old lease. The buckets are
// created if missing (see [OpenStore]); nodes opened together on a new
// cluster all bind to the same ones.
//
// It returns [ErrInvalidNodeID], [ErrInvalidLease] or [ErrInvalidReplicas]
// for a bad cfg, [ErrNilConn] for a nil nc, ctx's error if ctx ends first,
// or the engine's error.
func Open(ctx context.Context, nc *nats.Conn, cfg Config) (*Node, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if nc == nil {
		return nil, ErrNilConn
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	st, err := OpenStore(ctx, js, cfg.Prefix, cfg.Replicas)
	if err != nil {
		return nil, err
	}
	n := &Node{
		Store: st, cfg: cfg, nc: nc, log: cfg.Logger.With("node", cfg.Node),
		liveCh:   make(chan struct{}),
		conns:    make(map[uint64]*Conn),
		byDevice: make(map[string]*Conn),
		inflight: make(map[string]int),
		floor:    make(map[string]uint64),
		slots:    make(chan struct{}, writesInFlight),
		wake:     make(chan struct{}, 1),
		reapNow:  make(chan struct{}, 1),
		ownDue:   make(chan struct{}, 1),
		stop:     make(chan struct{}),
		closeEnd: make(chan struct{}),
	}
	if err := n.dialLease(ctx); err != nil {
		return nil, err
	}
	took, err := n.register(ctx, false)
	if err == nil {
		n.kick, err = nc.Subscribe(n.kickSubject(cfg.Node), n.onKick)
	}
	if err != nil {
		n.leaseNC.Close()
		return nil, err
	}
	n.run, n.cancel = context.WithCancel(context.Background())
	n.wg.Add(3)
	go n.leaseLoop()
	go n.watchNodes()
	go n.reconcileLoop(took)
	return n, nil
}

// errNotConnected is why a lease refresh was not sent: the node's own
// connection is down.
var errNotConnected = errors.New("presence: the node's connection is down")

// dialLease opens the node's lease connection: a second connection to
// nc's engine, with nc's options, named after the node. It binds to the
// nodes bucket as OpenStore does, creating it if missing: on a new
// cluster, the server this connection asks may not know yet of the bucket
// that OpenStore has just seen, and says it is not found.
func (n *Node) dialLease(ctx context.Context) error {
	opts := n.nc.Opts
	opts.Name = "presence lease " + n.cfg.Node
	lc, err := opts.Connect()
	if err != nil {
		return err
	}
	js, err := jetstream.New(lc)
	if err == nil {
		n.leaseKV, err = ensure.KeyValue(ctx, js, nodesBucket(n.prefix, n.cfg.Replicas))
	}
	if err != nil {
		lc.Close()
		return err
	}
	n.leaseNC, n.leaseJS = lc, js
	return nil
}

// ID returns the node's id.
func (n *Node) ID() string { return n.cfg.Node }

// Lease returns the node's lease.
func (n *Node) Lease() time.Duration { return n.cfg.Lease }

func (n *Node) kickSubject(node string) string { return n.cfg.Prefix + ".kick." + node }

func (n *Node) leaseSubject() string { return "$KV." + n.cfg.Prefix + "-nodes." + n.cfg.Node }

func (n *Node) deviceSubject(key string) string { return "$KV." + n.cfg.Prefix + "-devices." + key }

func newEpoch() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return hex.EncodeToString(b[:])
}

// register writes a lease for a new epoch and makes the node live; with
// owe, writes wait until the reconcile loop has reaped the node's older
// epochs. It reports whether it took over a lease of an earlier epoch.
func (n *Node) register(ctx context.Context, owe bool) (bool, error) {
	epoch := newEpoch()
	value, _ := json.Marshal(lease{Epoch: epoch})
	for {
		sent := time.Now()
		rev, err := n.leaseKV.Create(ctx, n.cfg.Node, value, jetstream.KeyTTL(n.cfg.Lease))
		took := false
		if errors.Is(err, jetstream.ErrKeyExists) {
			var e jetstream.KeyValueEntry
			e, err = n.leaseKV.Get(ctx, n.cfg.Node)
			if errors.Is(err, jetstream.ErrKeyNotFound) {
				continue // expired meanwhile
			}
			if err != nil {
				return false, err
			}
			sent = time.Now()
			rev, err = n.writeLease(ctx, value, e.Revision())
			took = true
		}
		if isConflict(err) {
			continue
		}
		if err != nil {
			return false, err
		}
		n.mu.Lock()
		n.epoch, n.leaseRev, n.leaseOK = epoch, rev, sent
		if owe {
			n.owed = epoch
		}
		n.setHeld(true)
		n.mu.Unlock()
		n.log.Info("registered", "epoch", epoch, "took_over", took)
		return took, nil
	}
}

// writeLease writes the lease value with the node's TTL if the key's last
// revision is rev: a refresh, or the takeover of an earlier epoch's lease.
func (n *Node) writeLease(ctx context.Context, value []byte, rev uint64) (uint64, error) {
	m := &nats.Msg{Subject: n.leaseSubject(), Data: value, Header: nats.Header{}}
	ack, err := n.leaseJS.PublishMsg(ctx, m, jetstream.WithMsgTTL(n.cfg.Lease), jetstream.WithExpectLastSequencePerSubject(rev))
	if err != nil {
		return 0, err
	}
	return ack.Sequence, nil
}

// setHeld records whether the lease is known to be held, and lets the
// writes go or holds them. n.mu must be held.
func (n *Node) setHeld(held bool) {
	n.held = held
	n.gateWrites()
}

// gateWrites lets the writes go while the lease is held and no reap is
// owed, and wakes the writers waiting; otherwise it holds them. n.mu must
// be held.
func (n *Node) gateWrites() {
	live := n.held && n.owed == ""
	if live == n.live {
		return
	}
	n.live = live
	if live {
		close(n.liveCh)
	} else {
		n.liveCh = make(chan struct{})
	}
}

// waitLive waits until the lease is known to be held, and returns the
// epoch it is held for.
func (n *Node) waitLive(ctx context.Context) (string, error) {
	for {
		n.mu.Lock()
		if n.closed && !n.live {
			n.mu.Unlock()
			return "", ErrClosed
		}
		if n.live {
			e := n.epoch
			n.mu.Unlock()
			return e, nil
		}
		ch := n.liveCh
		n.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return "", ctx.Err()
		case <-n.stop:
			return "", ErrClosed
		}
	}
}

// leaseLoop refreshes the lease every third of it, one refresh at a time.
// A refresh is awaited until the lease it extends would end, not just a
// third of it: under load its answer comes late, behind the node's own
// requests, and a refresh sent again meanwhile would only fail on the
// revision the first one moved. A refresh rejected on its expected
// revision means the lease expired or was taken over: the node is lost. A
// whole lease without an acknowledged refresh makes the node hold its
// writes until it knows.
func (n *Node) leaseLoop() {
	defer n.wg.Done()
	every := n.cfg.Lease / 3
	t := time.NewTimer(every)
	defer t.Stop()
	for {
		select {
		case <-n.stop:
			return
		case <-t.C:
		case <-n.wake:
		}
		n.mu.Lock()
		epoch, rev, ok := n.epoch, n.leaseRev, n.leaseOK
		n.mu.Unlock()
		value, _ := json.Marshal(lease{Epoch: epoch})
		sent := time.Now()
		ctx, cancel := context.WithDeadline(context.Background(), later(ok.Add(n.cfg.Lease), sent.Add(every)))
		var newRev uint64
		err := errNotConnected
		if n.nc.IsConnected() {
			// Only while the node's own connection is up: the lease must
			// not outlive the node's means to record its devices.
			newRev, err = n.writeLease(ctx, value, rev)
		}
		cancel()
		switch {
		case err == nil:
			n.mu.Lock()
			n.leaseRev, n.leaseOK = newRev, sent
			if !n.held {
				n.log.Info("lease held again")
			}
			n.setHeld(true)
			n.mu.Unlock()
		case isConflict(err):
			if !n.stillHeld(epoch) {
				n.lost(epoch)
			}
		default:
			n.mu.Lock()
			if n.held && time.Since(n.leaseOK) >= n.cfg.Lease {
				n.log.Warn("lease unconfirmed for a whole lease: holding writes", "err", err)
				n.setHeld(false)
			}
			n.mu.Unlock()
		}
		t.Reset(max(0, every-time.Since(sent))) // a third of a lease from the last send
	}
}

// later returns the later of a and b.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// stillHeld checks a refresh that failed on its expected revision: if the
// lease still names epoch, an earlier refresh whose acknowledgement was
// lost (sent while reconnecting) landed after all, and the lease is held
// at its revision.
func (n *Node) stillHeld(epoch string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), n.cfg.Lease/3)
	defer cancel()
	e, err := n.leaseKV.Get(ctx, n.cfg.Node)
	if err != nil {
		return !errors.Is(err, jetstream.ErrKeyNotFound) // unknown: ask again next round
	}
	l, ok := decodeLease(e.Value())
	if !ok || l.Epoch != epoch {
		return false
	}
	n.mu.Lock()
	n.leaseRev = e.Revision() // leaseOK stays: when that write landed is unknown
	n.mu.Unlock()
	signal(n.wake) // refresh at once from the right revision
	return true
}

// lost handles the loss of the lease of epoch: every connection of it is
// closed without a record, the node registers again under a new epoch,
// and its writes wait until the reconcile loop has recorded node_lost for
// the devices still online under epoch (this node or another, whichever
// is first). Registering comes first: it is two requests, which converge
// under any load, and with its lease held the node then takes as long as
// the reap of tens of thousands of records needs, without a deadline of
// one lease that it might never meet.
func (n *Node) lost(epoch string) {
	n.mu.Lock()
	if n.epoch != epoch || n.closed {
		n.mu.Unlock()
		return
	}
	n.setHeld(false)
	ended := slices.Collect(maps.Values(n.conns))
	clear(n.conns)
	clear(n.byDevice)
	n.mu.Unlock()
	n.log.Warn("lease lost: closing connections, recording nothing for them", "epoch", epoch, "connections", len(ended))
	for _, c := range ended {
		c.end(ErrLeaseLost)
	}
	for !n.stopped() {
		ctx, cancel := context.WithTimeout(context.Background(), n.cfg.Lease)
		_, err := n.register(ctx, true)
		cancel()
		if err == nil {
			n.reapOlderEpochsAt(time.Now())
			return
		}
		n.log.Warn("re-registering", "err", err)
		n.sleep(n.cfg.Lease / 3)
	}
}

func (n *Node) stopped() bool {
	select {
	case <-n.stop:
		return true
	default:
		return false
	}
}

// sleep waits d or until the node stops.
func (n *Node) sleep(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-n.stop:
	}
}

// Connections returns how many connections the node holds recorded online.
func (n *Node) Connections() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.byDevice)
}

// Close records every device online at this node offline with reason
// shutdown, ends their connections (their end functions get ErrClosed),
// gives up the lease and stops the node's goroutines. It reports how many
// devices it recorded offline. Connect after Close returns ErrClosed. The
// caller's nats connection stays open; the lease connection Open dialled
// is closed. Close waits for the engine as long as ctx allows; what it
// could not record is left to the other nodes, which record it node_lost
// once the lease ends.
//
// Close returns the first error of those writes other than [ErrSuperseded],
// [ErrLeaseLost] and [ErrClosed] (ctx's error if ctx ended first), else the
// error of giving up the lease (a lease another life of the node took
// over is none).
//
// Close is idempotent: a later call records nothing, waits until the
// first has returned (or ctx ends) and returns 0 and nil (or ctx's error).
func (n *Node) Close(ctx context.Context) (int, error) {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		select {
		case <-n.closeEnd:
			return 0, nil
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	n.closed = true
	conns := slices.Collect(maps.Values(n.byDevice))
	n.mu.Unlock()
	defer close(n.closeEnd)

	recorded, firstErr := n.shutdownAll(ctx, conns)
	n.mu.Lock()
	rest := slices.Collect(maps.Values(n.conns))
	n.mu.Unlock()
	for _, c := range rest {
		c.end(ErrClosed)
	}
	close(n.stop)
	n.cancel()
	_ = n.kick.Unsubscribe()
	n.wg.Wait()
	n.mu.Lock()
	rev := n.leaseRev
	n.mu.Unlock()
	if err := n.leaseKV.Delete(ctx, n.cfg.Node, jetstream.LastRevision(rev)); err != nil && !isConflict(err) && firstErr == nil {
		firstErr = err
	}
	n.leaseNC.Close()
	return recorded, firstErr
}

// writesInFlight bounds the device writes (onlines, offlines) a node
// keeps waiting on the engine at once. A connect storm then queues its
// writes in the node, not in the engine or on the node's connection, so
// that a lease refresh or a reap waits behind at most this many requests
// of the node: milliseconds of an engine's work, against a lease of a
// second or more. A few dozen requests in flight keep the engine busy
// over the round trip all the same.
const writesInFlight = 64

// acquire takes one of the node's write slots, waiting as long as ctx
// allows; release gives it back.
func (n *Node) acquire(ctx context.Context) error {
	select {
	case n.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (n *Node) release() { <-n.slots }

func (n *Node) shutdownAll(ctx context.Context, conns []*Conn) (int, error) {
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		recorded int
		firstErr error
	)
	sem := make(chan struct{}, writesInFlight) // goroutines: the writes wait for slots
	for _, c := range conns {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			err := c.offline(ctx, ReasonShutdown, ErrClosed)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				recorded++
			case errors.Is(err, ErrSuperseded), errors.Is(err, ErrLeaseLost), errors.Is(err, ErrClosed):
			default:
				if firstErr == nil {
					firstErr = err
				}
			}
		})
	}
	wg.Wait()
	return recorded, firstErr
}

type natsMsg = nats.Msg

// raiseFloor records that device's record reached rev, if a Connect of it
// is in flight. n.mu must be held.
func (n *Node) raiseFloor(device string, rev uint64) {
	if n.inflight[device] > 0 && rev > n.floor[device] {
		n.floor[device] = rev
	}
}

// epochNow returns the node's current epoch.
func (n *Node) epochNow() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.epoch
}
