package schedule

import (
	"errors"
	"math/bits"
	"time"

	"github.com/panjf2000/ants/v2"
)

// The owner goroutine: the only one that touches the deadline heap. It
// applies the requests in its inbox, hands due tasks to the run queue in
// deadline order, starts drain runs on the pool, reclaims tombstones, and
// sleeps on one timer set for whichever comes first: the earliest deadline
// or a retry of runs the pool refused.

// The owner hands due tasks to the run queue in chunks while it pops them,
// so that the first of a million simultaneous deadlines starts while the
// owner is still popping the rest. The first due task of a loop iteration
// is handed over alone, so that a run starts at once: after a quiet spell
// the lower levels of a large heap have left the caches, and each pop
// waits for memory. Later chunks are larger, so that the run queue's lock
// is taken once per chunk rather than once per task.
const (
	firstHandOver = 1
	handOverChunk = 512
)

// lookAhead is how far ahead of now the owner, whenever it is awake, fixes
// the heap entries of deadlines that Reset postponed. Each entry it fixes
// goes back down the heap to its new deadline, so the entries left at the
// top are either real deadlines or stale ones more than lookAhead away. The
// owner therefore wakes for postponed deadlines at most once per lookAhead
// (ten times a second), however many keys there are and however often they
// are reset, plus once for each deadline that really comes due. Fixing an
// entry a little early costs nothing extra: it is the same sift it would
// get at the top, and a deadline postponed again is fixed again only when it
// next comes near the top.
const lookAhead = 100 * time.Millisecond

// Back-off for starting runs on a pool that refused them (full, or busy
// with work that is not the scheduler's).
const (
	minRetry = 50 * time.Microsecond
	maxRetry = 5 * time.Millisecond
)

// loop is the owner goroutine.
func (s *Scheduler) loop() {
	defer close(s.ownerDone)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	armed := int64(-1) // deadline the timer is set for; -1 when stopped
	backoff := time.Duration(0)
	timerFired := false
	for {
		s.dueCount = 0
		if timerFired {
			s.runDueAhead(s.now())
			timerFired = false
		}
		s.drainInbox()
		now := s.now()
		s.runDue(now)
		if s.cfg.strategy == LazyCancel && s.tooManyTombstones() {
			s.compact()
		}
		s.flush()
		s.giveBackChunks()
		s.shrinkWhenQuiet(s.now())
		if s.retryAt == 0 || now >= s.retryAt {
			s.retryAt = 0
			if s.startRuns() {
				backoff = 0
			} else {
				backoff = min(max(2*backoff, minRetry), maxRetry)
				s.retryAt = s.now() + int64(backoff)
			}
		}

		next := never
		if s.heap.len() > 0 {
			next = s.heap.top().when
		}
		if s.retryAt != 0 {
			next = min(next, s.retryAt)
		}
		next = min(next, s.movedEarlier.Load())
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
		// Publish the wake-up time, then look at the inbox once more: a
		// request that came after drainInbox either is seen here or sees
		// sleepUntil (inbox.go). While requests keep coming, go round
		// without publishing anything, so that callers reading sleepUntil
		// do not fight the owner for its cache line.
		if s.inboxWaiting() {
			continue
		}
		wakeAt := armed // -1: no timer
		if wakeAt < 0 {
			wakeAt = never
		}
		if s.cfg.strategy == LazyCancel {
			s.shareTombstoneRoom()
		}
		s.sleepUntil.Store(wakeAt)
		if s.inboxWaiting() || s.movedEarlier.Load() < wakeAt {
			s.sleepUntil.Store(0)
			continue
		}
		select {
		case <-s.quit:
			timer.Stop()
			s.dropAll()
			return
		case <-s.wake:
		case <-timer.C:
			// A fire is only a hint (with pre-Go 1.23 timer semantics it can
			// be stale): runDue compares deadlines with the clock.
			armed = -1
			timerFired = true
		}
		s.wakeups.Add(1)
		s.sleepUntil.Store(0)
	}
}

