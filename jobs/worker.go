package jobs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	schedule "github.com/go-schedule/schedule"
	"github.com/nats-io/nats.go/jetstream"
)

// Defaults of [WorkerConfig].
const (
	DefaultLease   = 15 * time.Second
	DefaultWorkers = 16
)

// DefaultRetry is the waits after failed attempts 1 to 5 when
// [WorkerConfig.Retry] is nil.
var DefaultRetry = []time.Duration{time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 20 * time.Second}

// opTimeout bounds one engine request of an attempt (its start or end
// write, the read before it).
const opTimeout = 10 * time.Second

// startTimeout bounds an attempt's start (a read and a compare-and-set):
// a start the engine leaves unanswered that long is tried again, so that a
// request stuck on a lost server does not hold the job.
const startTimeout = 3 * time.Second

// casTries bounds how often an attempt's write is tried again when the
// engine's answer leaves it unclear whether the write applied.
const casTries = 5

// staleRead is the pause before reading a record again when a replica
// answered with a revision older than the one the worker has seen.
const staleRead = 20 * time.Millisecond

var (
	// ErrInvalidLease is returned for a lease that is not whole seconds of
	// at least one.
	ErrInvalidLease = errors.New("jobs: a lease is whole seconds, at least 1s")
	// ErrInvalidWorkers is returned for fewer than one worker.
	ErrInvalidWorkers = errors.New("jobs: workers must be at least 1")
	// ErrInvalidRetry is returned for a retry wait that is not positive.
	ErrInvalidRetry = errors.New("jobs: retry waits must be positive")
	// ErrNilHandler is returned for a WorkerConfig without a Handler.
	ErrNilHandler = errors.New("jobs: a worker needs a handler")
)

// Job is what a handler gets: one attempt of one job.
type Job struct {
	Key     string
	Payload []byte
	Attempt int       // 1 for the first attempt
	Due     time.Time // the attempt's due time, to the millisecond
}

// Handler runs one attempt. A nil error makes the job done; an error (or a
// panic) makes it due again after the next retry wait, or dead when none
// is left. ctx ends when the worker abandons the attempt ([Worker.Stop]'s
// grace ran out): a handler should then return soon.
type Handler func(ctx context.Context, j Job) error

// EventKind names an Event.
type EventKind string

// The events a worker reports.
const (
	EventStart      EventKind = "start"
	EventDone       EventKind = "done"
	EventFail       EventKind = "fail"
	EventDead       EventKind = "dead"
	EventSuperseded EventKind = "superseded"
)

// Event reports an attempt's start or end. Each start is followed by one
// end event, unless the worker abandons the attempt ([Worker.Stop]'s grace
// ran out) or the engine left its end unrecorded for a minute of tries (a
// warning on [WorkerConfig.Logger]); such an attempt starts again once the
// worker's lease is gone.
type Event struct {
	Kind    EventKind
	Key     string
	Attempt int
	Due     time.Time // start: the attempt's due time
	At      time.Time // when it started or ended
	Next    time.Time // fail: when the next attempt is due
	Node    string
}

// WorkerConfig configures a worker.
type WorkerConfig struct {
	// Node names the worker, [A-Za-z0-9_-]{1,64}; required. A worker
	// restarted under the same name takes over the lease of its earlier
	// life. Two live workers must not share a name.
	Node string
	// Lease is how long a worker killed without warning holds its jobs:
	// whole seconds, at least 1s; 0 means [DefaultLease].
	Lease time.Duration
	// Workers is how many attempts run at once; 0 means [DefaultWorkers].
	Workers int
	// Retry holds the waits after failed attempts: attempt N+1 is due
	// Retry[N-1] after attempt N failed, and a failure with no wait left
	// makes the job dead. Nil means [DefaultRetry]; empty means no retries.
	Retry []time.Duration
	// Handler runs the attempts; required.
	Handler Handler
	// OnEvent, if not nil, is called for every start and end, from the
	// goroutine of the attempt: calls for different attempts run
	// concurrently, so OnEvent must be safe for concurrent use, and an
	// attempt's end is recorded before its end event is reported.
	OnEvent func(Event)
	// Logger receives what the worker cannot report otherwise; nil means
	// slog.Default().
	Logger *slog.Logger
}

