package schedule

import (
	"log/slog"
	"sync"
	"sync/atomic"
)

// The firing path, from "due" to "running".
//
// The owner appends due tasks to the run queue in deadline order and starts
// drain runs on the pool: a run is one pool job that takes due tasks from
// the queue, one at a time, and runs them until the queue is empty. At most
// workers runs exist at once, so at most workers of the scheduler's jobs run
// at once, and they start in deadline order.
//
// Why runs rather than one pool job per due task:
//   - Nothing here ever waits inside ants. New's pool is non-blocking and
//     WithPool accepts only non-blocking pools, so Submit either starts a run
//     or refuses at once; a refused run is retried on the owner's own timer
//     (owner.go). The scheduler never depends on a wake-up from ants, which
//     can be lost when a worker goroutine exits (FACTS: ants v2.12.1).
//   - The scheduler counts its runs itself (runQueue.active). A run that ends
//     abnormally (its job calls runtime.Goexit, or the panic handler panics)
//     still leaves through its deferred exit, which gives its place back and
//     wakes the owner to start a replacement if work is left.
//   - Handing a job to ants costs a lock, a channel send and a goroutine
//     wake-up; a run takes its next job with one uncontended lock. Firing
//     allocates nothing: the run function is made once, in New.
//   - Slots of finished one-shots are freed in batches, not one lock each.
//
// Runs are started one at a time, the way the Go runtime wakes idle
// processors: the owner starts a run only when no other run is starting
// (submitted, but not yet holding a job), and a run that takes a job while
// more wait behind it starts one helper before it runs that job. Jobs that
// take long thus spread over up to workers runs, one start after another,
// while a handful of short jobs is run by one or two runs rather than
// waking a worker each. Starting a run per queued job instead made the
// owner's Submit and the finishing runs fight over ants' spin lock, and
// cost a third of the CPU of every sparse fire.
//
// Jobs are taken one at a time, not in batches, so that a slow job never
// holds back jobs queued behind it while another run could take them.

// due is a task in the run queue, with the deadline it runs for.
type due struct {
	slot uint32
	when int64
}

// runQueue holds the due tasks and counts the runs that drain it. mu
// guards every field; the owner appends, runs take, and Shutdown closes.
//
// Invariants:
//   - active is the number of runs submitted to the pool (or about to be)
//     that have not left; it never exceeds the scheduler's workers.
//   - starting is the number of those that have not taken a job yet; it is
//     0 or 1, since a run is started only while starting is 0.
//   - A run leaves only when it finds the queue empty or closed, under mu,
//     so a non-empty open queue always has a run that will take from it, or
//     the owner knows to start one (claim).
//   - refused is set while the pool refuses runs started by runs; they then
//     leave starting more to the owner, which retries on its timer.
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
	if q.head > 1024 && q.head > len(q.items)/2 {
		// Slide the queued items down rather than grow past what is queued.
		n := copy(q.items, q.items[q.head:])
		q.items = q.items[:n]
		q.head = 0
	}
	q.items = append(q.items, batch...)
	q.mu.Unlock()
}

// claim reserves one new run, for the owner, if jobs are queued, no run is
// starting and fewer than limit are active. It clears refused: the owner
// retries a refused pool on its own timer. It reports whether the caller
// must submit a run.
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

// unclaim gives back a claimed run that the pool refused, and tells runs
// to leave retrying to the owner.
func (q *runQueue) unclaim() {
	q.mu.Lock()
	q.active--
	q.starting--
	q.refused = true
	q.checkIdle()
	q.mu.Unlock()
}

// next takes the oldest queued task; it reports false when there is none
// or the queue is closed. first says that the run is taking its first job,
// so it is no longer starting. helper reports that the caller must submit
// one more run, claimed for it: jobs still wait behind this one.
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
	q.head++
	if q.head == len(q.items) {
		q.reset()
	} else if !q.refused {
		helper = q.claimLocked()
	}
	q.mu.Unlock()
	return d, true, helper
}

// leave ends a run that found the queue empty. It reports false, and the
// run must go on, when work arrived in the meantime.
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

// abandon ends a run that is leaving abnormally, its job having ended its
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
// queue is closed for good too: runs then leave after their current job.
func (q *runQueue) takeAll(close bool) []due {
	q.mu.Lock()
	defer q.mu.Unlock()
	rest := append([]due(nil), q.items[q.head:]...)
	q.reset()
	if close {
		q.closed = true
		q.checkIdle()
	}
	return rest
}

// counts returns the queued tasks and the active runs.
func (q *runQueue) counts() (queued, active int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.items) - q.head, q.active
}

