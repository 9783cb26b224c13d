package schedule

import (
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/panjf2000/ants/v2"
)

// The runner: from "due" to "running".
//
// The owner appends due tasks to the run queue in deadline order and starts
// drains on the pool: a drain is one pool job that takes due tasks from the
// queue, one at a time, and runs their jobs until the queue is empty. At
// most workers drains exist at once, so at most workers of the scheduler's
// jobs run at once, and they start in deadline order.
//
// Why drains rather than one pool job per due task:
//   - Nothing here ever waits inside ants. New's pool is non-blocking and
//     WithPool accepts only non-blocking pools, so Submit either starts a
//     drain or refuses at once; a refused drain is retried on the owner's
//     own timer (owner.startDrains). The scheduler never depends on a
//     wake-up from ants: ants v2 can lose the wake-up of a blocked Submit
//     when one of its worker goroutines exits.
//   - The scheduler counts its drains itself (runQueue.active). A drain that
//     ends abnormally (its job calls runtime.Goexit, or the panic handler
//     panics) still leaves through its deferred exit (runner.endDrain), which
//     leaves its place and wakes the owner to start a replacement if
//     work is left.
//   - Handing a job to ants costs a lock, a channel send and a goroutine
//     wake-up; a drain takes its next job with one uncontended lock. Firing
//     allocates nothing: the drain function is made once, in New.
//   - Slots of finished one-shots are freed in batches, not one lock each.
//
// Drains are started one at a time, the way the Go runtime wakes idle
// processors: the owner starts a drain only when no other drain is starting
// (submitted, but not yet holding a job), and a drain that takes a job while
// more wait behind it starts one helper before it runs that job. Jobs that
// take long thus spread over up to workers drains, one start after another,
// while a handful of short jobs is run by one or two drains rather than
// waking a worker each, and the owner's Submit and the finishing drains do
// not fight over ants' lock.
//
// Jobs are taken one at a time, not in batches, so that a slow job never
// holds back jobs queued behind it while another drain could take them.

// due is a task in the run queue: what its run needs, as the owner found
// it when it handed the task over, so that the run need not look the task
// up in the slab. The run holds the task (flagRunning), so its slot and ID
// stay the task's until the run lets go.
type due struct {
	t    *task
	id   TaskID
	cell *any  // the task's argument cell (slab.held)
	when int64 // the deadline it runs for
	slot uint32
	// repeat is set for a repeating task's run, which a cancel may
	// overtake while it waits: a one-shot's is due, and a cancel no longer
	// changes it (task.changePending).
	repeat bool
}

// runQueue holds the due tasks and counts the drains that take from it. mu
// guards every field; the owner appends, drains take, and Shutdown closes.
// It keeps no task reachable that it no longer holds: what is taken is
// cleared.
//
// Invariants:
//   - active is the number of drains submitted to the pool (or about to be)
//     that have not left; it never exceeds the scheduler's workers.
//   - starting is the number of those that have not taken a job yet; it is
//     0 or 1, since a drain is started only while starting is 0.
//   - A drain leaves only when it finds the queue empty or closed, under mu,
//     so a non-empty open queue always has a drain that will take from it,
//     or the owner knows to start one (claim).
//   - refused is set while the pool refuses drains started by drains; they
//     then leave starting more to the owner, which retries on its timer.
//   - idle is closed exactly once: when closed is set and active is 0.
type runQueue struct {
	mu       sync.Mutex
	items    []due // items[head:] are queued, oldest first
	head     int
	limit    int // the scheduler's workers
	active   int
	starting int
	refused  bool
	closed   bool
	idle     chan struct{}
}

func (q *runQueue) init(limit int) {
	q.limit = limit
	q.idle = make(chan struct{})
}