func (c *WorkerConfig) validate() error {
	if !ValidName(c.Node) {
		return ErrInvalidName
	}
	if c.Lease == 0 {
		c.Lease = DefaultLease
	}
	if c.Lease < time.Second || c.Lease%time.Second != 0 {
		return ErrInvalidLease
	}
	if c.Workers == 0 {
		c.Workers = DefaultWorkers
	}
	if c.Workers < 1 {
		return ErrInvalidWorkers
	}
	if c.Retry == nil {
		c.Retry = DefaultRetry
	}
	// The worker keeps a copy: neither a later change to DefaultRetry nor
	// one to the caller's slice reaches a running worker.
	c.Retry = slices.Clone(c.Retry)
	for _, d := range c.Retry {
		if d <= 0 {
			return ErrInvalidRetry
		}
	}
	if c.Handler == nil {
		return ErrNilHandler
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return nil
}

// entry is what a worker keeps per job of its partitions: no payload, and
// the KV key's bytes shared with the map's key. It is kept to 32 bytes:
// the epoch of a job running elsewhere, which few jobs have at once, is
// in Worker.running.
type entry struct {
	key  string          // the KV key
	rev  uint64          // the record's revision last seen
	task schedule.TaskID // its pending fire, or 0
}

// partWatch is the watch of one partition the worker holds: an ordered
// consumer of the partition's records, which the client replaces when its
// heartbeats stop (see watchBeat).
type partWatch struct {
	cc   jetstream.ConsumeContext
	done <-chan struct{} // closed once the consumer has stopped delivering
}

// stop ends the watch; done closes once its last delivery has returned.
func (pw *partWatch) stop() { pw.cc.Stop() }

// watchBeat is how often the engine tells a partition's watch that it is
// alive while no record changes. A KV watch (a push consumer with the
// client's default idle heartbeat of 5 s) whose consumer was on a server
// that died stayed silent about 20 s before the client replaced it, and an
// update meant for it (a job replaced to run sooner) waited as long. With
// a pull consumer beating every second, the client replaces a silent one
// after two missed beats. The beats cost the engine one message a second
// per partition held, whatever the number of jobs.
const watchBeat = time.Second

// keepHorizon is how far ahead of its due time a pending record's value,
// as the watch delivered it, is kept until its fire, so that the start
// needs no read of the record: its compare-and-set on the revision the
// watch delivered fences it as the read did. A job due later keeps no
// payload in the worker; its fire reads the record. What is kept is
// bounded by the rate of jobs coming due times the horizon, and by
// keepBytes.
const keepHorizon = 10 * time.Second

// keepBytes bounds the bytes of the values a worker keeps at once (see
// keepHorizon); a value past it is not kept, and its fire reads it.
const keepBytes = 32 << 20

// watchGone is how long a partition's consumer outlives its watch's end in
// the engine, for the watches that end without a word to it: a worker
// killed, or a consumer replaced after its server went silent.
const watchGone = 30 * time.Second

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
	// start's write to their end's: a record running under this worker's
	// epoch with a run not in it is an attempt this worker abandoned
	// (mineAbandonedLocked).
	inflight map[uint64]struct{}
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
		inflight: make(map[uint64]struct{}), kept: make(map[string][]byte),
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

// noteLease records a lease update.
func (w *Worker) noteLease(e jetstream.KeyValueEntry) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if e.Operation() != jetstream.KeyValuePut {
		delete(w.live, e.Key())
		return
	}
	var lv leaseValue
	if err := json.Unmarshal(e.Value(), &lv); err != nil {
		delete(w.live, e.Key())
		return
	}
	w.live[e.Key()] = lv
}

// followNodes applies lease updates until the worker stops.
func (w *Worker) followNodes() {
	defer close(w.nodesDone)
	for e := range w.nodesW.Updates() {
		if e == nil {
			continue
		}
		w.noteLease(e)
		w.rebalance()
	}
}