// inboxWaiting reports whether requests wait in the inbox.
func (s *Scheduler) inboxWaiting() bool { return s.busyLanes.Load() != 0 }

// drainInbox applies every queued request, lane after lane.
func (s *Scheduler) drainInbox() {
	for busy := s.busyLanes.Load(); busy != 0; busy &= busy - 1 {
		l := &s.lanes[bits.TrailingZeros32(busy)]
		l.mu.Lock()
		s.busyLanes.And(^l.bit)
		full := len(l.ops) >= laneMax
		s.ops, l.ops = l.ops, s.ops[:0]
		l.from = never
		n := l.enqueued
		if full {
			l.room.Broadcast()
		}
		l.mu.Unlock()
		for _, o := range s.ops {
			s.apply(o)
		}
		// A burst is over when 16 drains in a row used less than a
		// sixteenth of a large buffer: give it back then, not at the first
		// small drain, or a steady stream of requests would regrow it again
		// and again.
		if c := cap(s.ops); c > 4096 && len(s.ops) < c/16 {
			s.smallDrains++
		} else {
			s.smallDrains = 0
		}
		if s.smallDrains >= 16 {
			s.ops, s.smallDrains = nil, 0
		} else {
			clear(s.ops)
		}
		l.processed.Store(n)
	}
}

