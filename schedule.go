package schedule

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/panjf2000/ants/v2"
)

// Scheduler runs jobs after a delay or periodically on a bounded pool of
// goroutines. All its methods are safe for concurrent use, including from
// inside a running job.
//
// One owner goroutine keeps every deadline in a min-heap and sleeps on a
// single timer set for the earliest one. Due jobs are handed to an ants pool
// in deadline order; when every worker is busy they wait their turn without
// holding up scheduling.
type Scheduler struct {
	cfg   config
	epoch time.Time // deadlines are nanoseconds since epoch (monotonic)

	// mu guards closed's transitions, the inbox, enqueued and the slab's
	// allocator.
	mu       sync.Mutex
	inbox    []op      // requests for the owner, in arrival order
	inboxCap sync.Cond // signalled when the owner empties a full inbox
	enqueued uint64    // ops ever appended to the inbox
	closed   atomic.Bool

	slab slab

	// The owner goroutine's state. Nothing else touches these.
	heap   deadlineHeap
	ops    []op     // the inbox being processed
	freed  []uint32 // slots to free at the end of the loop iteration
	dueNow []due    // due tasks collected for the dispatcher

	// wake holds a token when the owner has work in its inbox.
	wake chan struct{}
	// quit is closed by Shutdown; the owner and the dispatcher then exit.
	quit           chan struct{}
	ownerDone      chan struct{}
	dispatcherDone chan struct{}
	stopOnce       sync.Once

	dueQ dueQueue
	pool *ants.Pool
	gate gate

	// Counters, updated atomically by whoever observes the event.
	live        atomic.Int64 // pending tasks (Len)
	dead        atomic.Int64 // lazy: tombstones in the heap or on their way
	cancelled   atomic.Uint64
	fired       atomic.Uint64
	skipped     atomic.Uint64
	panics      atomic.Uint64
	waiting     atomic.Int64 // due jobs not yet taken by a worker
	maxLateness atomic.Int64
	// Published by the owner at the end of each loop iteration.
	heapLen   atomic.Int64
	processed atomic.Uint64 // ops the owner has finished
	loops     atomic.Uint64 // loop iterations completed
}

// op is a request from a caller to the owner goroutine.
type op struct {
	id   TaskID
	kind opKind
}

type opKind uint8

const (
	opAdd     opKind = iota // a new task: push its entry
	opEarlier               // Reset moved a deadline earlier than the entry's
	opRemove                // eager CancelTask: remove the entry now
)

// maxInbox bounds the requests waiting for the owner. Callers that find the
// inbox full wait until the owner empties it, so a burst of calls cannot
// outrun the owner without bound.
const maxInbox = 1 << 16

// New returns a running Scheduler whose jobs run on at most workers
// goroutines at a time. It returns ErrInvalidWorkers when workers is not
// positive, and the error of the first Option that rejects its argument or
// of the pool's construction.
//
// Call Shutdown or ShutdownContext when done, to stop the scheduler's
// goroutines and release its pool.
func New(workers int, opts ...Option) (*Scheduler, error) {
	if workers <= 0 {
		return nil, ErrInvalidWorkers
	}
	s := &Scheduler{
		cfg:            config{strategy: LazyCancel},
		epoch:          time.Now(),
		wake:           make(chan struct{}, 1),
		quit:           make(chan struct{}),
		ownerDone:      make(chan struct{}),
		dispatcherDone: make(chan struct{}),
	}
	for _, o := range opts {
		if err := o(&s.cfg); err != nil {
			return nil, err
		}
	}
	s.pool = s.cfg.pool
	if s.pool == nil {
		// Idle workers are kept rather than purged. In ants v2.12.1 a worker
		// that exits wakes a blocked Submit without holding the pool's lock,
		// and that wake-up can be lost: the dispatcher would then wait a
		// whole purge period with a worker slot free. WithPoolOptions can
		// turn purging back on.
		opts := append([]ants.Option{ants.WithDisablePurge(true)}, s.cfg.poolOptions...)
		p, err := ants.NewPool(workers, opts...)
		if err != nil {
			return nil, err
		}
		s.pool = p
	}
	if s.cfg.strategy == EagerCancel {
		s.heap.index = &s.slab
	}
	s.inboxCap.L = &s.mu
	s.dueQ.ready = make(chan struct{}, 1)
	s.gate.idle = make(chan struct{})
	go s.loop()
	go s.dispatch()
	return s, nil
}