// relist drops from the live set every node whose lease the engine no
// longer lists: an expiry marker a watch missed must not leave a dead
// worker's jobs stranded.
func (w *Worker) relist(ctx context.Context) {
	keys, err := w.c.nodes.Keys(ctx)
	if err != nil && !errors.Is(err, jetstream.ErrNoKeysFound) {
		return
	}
	w.mu.Lock()
	changed := false
	for n := range w.live {
		if !slices.Contains(keys, n) {
			delete(w.live, n)
			changed = true
		}
	}
	w.mu.Unlock()
	if changed {
		w.rebalance()
	}
}

// rebalance holds the partitions the live set gives this worker, lets go
// of the others, and makes due at once the attempts of workers no longer
// live.
func (w *Worker) rebalance() {
	w.watchesMu.Lock()
	defer w.watchesMu.Unlock()
	w.mu.Lock()
	if w.stopping {
		w.mu.Unlock()
		return
	}
	var nodes []string
	for n, lv := range w.live {
		if !lv.Draining {
			nodes = append(nodes, n)
		}
	}
	if !slices.Contains(nodes, w.cfg.Node) {
		nodes = append(nodes, w.cfg.Node) // its own lease may not be seen yet
	}
	var gain, lose []int
	for p := range Partitions {
		mine := owner(nodes, p) == w.cfg.Node
		switch {
		case mine && w.held[p] == nil:
			gain = append(gain, p)
		case !mine && w.held[p] != nil:
			lose = append(lose, p)
		}
	}
	// Attempts recorded running under an epoch this view does not hold
	// are fired, and the fire reads that worker's lease: it starts the
	// attempt again if the epoch is over. The scan walks the jobs running
	// elsewhere only, few at any time, so a lease refresh costs no pass
	// over the pending jobs. It runs at every share-out, not only when an
	// epoch leaves the view: an epoch found alive by reading its lease may
	// never have been in the view, and its end would go unnoticed.
	for k, ep := range w.running {
		if !w.epochLiveLocked(ep) {
			delete(w.running, k)
			if e := w.entries[k]; e != nil {
				w.scheduleLocked(e, time.Time{})
			}
		}
	}
	w.mu.Unlock()
	for _, p := range lose {
		w.release(p)
	}
	for _, p := range gain {
		if err := w.hold(p); err != nil {
			w.log.Warn("jobs: watch partition", "partition", p, "err", err)
		}
	}
}

// mineAbandonedLocked reports whether h, a running record, is an attempt
// of this worker's current epoch that no attempt here runs: one whose
// start's answer never came, or whose end could not be written.
func (w *Worker) mineAbandonedLocked(h header) bool {
	own := w.own.Load()
	if own == nil || *own != h.Epoch || h.Node != w.cfg.Node {
		return false
	}
	_, running := w.inflight[h.Run]
	return !running
}

// epochLiveLocked reports whether epoch is this worker's or a live
// worker's as far as this worker has seen. False does not mean dead: the
// lease of a worker that registered since may not have reached this
// worker yet; epochAlive settles that.
func (w *Worker) epochLiveLocked(epoch string) bool {
	if own := w.own.Load(); own != nil && *own == epoch {
		return true
	}
	for _, lv := range w.live {
		if lv.Epoch == epoch {
			return true
		}
	}
	return false
}

// hold starts watching partition p.
func (w *Worker) hold(p int) error {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	cons, err := w.c.js.OrderedConsumer(ctx, kvStream(w.c.jobsBucket()), jetstream.OrderedConsumerConfig{
		FilterSubjects:    []string{kvSubject(w.c.jobsBucket(), partitionPrefix(p)+".>")},
		DeliverPolicy:     jetstream.DeliverLastPerSubjectPolicy,
		InactiveThreshold: watchGone,
	})
	if err != nil {
		return err
	}
	prefix := kvSubject(w.c.jobsBucket(), "")
	cc, err := cons.Consume(func(m jetstream.Msg) {
		if u, ok := msgUpdate(m, prefix); ok {
			w.apply(u)
		}
	}, jetstream.PullHeartbeat(watchBeat))
	if err != nil {
		return err
	}
	pw := &partWatch{cc: cc, done: cc.Closed()}
	w.mu.Lock()
	w.held[p] = pw
	w.mu.Unlock()
	return nil
}