// put appends batch. Called by the owner.
func (q *runQueue) put(batch []due) {
	q.mu.Lock()
	if q.head > slideAfter && q.head > len(q.items)/2 {
		// Slide the queued items down rather than grow past what is queued.
		n := copy(q.items, q.items[q.head:])
		clear(q.items[n:])
		q.items = q.items[:n]
		q.head = 0
	}
	q.items = append(q.items, batch...)
	q.mu.Unlock()
}

// claim reserves one new drain, for the owner, if jobs are queued, no drain is
// starting and fewer than limit are active. It clears refused: the owner
// retries a refused pool on its own timer. It reports whether the caller
// must submit a drain.
func (q *runQueue) claim() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.refused = false
	return q.claimLocked()
}

func (q *runQueue) claimLocked() bool {
	if q.closed || q.head == len(q.items) || q.starting > 0 || q.active >= q.limit {
		return false
	}
	q.active++
	q.starting++
	return true
}

// unclaim withdraws the claim on a drain that the pool refused, and tells
// drains to leave retrying to the owner.
func (q *runQueue) unclaim() {
	q.mu.Lock()
	q.active--
	q.starting--
	q.refused = true
	q.checkIdle()
	q.mu.Unlock()
}

// next takes the oldest queued task; it reports false when there is none
// or the queue is closed. first says that the drain is taking its first
// job, so it is no longer starting. helper reports that the caller must
// submit one more drain, claimed for it: jobs still wait behind this one.
func (q *runQueue) next(first bool) (d due, ok, helper bool) {
	q.mu.Lock()
	if first {
		q.starting--
	}
	if q.closed || q.head == len(q.items) {
		q.mu.Unlock()
		return due{}, false, false
	}
	d = q.items[q.head]
	q.items[q.head] = due{}
	q.head++
	if q.head == len(q.items) {
		q.rewind()
	} else if !q.refused {
		helper = q.claimLocked()
	}
	q.mu.Unlock()
	return d, true, helper
}

// leave ends a drain that found the queue empty. It reports false, and the
// drain must go on, when work arrived in the meantime.
func (q *runQueue) leave() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.closed && q.head < len(q.items) {
		return false
	}
	q.active--
	q.checkIdle()
	return true
}

// abandon ends a drain that is leaving abnormally, its job having ended its
// goroutine. first says that it had not taken a job yet. It reports whether
// jobs are left for a replacement.
func (q *runQueue) abandon(first bool) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if first {
		q.starting--
	}
	q.active--
	q.checkIdle()
	return !q.closed && q.head < len(q.items)
}

// takeAll empties the queue and returns what it held. With close set, the
// queue is closed for good too: drains then leave after their current job.
func (q *runQueue) takeAll(close bool) []due {
	q.mu.Lock()
	defer q.mu.Unlock()
	rest := append([]due(nil), q.items[q.head:]...)
	clear(q.items[q.head:])
	q.rewind()
	if close {
		q.closed = true
		q.checkIdle()
	}
	return rest
}

// counts returns the queued tasks and the active drains.
func (q *runQueue) counts() (queued, active int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.items) - q.head, q.active
}

// slideAfter: once more than slideAfter taken items, and more than half
// the buffer, lie before head, put slides the queued items down rather
// than grow the buffer past what is queued.
const slideAfter = 1024

// rewind empties the storage, and shrinks a buffer that a burst made large.
func (q *runQueue) rewind() {
	q.head = 0
	if cap(q.items) > bigBuffer {
		q.items = nil
	} else {
		q.items = q.items[:0]
	}
}

func (q *runQueue) checkIdle() {
	if q.closed && q.active == 0 {
		select {
		case <-q.idle:
		default:
			close(q.idle)
		}
	}
}

