package schedule

import (
	"errors"
	"math"
	"math/bits"
	"sync/atomic"
	"time"

	"github.com/panjf2000/ants/v2"
)

// owner is the owner goroutine: the only one that touches the deadline
// heap. It applies the requests in its inbox, hands due tasks to the run
// queue in deadline order, starts drains, frees the slots that cancelled
// and finished tasks leave behind, and sleeps on one timer set for whichever
// comes first: the earliest deadline, a retry of drains the pool refused, or
// the earliest deadline moved earlier without a request.
//
// Its fields fall in three types, by who may touch them.
type owner struct {
	ownerShares
	ownerState
	ownerGauges
}

// ownerShares are the parts the owner shares, each with rules of its own:
// it takes requests from the inbox, looks tasks up in the slab and frees
// their slots, and puts due tasks in the run queue.
type ownerShares struct {
	clock
	slab   *slab
	inbox  *inbox
	runner *runner
	cancel canceller
	out    *outcomes
	quit   <-chan struct{}
	done   chan struct{} // closed when the goroutine ends
}

// ownerState is the goroutine's own: nothing else touches it.
type ownerState struct {
	heap      deadlineHeap
	freed     []uint32         // slots to free at the end of the loop iteration
	taken     []op             // the requests taken last, applied: traded back at the next take
	dueNow    []due            // due tasks collected for the run queue
	dueCount  int              // due tasks collected in this loop iteration
	intervals map[uint32]int64 // slot to interval, for the repeating tasks the owner holds
	retryAt   int64            // when to try again to start drains the pool refused; 0: none
	backoff   time.Duration    // the wait before that retry
	barriers  int              // barrier requests applied in this loop iteration
}

// ownerGauges are published by the owner. Len and Stats read heapLen,
// ended and wakeups.
type ownerGauges struct {
	heapLen atomic.Int64
	ended   atomic.Int64  // tasks that stopped being pending other than by CancelTask
	wakeups atomic.Uint64 // times the goroutine woke from sleep
	// passed counts the barrier requests (opBarrier) whose loop iteration
	// has ended: every request sent before a barrier, in its lane, has been
	// applied, and what the iteration did published. Only a barrier, which
	// no call of the API sends, writes it; the tests wait on it.
	passed atomic.Uint64
}

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
// get at the top, and a deadline postponed again is fixed again only when
// it next comes near the top.
const lookAhead = 100 * time.Millisecond

// Back-off for starting drains on a pool that refused them (full, or busy
// with work that is not the scheduler's): 50 µs, doubling up to 5 ms.
const (
	minRetry = 50 * time.Microsecond
	maxRetry = 5 * time.Millisecond
)

// quietGap is how far off the next deadline must be for the owner to
// shrink its heap. A shrink copies the heap into fresh memory, whose page
// faults take milliseconds for a large heap: shrinking in the middle of a
// stream of deadlines would make the jobs due meanwhile that late.
const quietGap = 10 * time.Millisecond

// init sets the owner up, before its goroutine starts, with the parts it
// shares (all but done, which it makes). With positions set, its heap keeps
// every entry's position, for eager cancel, which removes a task's entry by
// its slot.
func (o *owner) init(shares ownerShares, positions bool) {
	o.ownerShares = shares
	o.done = make(chan struct{})
	if positions {
		o.heap.keepPositions(minPositions)
	}
}

// minPositions is the fewest positions the heap keeps when it shrinks: the
// slots of a slab chunk for each of its shards, which a scheduler soon
// spreads its tasks over again. Fewer would be regrown after every burst.
const minPositions = shardCount * chunkSize