// ScheduleOne runs job once, delay from now. A delay of zero or less runs
// it as soon as a worker is free; a delay too long to represent (about 36
// years from New) is accepted, and the job never comes due.
//
// It returns ErrNilJob for a nil job and ErrShutdown after Shutdown.
func (s *Scheduler) ScheduleOne(job func(), delay time.Duration) (TaskID, error) {
	if job == nil {
		return 0, ErrNilJob
	}
	return s.add(job, delay, 0)
}

// Schedule runs job every interval, the first time interval from now. Runs
// are due at fixed times, start + k·interval, so lateness does not
// accumulate. A run that comes due while the previous run of the same task
// is still going, or that was missed while the scheduler or the pool was
// stalled, is skipped (see Stats.Skipped), so the task never runs
// concurrently with itself and never bursts to catch up.
//
// It returns ErrNilJob for a nil job, ErrInvalidInterval for an interval of
// zero or less, and ErrShutdown after Shutdown.
func (s *Scheduler) Schedule(job func(), interval time.Duration) (TaskID, error) {
	if job == nil {
		return 0, ErrNilJob
	}
	if interval <= 0 {
		return 0, ErrInvalidInterval
	}
	return s.add(job, interval, interval)
}

func (s *Scheduler) add(job func(), delay, interval time.Duration) (TaskID, error) {
	when := s.deadline(delay)
	s.mu.Lock()
	for len(s.inbox) >= maxInbox && !s.closed.Load() {
		s.inboxCap.Wait()
	}
	if s.closed.Load() {
		s.mu.Unlock()
		return 0, ErrShutdown
	}
	slot, t, ok := s.slab.alloc()
	if !ok {
		s.mu.Unlock()
		return 0, ErrTooManyTasks
	}
	t.job = job
	t.interval = int64(interval)
	t.word.Store(packWord(when, statusPending|flagOwned))
	id := makeID(slot, t.gen.Load())
	s.live.Add(1)
	wake := s.appendOp(op{id, opAdd})
	s.mu.Unlock()
	if wake {
		s.wakeOwner()
	}
	return id, nil
}

// appendOp queues o for the owner and reports whether the owner needs
// waking. s.mu must be held.
func (s *Scheduler) appendOp(o op) bool {
	s.inbox = append(s.inbox, o)
	s.enqueued++
	return len(s.inbox) == 1
}

// send queues o for the owner, waiting while the inbox is full. It drops o
// after Shutdown, when no owner is left to act on it.
func (s *Scheduler) send(o op) {
	s.mu.Lock()
	for len(s.inbox) >= maxInbox && !s.closed.Load() {
		s.inboxCap.Wait()
	}
	if s.closed.Load() {
		s.mu.Unlock()
		return
	}
	wake := s.appendOp(o)
	s.mu.Unlock()
	if wake {
		s.wakeOwner()
	}
}

func (s *Scheduler) wakeOwner() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// CancelTask stops the task id. It reports whether this call stopped it:
// a one-shot task will not run, and a repeating task starts no further run,
// even when CancelTask is called from inside its own job. It does not wait
// for a run already under way.
//
// A one-shot task stops being pending when it comes due: from then on it
// runs as soon as a worker is free, and CancelTask returns false. It also
// returns false for an unknown or already cancelled task, for 0, and after
// Shutdown.
func (s *Scheduler) CancelTask(id TaskID) bool {
	t := s.slab.lookup(id)
	if t == nil || s.closed.Load() {
		return false
	}
	l := s.slab.stripe(id.slot())
	l.Lock()
	if t.gen.Load() != id.gen() {
		l.Unlock()
		return false
	}
	for {
		w := t.word.Load()
		if wordStatus(w) != statusPending {
			l.Unlock()
			return false
		}
		if t.word.CompareAndSwap(w, w|statusCancelled) {
			break
		}
	}
	l.Unlock()
	s.live.Add(-1)
	s.cancelled.Add(1)
	if s.cfg.strategy == EagerCancel {
		s.send(op{id, opRemove})
		return true
	}
	// Lazy: the entry stays as a tombstone. Wake the owner when tombstones
	// first call for a rebuild, so it reclaims them even if nothing else is
	// going on.
	if d := s.dead.Add(1); 5*d > s.heapLen.Load() && 5*(d-1) <= s.heapLen.Load() {
		s.wakeOwner()
	}
	return true
}