// runner starts drains and is what they run: it owns the run queue and the
// pool. The owner puts due tasks in q and calls start; everything else here
// runs on the pool's workers, one drain per worker.
type runner struct {
	q       runQueue
	pool    *ants.Pool
	drainFn func() // r.drain, made once so that submitting a drain allocates nothing
	clock          // for lateness
	slab    *slab
	genBase uint32 // the slab's generation base, with which a run ends its task's life
	inbox   *inbox // to wake the owner, and to see Shutdown (inbox.closed)
	out     *outcomes

	onPanic func(TaskID, any)
	logger  *slog.Logger // nil: slog.Default(), as it is when a job panics
}

// init sets the runner up: its jobs run on pool, at most workers at a
// time, and it reports a panic to onPanic, or else to logger (nil:
// slog.Default()).
func (r *runner) init(pool *ants.Pool, workers int, c clock, sl *slab, in *inbox, out *outcomes,
	onPanic func(TaskID, any), logger *slog.Logger) {
	*r = runner{pool: pool, clock: c, slab: sl, genBase: sl.base, inbox: in, out: out, onPanic: onPanic, logger: logger}
	r.q.init(workers)
	r.drainFn = r.drain
}

// start submits a drain if jobs are queued and no drain is starting;
// drains start helpers themselves as they find more jobs waiting. The pool
// never makes it wait: New's pool is non-blocking and WithPool accepts only
// non-blocking pools. It returns the pool's error when the pool refused the
// drain; the owner retries on its timer, or drops the queue if the pool was
// released.
func (r *runner) start() error {
	if !r.q.claim() {
		return nil
	}
	err := r.pool.Submit(r.drainFn)
	if err != nil {
		r.q.unclaim()
	}
	return err
}

// freeBatch collects the slots whose tasks' lives a drain's runs ended,
// free for reuse, to give them back to the slab under one lock per shard,
// freeBatchSize at a time at most.
type freeBatch struct {
	n     int
	slots [freeBatchSize]uint32
}

const freeBatchSize = 64

// drain is the pool job, on a pool worker: it runs due jobs until the
// queue is empty.
func (r *runner) drain() {
	var fb freeBatch
	left, first := false, true
	defer r.endDrain(&fb, &left, &first)
	for {
		d, ok, helper := r.q.next(first)
		first = false
		if !ok {
			r.flushFreed(&fb)
			if r.q.leave() {
				left = true
				return
			}
			continue
		}
		if helper {
			r.startHelper()
		}
		r.runJob(d, &fb)
	}
}

// startHelper submits the drain that next claimed, before the job that
// made it needed runs. If the pool refuses, the owner takes over: it
// retries on its timer, or drops the queue if the pool is gone. This drain
// goes on meanwhile.
func (r *runner) startHelper() {
	if err := r.pool.Submit(r.drainFn); err != nil {
		r.q.unclaim()
		r.inbox.wakeOwner()
	}
}

// endDrain runs as a drain ends, normally or not. A drain whose job ended
// its goroutine (runtime.Goexit, or a panic handler that panicked) leaves its
// place and wakes the owner to start a replacement for the work left.
func (r *runner) endDrain(fb *freeBatch, left, first *bool) {
	if *left {
		return
	}
	r.flushFreed(fb)
	if r.q.abandon(*first) {
		r.inbox.wakeOwner()
	}
}

// runJob runs the job of the due task d, unless it was cancelled while it
// waited or the scheduler has shut down since, and frees its slot (in
// fb's batch) if no one holds it any more. A one-shot's run goes to the
// task once (task.run): the task runs the job and lets go of it, and the
// runner counts the start before and deals with a panic around it. A job that
// panics or ends its goroutine does not come back through task.run: the
// run then lets go here, after the panic was dealt with, so that a
// repeating task's next run cannot start while its panic is reported.
func (r *runner) runJob(d due, fb *freeBatch) {
	reusable, ended := false, false
	defer func() {
		if !ended {
			reusable = d.t.endRun(r.genBase, d.cell)
		}
		if reusable {
			r.batchFree(d.slot, fb)
		}
	}()
	if d.repeat && d.t.isCancelled() {
		// A repeating task cancelled while its run waited for a worker: the
		// run has not started, so it never does.
		return
	}
	if r.inbox.closed.Load() {
		r.out.dropped.Add(1)
		return
	}
	r.out.started(r.now() - d.when)
	reusable, ended = r.call(d)
}