func (s *Scheduler) apply(o op) {
	ch := s.slab.chunkOf(o.slot)
	if ch == nil {
		return // the task is gone, and its chunk given back
	}
	t := &ch.tasks[o.slot&(chunkSize-1)]
	if t.generation() != o.gen {
		return // the task is gone and its slot reused
	}
	w := t.word.Load()
	switch o.kind {
	case opAdd:
		if wordStatus(w) == statusCancelled {
			if s.cfg.strategy == LazyCancel {
				s.countTombstones(-1)
			}
			s.drop(o.slot, t)
			return
		}
		if o.interval != 0 {
			if s.intervals == nil {
				s.intervals = make(map[uint32]int64)
			}
			s.intervals[o.slot] = o.interval
		}
		s.pushEntry(o.slot, t, wordWhen(w))
	case opEarlier:
		if wordStatus(w) != statusPending || w&flagOwned == 0 {
			return
		}
		when := wordWhen(w)
		if s.cfg.strategy == EagerCancel {
			if i := int(t.ref); i < s.heap.len() && s.heap.items[i].slot == o.slot && when < s.heap.items[i].when {
				s.heap.setWhen(i, when)
			}
			return
		}
		// Lazy: the old entry becomes a tombstone.
		s.pushEntry(o.slot, t, when)
		s.countTombstones(1)
	case opRemove:
		i := t.ref
		if w&flagOwned == 0 || int(i) >= s.heap.len() || s.heap.items[i].slot != o.slot {
			return // already dropped when its entry reached the top
		}
		s.heap.removeAt(int(i))
		s.drop(o.slot, t)
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

// runDueAhead hands over, when the owner's timer has woken it, the tasks
// due at now that no request waiting in the inbox can precede: those due
// by the earliest deadline the waiting requests concern. The requests that
// wait concern deadlines no earlier than the timer's, or they would have
// woken the owner (inbox.go); after a burst of adds, thousands of them may
// wait, and applying them first would delay every due job.
func (s *Scheduler) runDueAhead(now int64) { s.runDue(min(now, s.waitingFrom())) }

// runDue hands every task due at now to the run queue, in chunks, and
// fixes the entries of deadlines postponed to beyond now + lookAhead that
// are still at the top, so that the owner does not wake for them. It
// first fixes the entries of deadlines moved earlier, if one is due
// (moved.go).
func (s *Scheduler) runDue(now int64) {
	s.adjust(now)
	fixBy := now + int64(lookAhead)
	for s.heap.len() > 0 {
		e := s.heap.top()
		if e.when > fixBy || e.when >= never {
			break
		}
		t := s.slab.at(e.slot)
		if s.cfg.strategy == LazyCancel && e.tag != t.ref {
			s.heap.pop() // tombstone of an earlier deadline
			s.countTombstones(-1)
			continue
		}
		w := t.word.Load()
		if wordStatus(w) == statusCancelled {
			s.heap.pop()
			if s.cfg.strategy == LazyCancel {
				s.countTombstones(-1)
			}
			s.drop(e.slot, t)
			continue
		}
		if when := wordWhen(w); when != e.when {
			// Reset moved the deadline: fix the entry, look again.
			s.heap.setWhen(0, when)
			continue
		}
		if e.when > now {
			break // the earliest deadline, and it is not due yet
		}
		if w&flagRepeat == 0 {
			// One-shot: hand the slot from the owner to the worker.
			if !t.word.CompareAndSwap(w, w&^(statusMask|flagOwned)|statusFired|flagRunning) {
				continue // a caller changed it meanwhile; look again
			}
			s.heap.pop()
			s.countEnded()
			s.due(e.slot, e.when)
			continue
		}
		next, missed := nextRun(e.when, s.intervals[e.slot], now)
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
			s.due(e.slot, e.when)
		}
	}
}

// due collects the task in slot for the run queue, handing a chunk over
// as soon as it is full.
func (s *Scheduler) due(slot uint32, when int64) {
	s.dueNow = append(s.dueNow, due{slot, when})
	s.dueCount++
	n := len(s.dueNow)
	first := n == firstHandOver && s.dueCount == firstHandOver
	if n >= handOverChunk || first {
		s.handOver()
		if s.retryAt == 0 {
			s.startRuns()
		}
	}
}

// handOver moves the collected due tasks to the run queue.
func (s *Scheduler) handOver() {
	if len(s.dueNow) == 0 {
		return
	}
	s.runs.put(s.dueNow)
	s.dueNow = s.dueNow[:0]
}

// startRuns submits a drain run if jobs are queued and no run is starting;
// runs start helpers themselves as they find more jobs waiting (fire.go).
// The pool never makes it wait: New's pool is non-blocking and WithPool
// accepts only non-blocking pools. It reports false when the pool refused
// the run, to be retried on the owner's timer; jobs stay queued meanwhile,
// and runs already going keep draining them.
func (s *Scheduler) startRuns() bool {
	if !s.runs.claim() {
		return true
	}
	err := s.pool.Submit(s.runFn)
	if err == nil {
		return true
	}
	s.runs.unclaim()
	if errors.Is(err, ants.ErrPoolClosed) {
		// A pool given with WithPool was released under the scheduler: no
		// queued job can ever run.
		s.dropQueued()
		return true
	}
	return false
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
	w := t.letGo(flagOwned)
	if w&flagRepeat != 0 {
		delete(s.intervals, slot)
		if len(s.intervals) == 0 {
			s.intervals = nil // a Go map never shrinks: let a large one go
		}
	}
	if unheld(w) {
		s.freed = append(s.freed, slot)
	}
}

// flush ends a loop iteration: frees the slots dropped during it, hands the
// due tasks to the run queue and publishes the heap's size.
func (s *Scheduler) flush() {
	if len(s.freed) > 0 {
		s.freeSlots(s.freed)
		s.freed = s.freed[:0]
		if cap(s.freed) > 4096 {
			s.freed = nil // after a rebuild that dropped many: give it back
		}
	}
	s.handOver()
	s.heapLen.Store(int64(s.heap.len()))
	s.loops.Add(1)
}

// freeSlots retires the given slots and returns the reusable ones to their
// lanes' allocators, under one lock per lane. It may reorder slots.
func (s *Scheduler) freeSlots(slots []uint32) {
	reusable := slots[:0]
	for _, slot := range slots {
		if s.slab.retire(s.slab.at(slot)) {
			reusable = append(reusable, slot)
		}
	}
	s.release(reusable)
}

// giveBackChunks has the lanes that asked for it give back their chunks
// whose slots are all free (lane.trim in inbox.go). With lazy cancel it
// first rebuilds the heap if it holds tombstones: a tombstone may outlive
// its task and name a free slot, and is looked up when it reaches the top
// or a rebuild drops it, so its chunk must still be there then. Tombstones
// that name free slots are made by the owner alone (it drops a task whose
// earlier entry is still in the heap), so none appears while it trims. The
// rebuild is paid for by the chunks given back: a lane asks only once a
// quarter of its chunks have every slot free.
func (s *Scheduler) giveBackChunks() {
	want := s.trimLanes.Load()
	if want == 0 {
		return
	}
	if s.tombstones() != 0 {
		s.compact()
	}
	for ; want != 0; want &= want - 1 {
		l := &s.lanes[bits.TrailingZeros32(want)]
		s.trimLanes.And(^l.bit)
		l.mu.Lock()
		if l.wantsTrim() {
			s.trim(l)
		}
		l.mu.Unlock()
	}
}

// quietGap is how far off the next deadline must be for the owner to
// shrink its heap. A shrink copies the heap into fresh memory, and the page
// faults of 2 MB of it took 5 ms on the 2-core machine of the benchmarks:
// shrinking in the middle of a stream of deadlines a few microseconds
// apart made every job due in those 5 ms that late.
const quietGap = 10 * time.Millisecond

// shrinkWhenQuiet shrinks a heap that emptied out (deadlineHeap.shrink)
// when no deadline is due within quietGap of now.
func (s *Scheduler) shrinkWhenQuiet(now int64) {
	if s.heap.len() > 0 && s.heap.top().when-now < int64(quietGap) {
		return
	}
	s.heap.shrink()
}

// tooManyTombstones reports whether tombstones exceed a quarter of the live
// entries (a fifth of the heap). Rebuilding then keeps the heap within 1.25
// entries per live task. (The Go runtime's rule, a quarter of the heap,
// would allow 1.33.)
func (s *Scheduler) tooManyTombstones() bool {
	d := s.tombstones()
	return d > 0 && 5*d > int64(s.heap.len())
}

// compact rebuilds a lazy heap without its tombstones, in O(n).
func (s *Scheduler) compact() {
	items := s.heap.items
	kept := 0
	for _, e := range items {
		t := s.slab.at(e.slot)
		if e.tag != t.ref {
			s.countTombstones(-1)
			continue
		}
		if wordStatus(t.word.Load()) == statusCancelled {
			s.countTombstones(-1)
			s.drop(e.slot, t)
			continue
		}
		if w := t.word.Load(); wordWhen(w) < e.when {
			e.when = wordWhen(w) // a deadline moved earlier (moved.go)
		}
		items[kept] = e
		kept++
	}
	s.heap.items = items[:kept]
	s.heap.heapify()
	s.heap.trim()
}

// dropAll ends the owner's life at Shutdown: every task still pending is
// dropped (counted in Stats.Dropped), its job let go, and the heap's memory
// returned. New requests can no longer arrive: Shutdown closed the inbox
// before it told the owner to quit.
func (s *Scheduler) dropAll() {
	s.drainInbox()
	for _, e := range s.heap.items {
		t := s.slab.at(e.slot)
		if s.cfg.strategy == LazyCancel && e.tag != t.ref {
			continue // a tombstone: the task's current entry is elsewhere
		}
		s.cancelForShutdown(t)
		s.drop(e.slot, t)
	}
	s.heap.items = nil
	s.intervals = nil
	s.dueNow = nil
	s.ops = nil
	s.freeSlots(s.freed)
	s.freed = nil
	s.heapLen.Store(0)
}

// cancelForShutdown marks a pending task cancelled, so that no run of it
// can start, and counts it as dropped. A CancelTask racing with Shutdown
// either wins (and counts a cancel) or loses; never both.
func (s *Scheduler) cancelForShutdown(t *task) {
	defer t.unlock(t.lockCurrent())
	for {
		w := t.word.Load()
		if wordStatus(w) != statusPending {
			return
		}
		if t.word.CompareAndSwap(w, w|statusCancelled) {
			if w&flagRunning == 0 {
				t.release()
			}
			s.countEnded()
			s.dropped.Add(1)
			return
		}
	}
}
