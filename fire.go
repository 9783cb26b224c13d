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
//   - A run leaves only when it finds the queue empty or closed, under mu,
//     so a non-empty open queue always has a run that will take from it, or
//     the owner knows to start one (claim).
//   - idle is closed exactly once: when closed is set and active is 0.
type runQueue struct {
	mu     sync.Mutex
	items  []due // items[head:] are queued, oldest first
	head   int
	active int
	closed bool
	idle   chan struct{}
}

func (q *runQueue) init() { q.idle = make(chan struct{}) }

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

// claim reserves up to limit-active new runs, no more than there are
// queued jobs, and returns how many the caller must submit.
func (q *runQueue) claim(limit int) int {
	q.mu.Lock()
	n := 0
	if !q.closed {
		n = min(limit-q.active, len(q.items)-q.head)
		n = max(n, 0)
		q.active += n
	}
	q.mu.Unlock()
	return n
}

// unclaim gives back n claimed runs that were never submitted.
func (q *runQueue) unclaim(n int) {
	q.mu.Lock()
	q.active -= n
	q.checkIdle()
	q.mu.Unlock()
}

// next takes the oldest queued task; it reports false when there is none
// or the queue is closed.
func (q *runQueue) next() (due, bool) {
	q.mu.Lock()
	if q.closed || q.head == len(q.items) {
		q.mu.Unlock()
		return due{}, false
	}
	d := q.items[q.head]
	q.head++
	if q.head == len(q.items) {
		q.reset()
	}
	q.mu.Unlock()
	return d, true
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
// goroutine. It reports whether jobs are left for a replacement.
func (q *runQueue) abandon() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
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
	left := false
	defer s.endRun(&fb, &left)
	for {
		d, ok := s.runs.next()
		if !ok {
			s.flushFreed(&fb)
			if s.runs.leave() {
				left = true
				return
			}
			continue
		}
		s.runOne(d, &fb)
	}
}

// endRun runs as a run ends, normally or not. A run whose job ended its
// goroutine (runtime.Goexit, or a panic handler that panicked) gives its
// place back and wakes the owner to start a replacement for the work left.
func (s *Scheduler) endRun(fb *freeBatch, left *bool) {
	if *left {
		return
	}
	s.flushFreed(fb)
	if s.runs.abandon() {
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
	s.call(s.slab.id(d.slot, t.gen.Load()), t)
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
	nw := t.letGo(flagRunning)
	if unheld(nw) {
		if s.slab.retire(slot, t) {
			fb.slots[fb.n] = slot
			fb.n++
			if fb.n == len(fb.slots) {
				s.flushFreed(fb)
			}
		}
		return
	}
	if wordStatus(nw) == statusCancelled {
		l := s.slab.stripe(slot)
		l.Lock()
		t.release()
		l.Unlock()
	}
}

// flushFreed returns the slots in fb to the allocator.
func (s *Scheduler) flushFreed(fb *freeBatch) {
	if fb.n == 0 {
		return
	}
	s.mu.Lock()
	s.slab.free = append(s.slab.free, fb.slots[:fb.n]...)
	s.mu.Unlock()
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