// loop is the owner goroutine.
func (o *owner) loop() {
	defer close(o.done)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	armed := int64(-1) // deadline the timer is set for; -1 when stopped
	timerFired := false
	for {
		o.dueCount = 0
		if timerFired {
			o.collectDueAhead(o.now())
			timerFired = false
		}
		now := o.now()
		o.work(now)
		if o.retryAt == 0 || now >= o.retryAt {
			o.startDrains()
		}

		next := never
		if o.heap.len() > 0 {
			next = o.heap.top().when
		}
		if o.retryAt != 0 {
			next = min(next, o.retryAt)
		}
		next = min(next, o.inbox.movedEarlier.Load())
		if next != armed {
			if next >= never {
				timer.Stop()
				armed = -1
			} else {
				// Measure again: collectDue may have taken a while, and the
				// wait is to an absolute deadline.
				timer.Reset(time.Duration(next - o.now()))
				armed = next
			}
		}
		// While requests keep coming, go round without publishing anything,
		// so that callers reading sleepUntil do not fight the owner for its
		// cache line.
		if o.inbox.waiting() {
			continue
		}
		o.cancel.beforeSleep(o.heap.len())
		wakeAt := int64(never)
		if armed >= 0 {
			wakeAt = armed
		}
		if !o.inbox.sleep(wakeAt) {
			continue
		}
		select {
		case <-o.quit:
			timer.Stop()
			o.dropAll()
			return
		case <-o.inbox.wake:
		case <-timer.C:
			// A fire is only a hint (with pre-Go 1.23 timer semantics it can
			// be stale): collectDue compares deadlines with the clock.
			armed = -1
			timerFired = true
		}
		o.wakeups.Add(1)
		o.inbox.awake()
	}
}

// work is the owner's round of work at now, between two looks at its
// timer: the requests, the due tasks and the upkeep of the heap and the
// slab.
func (o *owner) work(now int64) {
	o.applyRequests()
	o.collectDue(now)
	if o.cancel.wantsRebuild(o.heap.len()) {
		o.rebuild()
	}
	o.flush()
	if o.slab.trimAsked() && o.readyToTrim() {
		o.slab.trim()
	}
	o.shrinkWhenQuiet(now)
}

// readyToTrim reports whether the slab may trim chunks now, rebuilding
// the heap first if the strategy asks for it: no entry may name a slot of a
// trimmed chunk. A rebuild here comes after the loop's flush, so it
// flushes again: the slots it let go of are freed before the trim, and the
// rebuilt heap's size is published before the owner sleeps.
func (o *owner) readyToTrim() bool {
	trim, rebuild := o.cancel.beforeTrim(o.heap.len())
	if rebuild {
		o.rebuild()
		o.flush()
	}
	return trim
}

// collectDueAhead hands over, when the owner's timer has woken it, the tasks
// due at now that no request waiting in the inbox can precede: those due
// by the earliest deadline the waiting requests concern. They concern
// deadlines no earlier than the timer's, or they would have woken the
// owner; after a burst of adds thousands of them may wait, and applying
// them first would delay every due job.
func (o *owner) collectDueAhead(now int64) { o.collectDue(min(now, o.inbox.waitingFrom())) }

// applyRequests takes the requests waiting in the inbox, lane after lane,
// and applies them. The owner pulls them rather than hand the inbox a
// callback, so that no request comes back into the owner through the inbox,
// and it hands each buffer back with its next take, so that one visit to
// the inbox does both.
func (o *owner) applyRequests() {
	for lanes := o.inbox.lanesWaiting(); lanes != 0; lanes &= lanes - 1 {
		o.taken = o.inbox.take(bits.TrailingZeros32(lanes), o.taken)
		for _, r := range o.taken {
			o.apply(r)
		}
	}
}

// apply carries out one request from the inbox.
func (o *owner) apply(r op) {
	if r.kind == opBarrier {
		o.barriers++ // passed once the loop iteration ends (flush)
		return
	}
	t := o.slab.find(r.slot)
	if t == nil {
		return // the task is gone, and its chunk trimmed
	}
	if t.generation() != r.gen {
		return // the task is gone and its slot reused
	}
	w := t.state()
	switch r.kind {
	case opAdd:
		if wordStatus(w) == statusCancelled {
			o.cancel.discarded(1)
			o.letGo(r.slot, t)
			return
		}
		if r.interval != 0 {
			if o.intervals == nil {
				o.intervals = make(map[uint32]int64)
			}
			o.intervals[r.slot] = r.interval
		}
		o.push(r.slot, t, wordWhen(w))
	case opEarlier:
		if wordStatus(w) == statusPending && w&flagOwned != 0 &&
			!o.cancel.movedEarlier(&o.heap, r.slot, wordWhen(w)) {
			o.push(r.slot, t, wordWhen(w))
		}
	case opRemove:
		// Sent by eager cancel only, whose heap knows every entry's index.
		if w&flagOwned == 0 {
			return
		}
		if o.heap.remove(r.slot) {
			o.letGo(r.slot, t)
		}
	}
}

