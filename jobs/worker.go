package jobs

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	schedule "github.com/go-schedule/schedule"
	"github.com/nats-io/nats.go/jetstream"
)

// entry is what a worker keeps per job of its partitions: no payload, and
// the KV key's bytes shared with the map's key. It is kept to 32 bytes:
// the epoch of a job running elsewhere, which few jobs have at once, is
// in Worker.running.
type entry struct {
	key  string          // the KV key
	rev  uint64          // the record's revision last seen
	task schedule.TaskID // its pending fire, or 0
}

// Worker runs the jobs of the partitions it holds. Start it with
// [Client.StartWorker] and stop it with [Worker.Stop]. Its methods are safe
// for concurrent use.
type Worker struct {
	c     *Client
	cfg   WorkerConfig
	log   *slog.Logger
	sched *schedule.Scheduler
	// fireFn is w.fire as a func value, made once in StartWorker. Passing
	// the method value w.fire at each schedule would allocate a closure
	// every time, and the scheduler keeps it for the job's whole pending
	// life: 16 more bytes per pending job.
	fireFn func(schedule.TaskID, any)

	// leaseMu serialises lease writes; epoch and leaseRev change under it.
	leaseMu    sync.Mutex
	epoch      string
	leaseRev   uint64
	draining   bool
	leaseEnded bool
	// heldUntil is when the lease runs out at the earliest, in Unix
	// nanoseconds: a lease TTL after the send of the last write the engine
	// confirmed (confirm). Starts wait while it has passed (startable).
	heldUntil atomic.Int64

	quit        chan struct{} // closed by Stop: the lease loop ends
	leaseDone   chan struct{}
	nodesW      jetstream.KeyWatcher
	nodesCancel context.CancelFunc
	nodesDone   chan struct{}

	// runCtx is every attempt's context; cancelling it abandons them.
	runCtx    context.Context
	abandon   context.CancelFunc
	attempts  sync.WaitGroup
	stopOnce  sync.Once
	stopErr   error
	watchesMu sync.Mutex // held while partition watches start or stop

	runs atomic.Uint64 // starts made, numbering each start's value

	// own is the worker's current epoch, readable without leaseMu: a
	// record running under it is this worker's own attempt, whether or
	// not the watch of the leases has delivered its lease yet.
	own atomic.Pointer[string]

	mu       sync.Mutex
	stopping bool
	live     map[string]leaseValue // node → lease, every live worker
	held     [Partitions]*partWatch
	entries  map[string]*entry
	running  map[string]string // KV key → epoch of the worker running it, for running entries
	// inflight holds the run numbers of this worker's attempts from their
	// start's write to their end's, each with the epoch it started under:
	// a record running under this worker's epoch with a run not in it is
	// an attempt this worker abandoned (mineAbandonedLocked), and one in
	// it runs here, under whichever epoch (runsHereLocked).
	inflight map[uint64]string
	// kept holds the value at the entry's revision of pending jobs due
	// within keepHorizon (see keepHorizon), and keptBytes their sizes.
	kept      map[string][]byte
	keptBytes int
}