// release stops watching partition p and forgets its jobs; their attempts
// running here run to their ends.
func (w *Worker) release(p int) {
	w.mu.Lock()
	pw := w.held[p]
	w.held[p] = nil
	w.mu.Unlock()
	if pw == nil {
		return
	}
	pw.stop()
	// The watch's channel closes once the client has unsubscribed; with
	// the engine unreachable that can wait for the connection's end, and
	// letting go must not.
	waitAtMost(pw.done, watchStopWait)
	w.mu.Lock()
	defer w.mu.Unlock()
	for k, e := range w.entries {
		if partitionOfKV(k) == p {
			w.dropLocked(e)
		}
	}
}

func (w *Worker) dropLocked(e *entry) {
	if e.task != 0 {
		w.sched.CancelTask(e.task)
		e.task = 0
	}
	delete(w.entries, e.key)
	delete(w.running, e.key)
	w.takeKeptLocked(e.key)
}

// takeKeptLocked returns and forgets the value kept for KV key k, or nil.
func (w *Worker) takeKeptLocked(k string) []byte {
	v, ok := w.kept[k]
	if ok {
		delete(w.kept, k)
		w.keptBytes -= cap(v)
	}
	return v
}

// keepLocked keeps v, the value of k's entry at its revision, in place
// of any kept before, if the bound on kept bytes allows.
func (w *Worker) keepLocked(k string, v []byte) {
	w.takeKeptLocked(k)
	if w.keptBytes+cap(v) <= keepBytes {
		w.kept[k] = v
		w.keptBytes += cap(v)
	}
}

// scheduleLocked arms e's fire at due (now, for the zero time).
func (w *Worker) scheduleLocked(e *entry, due time.Time) {
	if e.task != 0 {
		w.sched.CancelTask(e.task)
		e.task = 0
	}
	id, err := w.sched.ScheduleAtWith(w.fireFn, e, due)
	if err != nil {
		return // shut down
	}
	e.task = id
}

// update is a change of one job record: as a partition's watch delivers
// it, or as a read finds it.
type update struct {
	key   string // the KV key
	rev   uint64
	put   bool // false for a delete or purge marker
	value []byte
}

// entryUpdate is the update a KV read returned.
func entryUpdate(e jetstream.KeyValueEntry) update {
	return update{key: e.Key(), rev: e.Revision(), put: e.Operation() == jetstream.KeyValuePut, value: e.Value()}
}

// msgUpdate is the update a message of the jobs bucket's stream carries,
// its subject prefix being the bucket's; false for a message that is not
// a record's.
func msgUpdate(m jetstream.Msg, prefix string) (update, bool) {
	key, ok := strings.CutPrefix(m.Subject(), prefix)
	meta, err := m.Metadata()
	if !ok || err != nil {
		return update{}, false
	}
	u := update{key: key, rev: meta.Sequence.Stream, put: true, value: m.Data()}
	// A delete, a purge or an expiry leaves a marker in the key's place.
	if h := m.Headers(); h.Get(kvOperation) != "" || h.Get(jetstream.MarkerReasonHeader) != "" {
		u.put = false
	}
	return u, true
}

