package jobs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	schedule "github.com/go-schedule/schedule"
	"github.com/nats-io/nats.go/jetstream"
)

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
		// The engine did not answer (a server lost, a leader moving), or
		// the worker's lease has gone a whole lease unconfirmed: the
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
// start or the end unanswered, or when the worker may not start attempts
// (startable). A record running under this worker's epoch
// with no attempt of it here (see mineAbandonedLocked) is started again,
// as one of a dead epoch.
func (w *Worker) attempt(k string, rev uint64, val []byte) outcome {
	if !w.startable() {
		return outcomeUnclear // its lease unconfirmed for a whole lease: see startable
	}
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
		live := !mine && (w.runsHereLocked(h) || w.epochLiveLocked(h.Epoch))
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
	w.inflight[run.Run] = run.Epoch
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