// Reset moves the next run of the pending task id to delay from now; a
// repeating task then continues every interval from that run. It reports
// false, and changes nothing, when id is not pending: unknown, cancelled, a
// one-shot that has come due (see CancelTask), or after Shutdown.
//
// Reset is the heartbeat path and costs about as much as time.Timer.Reset:
// it allocates nothing, and postponing a deadline (the usual case) does not
// involve the owner goroutine at all; the heap entry is fixed when it
// reaches the top.
func (s *Scheduler) Reset(id TaskID, delay time.Duration) bool {
	t := s.slab.lookup(id)
	if t == nil || s.closed.Load() {
		return false
	}
	when := s.deadline(delay)
	l := s.slab.stripe(id.slot())
	l.Lock()
	if t.gen.Load() != id.gen() {
		l.Unlock()
		return false
	}
	var w uint64
	for {
		w = t.word.Load()
		if wordStatus(w) != statusPending {
			l.Unlock()
			return false
		}
		if t.word.CompareAndSwap(w, packWord(when, w&flagMask)) {
			break
		}
	}
	l.Unlock()
	if when < wordWhen(w) {
		// The entry may now be later than the task: tell the owner.
		s.send(op{id, opEarlier})
	}
	return true
}

// Len returns the number of pending tasks: one-shot tasks that have not
// come due and repeating tasks not cancelled. Tombstones do not count.
// After Shutdown it returns 0.
func (s *Scheduler) Len() int {
	if s.closed.Load() {
		return 0
	}
	return int(s.live.Load())
}

// IsShutdown reports whether Shutdown or ShutdownContext has been called.
func (s *Scheduler) IsShutdown() bool { return s.closed.Load() }

// Shutdown stops the scheduler. It is idempotent, safe to call
// concurrently with any other method and from inside a job, and returns
// without waiting for running jobs. Once it returns, no job starts, pending
// tasks are dropped, ScheduleOne and Schedule return ErrShutdown, and
// CancelTask and Reset return false. A pool created by New is released; one
// given by WithPool is left alone.
func (s *Scheduler) Shutdown() {
	s.stop()
	if s.cfg.pool == nil {
		s.pool.Release()
	}
}