// apply brings a job's entry up to a record the watch delivered or a read
// found.
func (w *Worker) apply(u update) {
	k, rev := u.key, u.rev
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopping {
		return
	}
	e := w.entries[k]
	if e != nil && rev <= e.rev {
		return
	}
	if !u.put {
		if e != nil {
			w.dropLocked(e)
		}
		return
	}
	h, _, ok := decodeRecord(u.value)
	if !ok || h.State == StateDead {
		if e != nil {
			w.dropLocked(e)
		}
		return
	}
	if e == nil {
		e = &entry{key: k}
		w.entries[k] = e
	}
	e.rev = rev
	delete(w.running, k)
	w.takeKeptLocked(k)
	switch {
	case h.State == StatePending:
		due := time.UnixMilli(h.Due)
		if time.Until(due) < keepHorizon {
			w.keepLocked(k, u.value)
		}
		w.scheduleLocked(e, due)
	case w.mineAbandonedLocked(h):
		// A start of this worker's whose answer never came, or an attempt
		// whose end could not be written: no one runs it, and no lease
		// will end to hand it over while this worker lives. Started again
		// here, now.
		w.scheduleLocked(e, time.Time{})
	case w.epochLiveLocked(h.Epoch):
		w.running[k] = h.Epoch
		if e.task != 0 {
			w.sched.CancelTask(e.task)
			e.task = 0
		}
	default:
		// Running under an epoch this worker does not know: its worker
		// may be gone, or may have registered since this worker last saw
		// the leases. The attempt, fired now, reads that worker's lease
		// and starts the job again only if the epoch is over.
		w.running[k] = h.Epoch
		w.scheduleLocked(e, time.Time{})
	}
}

// fire is the scheduler's job for a due entry.
func (w *Worker) fire(id schedule.TaskID, arg any) {
	e := arg.(*entry)
	w.mu.Lock()
	if w.stopping || w.entries[e.key] != e || e.task != id {
		w.mu.Unlock()
		return
	}
	e.task = 0
	k, rev := e.key, e.rev
	val := w.takeKeptLocked(k)
	w.attempts.Add(1)
	w.mu.Unlock()
	defer w.attempts.Done()
	if w.attempt(k, rev, val) == outcomeUnclear {
		// The engine did not answer (a server lost, a leader moving): the
		// record is as the worker last saw it, or running under a start or
		// an end of this worker's that landed unanswered, which the watch
		// may have delivered meanwhile. Fire it again shortly, unless the
		// watch has armed it again.
		w.mu.Lock()
		if !w.stopping && w.entries[k] == e && e.task == 0 {
			w.scheduleLocked(e, time.Now().Add(retryUnclear))
		}
		w.mu.Unlock()
	}
}

// watchStopWait bounds the wait for a stopped watch's goroutine.
const watchStopWait = 2 * time.Second

// waitAtMost waits until ch is closed or d has passed.
func waitAtMost(ch <-chan struct{}, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
	case <-t.C:
	}
}

// retryUnclear is the pause before a start the engine left unanswered is
// tried again.
const retryUnclear = 250 * time.Millisecond

// endPatience bounds how long an attempt's end write is retried while the
// engine does not answer; past it, the record stays running under this
// worker's epoch, and the attempt starts again (at-least-once): here, once
// the engine answers the fire that follows, or elsewhere if this worker's
// lease ends first.
const endPatience = time.Minute

// outcome is how a write to the engine went.
type outcome uint8

const (
	outcomeApplied outcome = iota // written
	outcomeMoved                  // the record moved: someone else wrote it
	outcomeUnclear                // no clear answer: the record may be unchanged
)

// read returns the record under k at revision rev or later, reading again
// while a replica answers with an older one.
func (w *Worker) read(ctx context.Context, k string, rev uint64) (jetstream.KeyValueEntry, error) {
	for try := 0; ; try++ {
		e, err := w.c.jobs.Get(ctx, k)
		if err != nil || e.Revision() >= rev || try == casTries {
			return e, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(staleRead):
		}
	}
}

// readAt reads the record under k, expected at revision rev: it returns
// the entry and outcomeApplied if it is still there, outcomeMoved if it
// moved on or is gone, and outcomeUnclear if the engine did not answer.
func (w *Worker) readAt(ctx context.Context, k string, rev uint64) (jetstream.KeyValueEntry, outcome) {
	kve, err := w.read(ctx, k, rev)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, outcomeMoved
	}
	if err != nil || kve.Revision() < rev {
		return nil, outcomeUnclear
	}
	if kve.Revision() != rev {
		// Moved on. The watch brings the newer record too, but a watch
		// whose server died can stall for many seconds without an error:
		// act on the record read here rather than wait for it.
		w.apply(entryUpdate(kve))
		return nil, outcomeMoved
	}
	return kve, outcomeApplied
}

