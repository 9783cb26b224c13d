package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

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
	return !w.runsHereLocked(h)
}

// runsHereLocked reports whether h, a running record, is the start of an
// attempt that runs in this worker now. Its epoch may be an earlier one of
// this worker's: one it registered again after, its lease having run out.
// That attempt is not abandoned, and must not start a second time here
// while it runs; its end is recorded as usual, unless another worker took
// it over meanwhile.
func (w *Worker) runsHereLocked(h header) bool {
	epoch, ok := w.inflight[h.Run]
	return ok && epoch == h.Epoch && h.Node == w.cfg.Node
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
		// k is cut from the watch message's subject. The entry keeps a
		// copy of its own, so that the subject, longer by the bucket's
		// name, is not kept for the job's whole pending life; the maps
		// below key on that copy too.
		e = &entry{key: strings.Clone(k)}
		w.entries[e.key] = e
	}
	k = e.key
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
	case w.runsHereLocked(h) || w.epochLiveLocked(h.Epoch):
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