// ShutdownContext is Shutdown followed by a wait for the jobs still running
// (and, for a pool created by New, for its workers to exit) until ctx is
// done. It returns nil when they finished and ctx.Err() otherwise; the
// scheduler is shut down either way. Called from inside a job it waits for
// that job too, so it can only return ctx.Err() there.
func (s *Scheduler) ShutdownContext(ctx context.Context) error {
	s.stop()
	if s.cfg.pool == nil {
		// Releases the pool, then waits for its workers. ErrPoolClosed means
		// an earlier Shutdown released it; its workers exit on their own
		// once their jobs return, which the gate below waits for.
		if err := s.pool.ReleaseContext(ctx); err != nil && err != ants.ErrPoolClosed {
			return err
		}
	}
	for _, done := range []<-chan struct{}{s.gate.idle, s.dispatcherDone} {
		select {
		case <-done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// stop does the part of shutting down that every caller waits for.
func (s *Scheduler) stop() {
	s.stopOnce.Do(func() {
		s.mu.Lock()
		s.closed.Store(true)
		s.inboxCap.Broadcast()
		s.mu.Unlock()
		s.gate.close()
		close(s.quit)
		<-s.ownerDone
	})
}

// deadline converts a delay from now into a deadline, clamped to
// [now, never].
func (s *Scheduler) deadline(delay time.Duration) int64 {
	now := s.now()
	if delay <= 0 {
		return now
	}
	if int64(delay) > never-now {
		return never
	}
	return now + int64(delay)
}

func (s *Scheduler) now() int64 { return int64(time.Since(s.epoch)) }

// loop is the owner goroutine: the only one that touches the heap.
func (s *Scheduler) loop() {
	defer close(s.ownerDone)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	armed := int64(-1) // deadline the timer is set for; -1 when stopped
	for {
		s.drainInbox()
		now := s.now()
		s.runDue(now)
		if s.cfg.strategy == LazyCancel && s.tooManyTombstones() {
			s.compact()
		}
		s.flush()

		next := never
		if s.heap.len() > 0 {
			next = s.heap.top().when
		}
		if next != armed {
			if next >= never {
				timer.Stop()
				armed = -1
			} else {
				// Measure again: runDue may have taken a while, and the wait is
				// to an absolute deadline.
				timer.Reset(time.Duration(next - s.now()))
				armed = next
			}
		}
		select {
		case <-s.quit:
			timer.Stop()
			return
		case <-s.wake:
		case <-timer.C:
			// A fire is only a hint (with pre-Go 1.23 timer semantics it can
			// be stale): runDue compares deadlines with the clock.
			armed = -1
		}
	}
}

// drainInbox applies every queued request.
func (s *Scheduler) drainInbox() {
	s.mu.Lock()
	full := len(s.inbox) >= maxInbox
	s.ops, s.inbox = s.inbox, s.ops[:0]
	n := s.enqueued
	if full {
		s.inboxCap.Broadcast()
	}
	s.mu.Unlock()
	for _, o := range s.ops {
		s.apply(o)
	}
	clear(s.ops) // no stale IDs kept
	s.processed.Store(n)
}

func (s *Scheduler) apply(o op) {
	slot := o.id.slot()
	t := s.slab.at(slot)
	if t.gen.Load() != o.id.gen() {
		return // the task is gone and its slot reused
	}
	w := t.word.Load()
	switch o.kind {
	case opAdd:
		if wordStatus(w) == statusCancelled {
			if s.cfg.strategy == LazyCancel {
				s.dead.Add(-1)
			}
			s.drop(slot, t)
			return
		}
		s.pushEntry(slot, t, wordWhen(w))
	case opEarlier:
		if wordStatus(w) != statusPending || w&flagOwned == 0 {
			return
		}
		when := wordWhen(w)
		if s.cfg.strategy == EagerCancel {
			if i := int(t.ref); i < s.heap.len() && s.heap.items[i].slot == slot && when < s.heap.items[i].when {
				s.heap.setWhen(int(i), when)
			}
			return
		}
		// Lazy: the old entry becomes a tombstone.
		s.pushEntry(slot, t, when)
		s.dead.Add(1)
	case opRemove:
		i := t.ref
		if w&flagOwned == 0 || int(i) >= s.heap.len() || s.heap.items[i].slot != slot {
			return // already dropped when its entry reached the top
		}
		s.heap.removeAt(int(i))
		s.drop(slot, t)
	}
}

// pushEntry adds an entry for t. With lazy cancel it gets a new tag, which
// turns any earlier entry of t into a tombstone.
func (s *Scheduler) pushEntry(slot uint32, t *task, when int64) {
	if s.cfg.strategy == LazyCancel {
		if t.ref == noIndex-1 {
			// About to reuse tag values: clear out every tombstone first so
			// that no old entry can match a new tag.
			s.compact()
		}
		t.ref++
	}
	s.heap.push(entry{when: when, slot: slot, tag: t.ref})
}

// runDue hands every task due at now to the dispatcher.
func (s *Scheduler) runDue(now int64) {
	for s.heap.len() > 0 {
		e := s.heap.top()
		if e.when > now || e.when >= never {
			break
		}
		t := s.slab.at(e.slot)
		if s.cfg.strategy == LazyCancel && e.tag != t.ref {
			s.heap.pop() // tombstone of an earlier deadline
			s.dead.Add(-1)
			continue
		}
		w := t.word.Load()
		if wordStatus(w) == statusCancelled {
			s.heap.pop()
			if s.cfg.strategy == LazyCancel {
				s.dead.Add(-1)
			}
			s.drop(e.slot, t)
			continue
		}
		if when := wordWhen(w); when != e.when {
			// Reset moved the deadline: fix the entry, look again.
			s.heap.setWhen(0, when)
			continue
		}
		if t.interval == 0 {
			// One-shot: hand the slot from the owner to the worker.
			if !t.word.CompareAndSwap(w, w&^(statusMask|flagOwned)|statusFired|flagRunning) {
				continue // a caller changed it meanwhile; look again
			}
			s.heap.pop()
			s.live.Add(-1)
			s.dueNow = append(s.dueNow, due{e.slot, e.when})
			continue
		}
		next, missed := nextRun(e.when, t.interval, now)
		running := w&flagRunning != 0
		nw := packWord(next, w&flagMask|flagRunning)
		if running {
			missed++ // the previous run is still going: skip this one
			nw = packWord(next, w&flagMask)
		}
		if !t.word.CompareAndSwap(w, nw) {
			continue
		}
		s.heap.setWhen(0, next)
		if missed > 0 {
			s.skipped.Add(uint64(missed))
		}
		if !running {
			s.dueNow = append(s.dueNow, due{e.slot, e.when})
		}
	}
}

// nextRun returns the first deadline of a task with the given interval
// after its run due at when, as seen at now, and how many deadlines in
// between were missed. Deadlines stay on when + k·interval.
func nextRun(when, interval, now int64) (next int64, missed int64) {
	if interval > never-when {
		return never, 0
	}
	next = when + interval
	if next <= now {
		missed = (now - when) / interval
		if missed > (never-when)/interval-1 {
			return never, missed
		}
		next = when + (missed+1)*interval
	}
	return next, missed
}

// drop releases the owner's reference to t, whose entry has left the heap
// (or never entered it). The slot is freed once no worker runs it either.
func (s *Scheduler) drop(slot uint32, t *task) {
	if t.letGo(flagOwned) {
		s.freed = append(s.freed, slot)
	}
}

// free returns a slot to the allocator; t must be its task.
func (s *Scheduler) free(slot uint32, t *task) {
	if !s.slab.retire(slot, t) {
		return
	}
	s.mu.Lock()
	s.slab.free = append(s.slab.free, slot)
	s.mu.Unlock()
}

// flush ends a loop iteration: frees the slots dropped during it, hands the
// due tasks to the dispatcher and publishes the heap's size.
func (s *Scheduler) flush() {
	if len(s.freed) > 0 {
		reusable := s.freed[:0]
		for _, slot := range s.freed {
			if s.slab.retire(slot, s.slab.at(slot)) {
				reusable = append(reusable, slot)
			}
		}
		s.mu.Lock()
		s.slab.free = append(s.slab.free, reusable...)
		s.mu.Unlock()
		s.freed = s.freed[:0]
	}
	if len(s.dueNow) > 0 {
		s.waiting.Add(int64(len(s.dueNow)))
		s.dueQ.put(s.dueNow)
		s.dueNow = s.dueNow[:0]
	}
	s.heapLen.Store(int64(s.heap.len()))
	s.loops.Add(1)
}

// tooManyTombstones reports whether tombstones exceed a quarter of the live
// entries (a fifth of the heap). Rebuilding then keeps the heap within 1.25
// entries per live task. (The Go runtime's rule, a quarter of the heap,
// would allow 1.33.)
func (s *Scheduler) tooManyTombstones() bool {
	d := s.dead.Load()
	return d > 0 && 5*d > int64(s.heap.len())
}

// compact rebuilds a lazy heap without its tombstones, in O(n).
func (s *Scheduler) compact() {
	items := s.heap.items
	kept := 0
	for _, e := range items {
		t := s.slab.at(e.slot)
		if e.tag != t.ref {
			s.dead.Add(-1)
			continue
		}
		if wordStatus(t.word.Load()) == statusCancelled {
			s.dead.Add(-1)
			s.drop(e.slot, t)
			continue
		}
		items[kept] = e
		kept++
	}
	s.heap.items = items[:kept]
	s.heap.heapify()
	s.heap.trim()
}