// push gives t, in slot, a new entry in the heap, due at when. The entry
// takes t's next tag, so that t's older entries, if any, are tombstones
// from then on (classify). Tags are 32 bits: before t's come round, the
// heap is rebuilt, which clears out every tombstone, so that no old entry
// can match a new tag. (Eager cancel pushes once per add, never for a
// deadline moved earlier, so a slot's generations, which retire it,
// come round before its tags do: the rebuild is lazy cancel's only.)
func (o *owner) push(slot uint32, t *task, when int64) {
	if t.tag == math.MaxUint32-1 {
		o.rebuild()
	}
	t.tag++
	o.heap.push(entry{when: when, slot: slot, tag: t.tag})
}

// collectDue hands every task due at now to the run queue, in chunks, and
// fixes the entries of deadlines that Reset postponed while they are within
// lookAhead of now. It first fixes the entries of deadlines moved earlier
// without a request, if the earliest of them is due.
//
// The heap hands out its entries by their deadlines alone (popBy), and the
// owner decides what becomes of each one it takes out (collect): the heap
// knows entries, the owner knows tasks.
func (o *owner) collectDue(now int64) {
	if o.inbox.takeMovedEarlier(now) {
		o.rebuild()
	}
	by := min(now+int64(lookAhead), never-1) // an entry at never never comes due
	for {
		e, ok := o.heap.popBy(by)
		if !ok || !o.collect(e, now) {
			return
		}
	}
}

// collect decides, at now, what becomes of e, an entry just taken out of
// the heap: a dead one is discarded; a live one whose task's deadline has
// moved goes back in at the new deadline; a due one-shot is handed over and
// leaves the heap; a due repeating task is handed over and goes back in at
// its next deadline. A live entry not due yet goes back in as it was, and
// collect reports false: it is the earliest deadline, and the rest can
// wait. An entry put back keeps its tag: it is still its task's current
// entry.
func (o *owner) collect(e entry, now int64) (more bool) {
	for {
		t, id, cell, w, live := o.classify(e)
		if !live {
			o.cancel.discarded(1)
			return true
		}
		if when := wordWhen(w); when != e.when {
			// Reset moved the deadline: put the entry back at it.
			e.when = when
			o.heap.push(e)
			return true
		}
		if e.when > now {
			o.heap.push(e) // the earliest deadline, and it is not due yet
			return false
		}
		if w&flagRepeat == 0 {
			// One-shot: hand the slot from the owner to a run.
			if !t.comeDue(w) {
				continue // a caller changed it meanwhile; look again
			}
			o.ended.Add(1)
			o.due(due{t: t, id: id, cell: cell, when: e.when, slot: e.slot})
			return true
		}
		next, missed := nextRun(e.when, o.intervals[e.slot], now)
		run, ok := t.repeat(w, next)
		if !ok {
			continue // a caller changed it meanwhile; look again
		}
		o.heap.push(entry{when: next, slot: e.slot, tag: e.tag})
		if !run {
			missed++ // the previous run is still going: skip this one
		}
		if missed > 0 {
			o.out.skipped.Add(uint64(missed))
		}
		if run {
			o.due(due{t: t, id: id, cell: cell, when: e.when, slot: e.slot, repeat: true})
		}
		return true
	}
}

// classify tells the heap entries that stand for a pending task (live)
// from the dead: tombstones, whose task has a current entry elsewhere or
// none, and entries of cancelled tasks, whose hold it lets go of. It
// returns a live entry's task, its ID, its argument cell (slab.held) and
// the task's word as it read it.
func (o *owner) classify(e entry) (t *task, id TaskID, cell *any, w uint64, live bool) {
	t, id, cell = o.slab.held(e.slot)
	if e.tag != t.tag {
		return nil, 0, nil, 0, false // a tombstone
	}
	w = t.state()
	if invariantsOn {
		checkOwned(w, t.generation())
	}
	if wordStatus(w) == statusCancelled {
		o.letGo(e.slot, t)
		return nil, 0, nil, 0, false
	}
	return t, id, cell, w, true
}