// reset empties the storage, giving a large buffer back after a burst.
func (q *runQueue) reset() {
	q.head = 0
	if cap(q.items) > 4096 {
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

// freeBatch collects slots freed by a run, to return them to the allocator
// under one lock.
type freeBatch struct {
	n     int
	slots [64]uint32
}

// run is a drain run, on a pool worker: it runs due jobs until the queue
// is empty.
func (s *Scheduler) run() {
	var fb freeBatch
	left, first := false, true
	defer s.endRun(&fb, &left, &first)
	for {
		d, ok, helper := s.runs.next(first)
		first = false
		if !ok {
			s.flushFreed(&fb)
			if s.runs.leave() {
				left = true
				return
			}
			continue
		}
		if helper {
			s.startHelper()
		}
		s.runOne(d, &fb)
	}
}

// startHelper submits the run that next claimed, before the job that made
// it needed runs. If the pool refuses, the owner takes over: it retries on
// its timer, or drops the queue if the pool is gone. This run goes on
// draining meanwhile.
func (s *Scheduler) startHelper() {
	if err := s.pool.Submit(s.runFn); err != nil {
		s.runs.unclaim()
		s.wakeOwner()
	}
}

// endRun runs as a run ends, normally or not. A run whose job ended its
// goroutine (runtime.Goexit, or a panic handler that panicked) gives its
// place back and wakes the owner to start a replacement for the work left.
func (s *Scheduler) endRun(fb *freeBatch, left, first *bool) {
	if *left {
		return
	}
	s.flushFreed(fb)
	if s.runs.abandon(*first) {
		s.wakeOwner()
	}
}

// runOne runs the due task d, unless it was cancelled while it waited or
// the scheduler has shut down since.
func (s *Scheduler) runOne(d due, fb *freeBatch) {
	t := s.slab.at(d.slot)
	defer s.finish(d.slot, t, fb)
	if wordStatus(t.word.Load()) == statusCancelled {
		// A repeating task cancelled while its run waited for a worker: the
		// run has not started, so it never does.
		return
	}
	if s.closed.Load() {
		s.dropped.Add(1)
		return
	}
	s.noteLateness(s.now() - d.when)
	s.fired.Add(1)
	s.call(s.slab.id(d.slot, t.generation()), t)
}

// call runs t's job, recovering a panic so that neither the worker nor the
// scheduler goes down with it. A panic handler that panics itself ends the
// run (runs leave through endRun) and reaches the pool's own handler.
func (s *Scheduler) call(id TaskID, t *task) {
	defer func() {
		if r := recover(); r != nil {
			s.panics.Add(1)
			if s.cfg.onPanic != nil {
				s.cfg.onPanic(id, r)
			} else {
				s.logger().Error("schedule: job panicked", "task", uint64(id), "panic", r)
			}
		}
	}()
	t.call(id)
}

// finish ends a run of the task in slot: it clears the running flag and, if
// the owner has let go of the slot too, frees it. A repeating task that
// was cancelled while this run was in flight lets its job go here.
func (s *Scheduler) finish(slot uint32, t *task, fb *freeBatch) {
	g := t.generation() // the run's: the slot cannot be freed before letGo
	nw := t.letGo(flagRunning)
	if unheld(nw) {
		if s.slab.retire(t) {
			fb.slots[fb.n] = slot
			fb.n++
			if fb.n == len(fb.slots) {
				s.flushFreed(fb)
			}
		}
		return
	}
	if wordStatus(nw) == statusCancelled {
		t.releaseAt(g)
	}
}

// flushFreed returns the slots in fb to the allocator.
func (s *Scheduler) flushFreed(fb *freeBatch) {
	if fb.n == 0 {
		return
	}
	s.release(fb.slots[:fb.n])
	fb.n = 0
}

// dropQueued drops every queued job: the pool they were to run on is gone.
func (s *Scheduler) dropQueued() { s.dropDue(s.runs.takeAll(false)) }

// closeRuns closes the run queue at Shutdown and drops the jobs no run has
// taken.
func (s *Scheduler) closeRuns() { s.dropDue(s.runs.takeAll(true)) }

// dropDue releases due tasks that will never run, counting each in
// Stats.Dropped unless it was cancelled.
func (s *Scheduler) dropDue(ds []due) {
	var fb freeBatch
	for _, d := range ds {
		t := s.slab.at(d.slot)
		if wordStatus(t.word.Load()) != statusCancelled {
			s.dropped.Add(1)
		}
		s.finish(d.slot, t, &fb)
	}
	s.flushFreed(&fb)
}

func (s *Scheduler) logger() *slog.Logger {
	if s.cfg.logger != nil {
		return s.cfg.logger
	}
	return slog.Default()
}

// noteLateness records how late a job started.
func (s *Scheduler) noteLateness(late int64) {
	raiseTo(&s.maxLateness, late)
	raiseTo(&s.recentLateness, late)
	s.lateness[latenessBucket(late)].Add(1)
}

func raiseTo(v *atomic.Int64, x int64) {
	for {
		cur := v.Load()
		if x <= cur || v.CompareAndSwap(cur, x) {
			return
		}
	}
}