// cas writes val under k if its revision is still rev, and returns the new
// revision. An answer that leaves it unclear (lost, or refused while an
// earlier write of the key is applied on a replicated bucket) is settled
// by reading the record.
func (w *Worker) cas(ctx context.Context, k string, val []byte, rev uint64) (uint64, outcome) {
	for range casTries {
		nrev, err := w.c.jobs.Update(ctx, k, val, rev)
		if err == nil {
			return nrev, outcomeApplied
		}
		e, gerr := w.c.jobs.Get(ctx, k)
		switch {
		case errors.Is(gerr, jetstream.ErrKeyNotFound):
			return 0, outcomeMoved
		case gerr != nil:
			continue
		case bytes.Equal(e.Value(), val):
			return e.Revision(), outcomeApplied
		case e.Revision() > rev:
			return 0, outcomeMoved
		}
	}
	return 0, outcomeUnclear
}

// finish removes k's record if its revision is still rev. A record found
// gone after a refusal was removed by someone else (moved); found gone
// after an answer that never came, it may be this removal that landed.
func (w *Worker) finish(ctx context.Context, k string, rev uint64) outcome {
	unclear := false
	for range casTries {
		err := w.c.jobs.Purge(ctx, k, jetstream.LastRevision(rev), jetstream.PurgeTTL(markerTTL))
		if err == nil {
			return outcomeApplied
		}
		if !errors.Is(err, jetstream.ErrKeyExists) {
			unclear = true
		}
		e, gerr := w.c.jobs.Get(ctx, k)
		switch {
		case errors.Is(gerr, jetstream.ErrKeyNotFound):
			if unclear {
				return outcomeApplied
			}
			return outcomeMoved
		case gerr != nil:
			continue
		case e.Revision() > rev:
			return outcomeMoved
		}
		// Still at rev: the refusal came while an earlier write of the
		// key was being applied. Try again.
	}
	return outcomeUnclear
}

// persist runs write until its outcome is clear, endPatience has passed
// or the attempt is abandoned, pausing between tries.
func (w *Worker) persist(write func(ctx context.Context) outcome) outcome {
	deadline := time.Now().Add(endPatience)
	pause := retryUnclear
	for {
		ctx, cancel := context.WithTimeout(w.runCtx, opTimeout)
		o := write(ctx)
		cancel()
		if o != outcomeUnclear || time.Now().After(deadline) || w.runCtx.Err() != nil {
			return o
		}
		select {
		case <-w.runCtx.Done():
			return o
		case <-time.After(pause):
		}
		pause = min(2*pause, 2*time.Second)
	}
}