// due collects d for the run queue, handing a chunk over as soon as it is
// full.
func (o *owner) due(d due) {
	o.dueNow = append(o.dueNow, d)
	o.dueCount++
	n := len(o.dueNow)
	if n >= handOverChunk || (n == firstHandOver && o.dueCount == firstHandOver) {
		o.handOver()
		if o.retryAt == 0 {
			o.startDrains()
		}
	}
}

// handOver moves the collected due tasks to the run queue. It clears what
// it moved, so that the owner's buffer keeps no task reachable.
func (o *owner) handOver() {
	if len(o.dueNow) == 0 {
		return
	}
	o.runner.q.put(o.dueNow)
	clear(o.dueNow)
	o.dueNow = o.dueNow[:0]
}

// startDrains starts a drain if jobs are queued and no drain is starting.
// The pool never makes it wait (see runner.start). When the pool refuses,
// it sets retryAt, backing off from minRetry to maxRetry; jobs stay queued
// meanwhile, and drains already going keep taking them.
func (o *owner) startDrains() {
	err := o.runner.start()
	switch {
	case err == nil:
		o.retryAt, o.backoff = 0, 0
	case errors.Is(err, ants.ErrPoolClosed):
		// A pool given with WithPool was released under the scheduler: no
		// queued job can ever run.
		o.runner.dropQueued()
		o.retryAt, o.backoff = 0, 0
	default:
		o.backoff = min(max(2*o.backoff, minRetry), maxRetry)
		o.retryAt = o.now() + int64(o.backoff)
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

// letGo lets go of the owner's hold on t, whose entry has left the heap (or
// never entered it). The slot is freed once no run holds it either.
func (o *owner) letGo(slot uint32, t *task) {
	w := t.letGo(flagOwned)
	if w&flagRepeat != 0 {
		delete(o.intervals, slot)
		if len(o.intervals) == 0 {
			o.intervals = nil // a Go map never shrinks: let a large one go
		}
	}
	if unheld(w) {
		o.freed = append(o.freed, slot)
	}
}

// flush ends a loop iteration: frees the slots let go of during it, hands
// the due tasks to the run queue and publishes the heap's size.
func (o *owner) flush() {
	if len(o.freed) > 0 {
		o.slab.free(o.freed) // the owner trims the slab itself, next
		o.freed = o.freed[:0]
		if cap(o.freed) > bigBuffer {
			o.freed = nil // after a rebuild that let go of many: shrink it
		}
	}
	o.handOver()
	o.heapLen.Store(int64(o.heap.len()))
	if o.barriers != 0 {
		o.passed.Add(uint64(o.barriers))
		o.barriers = 0
	}
}

// shrinkWhenQuiet shrinks a heap that emptied out (deadlineHeap.shrink)
// when no deadline is due within quietGap of now.
func (o *owner) shrinkWhenQuiet(now int64) {
	if o.heap.len() > 0 && o.heap.top().when-now < int64(quietGap) {
		return
	}
	o.heap.shrink()
}

// rebuild rebuilds the heap in O(n): without the entries that no longer
// stand for a pending task (tombstones, and entries of cancelled tasks,
// whose holds it lets go of), and with every deadline that moved earlier
// than its entry fixed.
func (o *owner) rebuild() {
	n := o.heap.retain(func(e *entry) bool {
		_, _, _, w, live := o.classify(*e)
		e.when = min(e.when, wordWhen(w))
		return live
	})
	o.heap.heapify()
	o.cancel.discarded(n) // once: callers read the count
	o.heap.shrinkAfterRebuild(o.cancel.regrowth(o.heap.len()))
}

// dropAll ends the owner's life at Shutdown: every task still pending is
// dropped (counted in Stats.Dropped), its job cleared, and the heap's memory
// returned. New requests can no longer arrive: Shutdown closed the inbox
// before it told the owner to quit.
func (o *owner) dropAll() {
	o.applyRequests()
	o.heap.retain(func(e *entry) bool {
		t, _, cell, _, live := o.classify(*e)
		if live {
			// The owner holds t: its generation stays.
			if t.cancel(t.generation(), cell) {
				o.ended.Add(1)
				o.out.dropped.Add(1)
			}
			o.letGo(e.slot, t)
		}
		return false
	})
	o.heap.shrink()
	o.intervals = nil
	o.dueNow = nil
	o.slab.free(o.freed)
	o.freed = nil
	o.heapLen.Store(0)
}