// call runs d's job through its task (task.run), recovering a panic so
// that neither the worker nor the scheduler goes down with it; it reports
// whether the job returned (ended), and whether the slot is then free for
// reuse. A panic handler that panics itself ends the drain (drains leave
// through endDrain) and reaches the pool's own handler.
func (r *runner) call(d due) (reusable, ended bool) {
	defer func() {
		if p := recover(); p != nil {
			r.out.panics.Add(1)
			switch {
			case r.onPanic != nil:
				r.onPanic(d.id, p)
			case r.logger != nil:
				r.logger.Error("schedule: job panicked", "task", uint64(d.id), "panic", p)
			default:
				slog.Error("schedule: job panicked", "task", uint64(d.id), "panic", p)
			}
		}
	}()
	return d.t.run(d.id, r.genBase, d.cell), true
}

// batchFree adds slot, whose task's life has ended and which is free for
// reuse, to fb, giving the batch back when it is full.
func (r *runner) batchFree(slot uint32, fb *freeBatch) {
	fb.slots[fb.n] = slot
	fb.n++
	if fb.n == len(fb.slots) {
		r.flushFreed(fb)
	}
}

// flushFreed gives the slots in fb back to the slab, and wakes the owner
// when the slab then has chunks to trim.
func (r *runner) flushFreed(fb *freeBatch) {
	if fb.n == 0 {
		return
	}
	if r.slab.vacate(fb.slots[:fb.n]) {
		r.inbox.wakeOwner()
	}
	fb.n = 0
}

// dropQueued drops every queued job: the pool they were to run on is gone.
func (r *runner) dropQueued() { r.dropDue(r.q.takeAll(false)) }

// close closes the run queue at Shutdown and drops the jobs no drain has
// taken.
func (r *runner) close() { r.dropDue(r.q.takeAll(true)) }

// dropDue lets go of due tasks that will never run, counting each in
// Stats.Dropped unless it was cancelled.
func (r *runner) dropDue(ds []due) {
	var fb freeBatch
	for _, d := range ds {
		if !d.repeat || !d.t.isCancelled() {
			r.out.dropped.Add(1)
		}
		if d.t.endRun(r.genBase, d.cell) {
			r.batchFree(d.slot, &fb)
		}
	}
	r.flushFreed(&fb)
}

// outcomes counts what became of jobs, for Stats. Runs count the jobs they
// start (starts, lateness) and those that panicked or that they had to drop;
// the owner counts the runs it skipped and the tasks it dropped at
// Shutdown.
type outcomes struct {
	starts      atomic.Uint64
	panics      atomic.Uint64
	dropped     atomic.Uint64
	skipped     atomic.Uint64
	maxLateness atomic.Int64
	// lateness counts starts by lateness bucket, and lateSum adds up their
	// lateness, in nanoseconds.
	lateSum  atomic.Int64
	lateness [LatenessBuckets]atomic.Uint64
}

// started counts a job that started late nanoseconds after its deadline.
// It allocates nothing: a few atomic adds, and a scan of the bounds that
// stops at the first one above late, so on-time starts cost the least.
func (c *outcomes) started(late int64) {
	c.starts.Add(1)
	raiseTo(&c.maxLateness, late)
	c.lateSum.Add(late)
	i := 0
	for i < len(latenessBounds) && late > int64(latenessBounds[i]) {
		i++
	}
	c.lateness[i].Add(1)
}

// raiseTo sets v to x if x is larger.
func raiseTo(v *atomic.Int64, x int64) {
	for {
		cur := v.Load()
		if x <= cur || v.CompareAndSwap(cur, x) {
			return
		}
	}
}