// attempt starts the attempt recorded under k at revision rev, if it is
// still due and still there, runs it and records its end. val is the
// record's value at rev as the watch delivered it, or nil: the record is
// then read first. It returns outcomeUnclear when the engine left the
// start or the end unanswered. A record running under this worker's epoch
// with no attempt of it here (see mineAbandonedLocked) is started again,
// as one of a dead epoch.
func (w *Worker) attempt(k string, rev uint64, val []byte) outcome {
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	fromWatch := val != nil
	if !fromWatch {
		kve, o := w.readAt(ctx, k, rev)
		if o != outcomeApplied {
			return o
		}
		val = kve.Value()
	}
	h, payload, ok := decodeRecord(val)
	if !ok {
		return outcomeMoved
	}
	now := time.Now()
	switch h.State {
	case StatePending:
		if now.UnixMilli() < h.Due {
			// Never early: due again at its time.
			w.mu.Lock()
			if e := w.entries[k]; e != nil && e.rev == rev && !w.stopping {
				w.keepLocked(k, val)
				w.scheduleLocked(e, time.UnixMilli(h.Due))
			}
			w.mu.Unlock()
			return outcomeApplied
		}
	case StateRunning:
		w.mu.Lock()
		mine := w.mineAbandonedLocked(h) // started again, as a dead epoch's
		live := !mine && w.epochLiveLocked(h.Epoch)
		w.mu.Unlock()
		if !live && !mine {
			// Not an epoch this worker has seen: only the engine can tell
			// a worker that is gone from one whose lease has not reached
			// this worker yet. One read, only in this rare case.
			alive, err := w.epochAlive(ctx, h.Node, h.Epoch)
			if err != nil {
				return outcomeUnclear
			}
			live = alive
		}
		if live {
			w.mu.Lock()
			if e := w.entries[k]; e != nil && e.rev == rev {
				w.running[k] = h.Epoch
			}
			w.mu.Unlock()
			return outcomeMoved
		}
	default:
		return outcomeMoved
	}
	key, ok := jobKey(k)
	if !ok {
		return outcomeMoved
	}
	// The start: compare-and-set from the revision this worker saw. A
	// worker that lost the partition, or a second fire, fails here.
	// Run makes the value this start writes its own: a read that finds it
	// tells this start's write from another start's by the same worker.
	run := header{State: StateRunning, Due: h.Due, Attempt: h.Attempt, Node: w.cfg.Node, Epoch: w.currentEpoch(), Started: now.UnixMilli(), Run: w.runs.Add(1)}
	w.mu.Lock()
	w.inflight[run.Run] = struct{}{}
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		delete(w.inflight, run.Run)
		w.mu.Unlock()
	}()
	rev2, o := w.cas(ctx, k, encodeRecord(run, payload), rev)
	if o == outcomeMoved && fromWatch {
		// Moved since rev, which a start from the watch's value learns
		// only here: act on the record as it is now, as after a read that
		// found it moved (see readAt).
		_, _ = w.readAt(ctx, k, rev)
	}
	if o != outcomeApplied {
		return o
	}
	due := time.UnixMilli(h.Due)
	w.emit(Event{Kind: EventStart, Key: key, Attempt: h.Attempt, Due: due, At: time.Now(), Node: w.cfg.Node})
	herr := w.call(Job{Key: key, Payload: payload, Attempt: h.Attempt, Due: due})
	if w.runCtx.Err() != nil {
		return outcomeApplied // abandoned: no end is recorded; the job starts elsewhere
	}
	end := time.Now()
	ev := Event{Key: key, Attempt: h.Attempt, At: end, Node: w.cfg.Node}
	var write func(ctx context.Context) outcome
	switch {
	case herr == nil:
		ev.Kind = EventDone
		write = func(ctx context.Context) outcome { return w.finish(ctx, k, rev2) }
	case h.Attempt <= len(w.cfg.Retry):
		ev.Kind, ev.Next = EventFail, end.Add(w.cfg.Retry[h.Attempt-1])
		val := encodeRecord(header{State: StatePending, Due: ev.Next.UnixMilli(), Attempt: h.Attempt + 1}, payload)
		write = func(ctx context.Context) outcome { _, o := w.cas(ctx, k, val, rev2); return o }
	default:
		ev.Kind = EventDead
		val := encodeRecord(header{State: StateDead, Attempt: h.Attempt}, payload)
		write = func(ctx context.Context) outcome { _, o := w.cas(ctx, k, val, rev2); return o }
	}
	switch w.persist(write) {
	case outcomeMoved:
		ev.Kind, ev.Next = EventSuperseded, time.Time{}
	case outcomeUnclear:
		// Not recorded: like an abandoned attempt, no end line. The record
		// stays running under this epoch, and the fire that comes next
		// starts the attempt again once the engine answers.
		w.log.Warn("jobs: an attempt's end could not be recorded", "job", key, "attempt", h.Attempt)
		return outcomeUnclear
	}
	w.emit(ev)
	return outcomeApplied
}

// call runs the handler, turning a panic into an error.
func (w *Worker) call(j Job) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("jobs: handler panicked: %v", r)
		}
	}()
	return w.cfg.Handler(w.runCtx, j)
}

func (w *Worker) emit(ev Event) {
	if w.cfg.OnEvent != nil {
		w.cfg.OnEvent(ev)
	}
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
	if !w.refresh(ctx, true) {
		w.log.Warn("jobs: lease lost while stopping", "node", w.cfg.Node)
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