// StartWorker registers a worker of the client's queue and starts taking
// jobs: it returns once the worker holds its lease, has read the leases
// there are, and has asked for the watches of the partitions they give
// it. A partition whose watch the engine refuses is logged to
// [WorkerConfig.Logger] and asked for again every third of a lease; it
// does not make StartWorker fail. It returns [ErrInvalidName],
// [ErrInvalidLease], [ErrInvalidWorkers], [ErrInvalidRetry] or
// [ErrNilHandler] for a bad cfg, and the engine's error if it cannot
// register before ctx ends or cannot watch the leases.
func (c *Client) StartWorker(ctx context.Context, cfg WorkerConfig) (*Worker, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	sched, err := schedule.New(cfg.Workers)
	if err != nil {
		return nil, err
	}
	w := &Worker{
		c: c, cfg: cfg, log: cfg.Logger, sched: sched,
		quit: make(chan struct{}), leaseDone: make(chan struct{}), nodesDone: make(chan struct{}),
		live: make(map[string]leaseValue), entries: make(map[string]*entry), running: make(map[string]string),
		inflight: make(map[uint64]string), kept: make(map[string][]byte),
	}
	w.fireFn = w.fire
	w.runCtx, w.abandon = context.WithCancel(context.Background())
	if err := w.register(ctx); err != nil {
		w.abandon()
		sched.Shutdown()
		return nil, fmt.Errorf("jobs: register node %s: %w", cfg.Node, err)
	}
	// The leases' watch lives until Stop, past ctx.
	wctx, wcancel := context.WithCancel(context.Background())
	w.nodesCancel = wcancel
	nw, err := c.nodes.WatchAll(wctx)
	if err != nil {
		wcancel()
		w.abandon()
		sched.Shutdown()
		return nil, err
	}
	w.nodesW = nw
	// The leases there are now, before the first share-out.
	for e := range nw.Updates() {
		if e == nil {
			break
		}
		w.noteLease(e)
	}
	w.rebalance()
	go w.followNodes()
	go w.leaseLoop()
	return w, nil
}

// Node returns the worker's node name.
func (w *Worker) Node() string { return w.cfg.Node }

func (w *Worker) emit(ev Event) {
	if w.cfg.OnEvent != nil {
		w.cfg.OnEvent(ev)
	}
}

// Pending returns how many jobs of its partitions the worker keeps track
// of: pending ones, and running ones, wherever they run. A dead job is not
// counted.
func (w *Worker) Pending() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.entries)
}

// Stop stops the worker. At once it starts no more attempts, marks its
// lease draining, so that the live workers take its partitions and fire
// its pending jobs on time, and lets go of its jobs. Then it waits, until
// grace ends, for its running attempts to end and record their ends. It
// abandons those still running (their handlers' context ends and their
// ends are not recorded), removes its lease, so that they start again on a
// live worker, and returns. It returns grace's error if grace ended
// before the running attempts did, and nil otherwise. Stop is idempotent:
// a later call returns, once the first has, what the first returned.
func (w *Worker) Stop(grace context.Context) error {
	w.stopOnce.Do(func() { w.stopErr = w.stop(grace) })
	return w.stopErr
}

func (w *Worker) stop(grace context.Context) error {
	w.mu.Lock()
	w.stopping = true
	for _, e := range w.entries {
		w.dropLocked(e)
	}
	w.mu.Unlock()

	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	w.leaseMu.Lock()
	w.draining = true
	if w.refresh(ctx, true) != leaseHeld {
		w.log.Warn("jobs: lease lost or unanswered while stopping", "node", w.cfg.Node)
	}
	w.leaseMu.Unlock()

	// No more watching: partitions first, then leases.
	// All at once, with one bound on the wait for their goroutines.
	w.watchesMu.Lock()
	w.mu.Lock()
	held := w.held
	w.held = [Partitions]*partWatch{}
	w.mu.Unlock()
	// Each Stop deletes its consumer with a request that waits up to the
	// client's timeout when the engine is gone: stop them side by side.
	for _, pw := range held {
		if pw != nil {
			go pw.stop()
		}
	}
	until := time.Now().Add(watchStopWait)
	for _, pw := range held {
		if pw != nil {
			waitAtMost(pw.done, time.Until(until))
		}
	}
	w.watchesMu.Unlock()
	go func() {
		_ = w.nodesW.Stop()
		w.nodesCancel()
	}()
	waitAtMost(w.nodesDone, watchStopWait)

	ended := make(chan struct{})
	go func() { w.attempts.Wait(); close(ended) }()
	var err error
	select {
	case <-ended:
	case <-grace.Done():
		err = grace.Err()
	}
	w.abandon()

	close(w.quit)
	<-w.leaseDone
	w.leaseMu.Lock()
	w.leaseEnded = true
	_ = w.c.nodes.Purge(ctx, w.cfg.Node, jetstream.LastRevision(w.leaseRev))
	w.leaseMu.Unlock()
	if err == nil {
		_ = w.sched.ShutdownContext(ctx)
	} else {
		w.sched.Shutdown()
	}
	return err
}
