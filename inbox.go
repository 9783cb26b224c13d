package schedule

import (
	"math/bits"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// Callers reach the owner goroutine through the inbox: laneCount lanes,
// each a slice of requests under a lock of its own, which the owner swaps
// out whole (drainInbox in owner.go). A request costs a lock and an append,
// never a channel rendezvous.
//
// Why lanes: every ScheduleOne allocates a slot and queues a request. With
// one lock for all, callers on many cores queue up behind each other, and
// past GOMAXPROCS goroutines one that is preempted while holding the lock
// parks all the others. An add takes the first lane it finds free
// (TryLock), starting from the one that adds on its core used last
// (laneHint), and waits for a lane only when all are busy. Each lane also
// hands out the slots of its own slab chunks, so an add takes one lock, and
// every later request about a task goes to the lane of the task's chunk:
// the requests about one task stay in order. With eager cancel, re-arming
// by cancel and add from 8 or 32 goroutines on 2 cores costs half the CPU
// per pair it did with one lock (BenchmarkParallelCancelAdd).
//
// A request wakes the owner only when it cannot wait: when it concerns a
// deadline earlier than the one the sleeping owner's timer is set for
// (Scheduler.sleepUntil), or it is an eager removal, or its lane has grown
// to laneWake requests. Everything else waits for the owner's next wake,
// which comes before any of its deadlines: a fleet that adds and moves
// deadlines tens of seconds out costs the owner one wake per timer fire or
// per laneWake requests, not one per request.
//
// The handshake that keeps a request from being forgotten: the owner
// publishes sleepUntil and then looks once more at Scheduler.busyLanes, in
// which a request that finds its lane empty sets the lane's bit before it
// reads sleepUntil. Either the owner sees the bit, or the caller sees the
// timer the owner sleeps on and wakes it if the request cannot wait for it.
// (The owner clears a lane's bit under the lane's lock as it takes the
// lane's requests, so a lane with requests always has its bit set.)

// op is a request from a caller to the owner goroutine, naming a task by
// slot and generation.
type op struct {
	slot     uint32
	gen      uint32
	kind     opKind
	interval int64 // opAdd of a repeating task: its interval; else 0
}

type opKind uint8

const (
	opAdd     opKind = iota // a new task: push its entry
	opEarlier               // Reset moved a deadline earlier than the entry's
	opRemove                // eager CancelTask: remove the entry now
)

// laneCount is the number of inbox lanes. laneMax bounds the requests
// waiting in a lane: callers that find it full wait until the owner empties
// it, so a burst of calls cannot outrun the owner without bound (65,536
// requests in all). laneWake is the length at which a request wakes the
// owner whatever it asks for, well before the lane is full.
const (
	laneCount = 8
	laneMax   = 1 << 13
	laneWake  = 1 << 9
)

// lane is one lane of the inbox, with the slot allocator of its chunks.
// mu guards every field but processed.
type lane struct {
	mu       sync.Mutex
	ops      []op      // requests for the owner, in arrival order
	room     sync.Cond // L is mu; signalled when the owner empties a full lane
	enqueued uint64    // ops ever appended
	// from is the earliest wakeBy of the adds and earlier Resets in ops
	// (never if there are none). Removals are left out: the order in which
	// due tasks are handed over does not depend on them.
	from int64

	// The allocator (slab.go): free holds the lane's slots ready for reuse;
	// the left slots from next on, in its newest chunk, were never used, and
	// start at generation gen. chunks counts the chunks the lane owns, empty
	// those whose slots are all in free.
	free       []uint32
	next, left uint32
	gen        uint32
	chunks     int
	empty      int

	// Counters of the tasks whose slots the lane hands out (counters.go):
	// adds through the lane (written under mu), cancels of its tasks, and
	// the lazy cancels left before the owner must look at its heap.
	scheduled     atomic.Uint64
	cancelled     atomic.Uint64
	tombstoneRoom atomic.Int64

	processed atomic.Uint64 // ops the owner has applied; written by the owner
	bit       uint32        // the lane's bit in Scheduler.busyLanes
	_         cacheLinePad
}

func (s *Scheduler) initLanes() {
	for i := range s.lanes {
		s.lanes[i].room.L = &s.lanes[i].mu
		s.lanes[i].bit = 1 << i
		s.lanes[i].from = never
		s.lanes[i].tombstoneRoom.Store(1) // until the owner shares out room
	}
}

// laneOf returns the lane of the chunk that holds slot.
func (s *Scheduler) laneOf(slot uint32) *lane {
	return &s.lanes[s.slab.laneOf(slot)]
}

// laneHint is the lane an add on this P tried first last time. Hints live
// in a sync.Pool, which keeps one per P: adds on one core keep to one lane,
// so a single caller always finds the same lane (and the same chunks) warm
// in its cache, and callers on different cores keep to different lanes.
// A hint the pool drops at a collection is simply drawn again.
type laneHint struct{ k uint32 }

var laneHints = sync.Pool{New: func() any { return &laneHint{k: rand.Uint32() % laneCount} }}

// lockAnyLane locks and returns the first lane found free, trying them from
// the hint of the caller's P on; if all are busy it waits for that one.
func (s *Scheduler) lockAnyLane() (*lane, uint8) {
	h := laneHints.Get().(*laneHint)
	defer laneHints.Put(h)
	for i := range uint32(laneCount) {
		k := (h.k + i) % laneCount
		if l := &s.lanes[k]; l.mu.TryLock() {
			h.k = k
			return l, uint8(k)
		}
	}
	l := &s.lanes[h.k]
	l.mu.Lock()
	return l, uint8(h.k)
}

// add allocates a task for job fn(id, arg) (fn nil: arg is a func()) and
// queues it for the owner.
func (s *Scheduler) add(fn func(TaskID, any), arg any, delay, interval time.Duration) (TaskID, error) {
	when := s.deadline(delay)
	l, k := s.lockAnyLane()
	for len(l.ops) >= laneMax && !s.closed.Load() {
		l.room.Wait()
	}
	if s.closed.Load() {
		l.mu.Unlock()
		return 0, ErrShutdown
	}
	slot, t, ok := s.slab.alloc(l, k)
	if !ok {
		l.mu.Unlock()
		return 0, ErrTooManyTasks
	}
	t.fn = fn
	t.arg = arg
	flags := uint64(statusPending | flagOwned)
	if interval != 0 {
		flags |= flagRepeat
	}
	t.word.Store(packWord(when, flags))
	gen := t.generation()
	l.scheduled.Add(1)
	wake := s.appendOp(l, op{slot: slot, gen: gen, kind: opAdd, interval: int64(interval)}, when)
	l.mu.Unlock()
	if wake {
		s.wakeOwner()
	}
	return s.slab.id(slot, gen), nil
}

// appendOp queues o in lane l for the owner and reports whether the owner
// needs waking: o must be applied before wakeBy (0: at once). l.mu must be
// held.
func (s *Scheduler) appendOp(l *lane, o op, wakeBy int64) bool {
	l.ops = append(l.ops, o)
	l.enqueued++
	if o.kind != opRemove {
		l.from = min(l.from, wakeBy)
	}
	if len(l.ops) == 1 {
		s.busyLanes.Or(l.bit)
	}
	return wakeBy < s.sleepUntil.Load() || len(l.ops) == laneWake
}

// waitingFrom returns the earliest deadline that a request waiting in the
// inbox concerns, or never if none does. Called by the owner.
func (s *Scheduler) waitingFrom() int64 {
	from := int64(never)
	for busy := s.busyLanes.Load(); busy != 0; busy &= busy - 1 {
		l := &s.lanes[bits.TrailingZeros32(busy)]
		l.mu.Lock()
		from = min(from, l.from)
		l.mu.Unlock()
	}
	return from
}

// send queues o for the owner, to be applied before wakeBy (0: at once),
// waiting while its lane is full. It drops o after Shutdown, when no owner
// is left to act on it.
func (s *Scheduler) send(o op, wakeBy int64) {
	l := s.laneOf(o.slot)
	l.mu.Lock()
	for len(l.ops) >= laneMax && !s.closed.Load() {
		l.room.Wait()
	}
	if s.closed.Load() {
		l.mu.Unlock()
		return
	}
	wake := s.appendOp(l, o, wakeBy)
	l.mu.Unlock()
	if wake {
		s.wakeOwner()
	}
}

// release returns reusable slots to the allocators of their lanes, under
// one lock per lane. It may reorder slots.
func (s *Scheduler) release(slots []uint32) {
	for len(slots) > 0 {
		// Move the slots of the first one's lane to the front, then hand
		// them over together.
		k := s.slab.laneOf(slots[0])
		n := 0
		for i, slot := range slots {
			if s.slab.laneOf(slot) == k {
				slots[n], slots[i] = slots[i], slots[n]
				n++
			}
		}
		l := &s.lanes[k]
		l.mu.Lock()
		for _, slot := range slots[:n] {
			ch := s.slab.chunkOf(slot)
			ch.free++
			if ch.free == chunkSize {
				l.empty++
			}
		}
		l.free = append(l.free, slots[:n]...)
		trim := l.wantsTrim()
		l.mu.Unlock()
		if trim && s.trimLanes.Or(l.bit)&l.bit == 0 {
			s.wakeOwner()
		}
		slots = slots[n:]
	}
}

// wantsTrim reports whether lane l holds enough chunks with every slot free
// to give them back: at least two, and a quarter of its chunks. Once a
// spike's tasks are gone, the lane keeps one such chunk and the one it is
// handing out, and the pass over the free list is paid for by the chunks it
// gives back. l.mu must be held.
func (l *lane) wantsTrim() bool { return l.empty >= 2 && 4*l.empty >= l.chunks }

// trim gives back every chunk of lane l whose slots are all free but one,
// kept for the next adds, and lets go of most of a free list that has
// shrunk. Only the owner calls it, and with lazy cancel only on a heap
// without tombstones: a tombstone may name a free slot, and must never
// reach a chunk given back (giveBackChunks in owner.go). l.mu must be held.
func (s *Scheduler) trim(l *lane) {
	const (
		reserve = -chunkSize // marks the chunk kept
		leaving = -1         // marks the chunks given back
	)
	var gone []uint32
	kept := (*chunk)(nil)
	for _, slot := range l.free {
		ch := s.slab.chunkOf(slot)
		if ch.free != chunkSize {
			continue
		}
		if kept == nil {
			kept, ch.free = ch, reserve
			continue
		}
		ch.free = leaving
		gone = append(gone, slot>>chunkBits)
	}
	n := 0
	for _, slot := range l.free {
		if s.slab.chunkOf(slot).free != leaving {
			l.free[n] = slot
			n++
		}
	}
	l.free = l.free[:n]
	if cap(l.free) > 4096 && n < cap(l.free)/4 {
		l.free = append(make([]uint32, 0, 2*n), l.free...)
	}
	if kept != nil {
		kept.free = chunkSize
	}
	for _, c := range gone {
		s.slab.giveBack(c)
	}
	l.chunks -= len(gone)
	l.empty -= len(gone)
}

// closeLanes marks the scheduler closed for every lane: once it returns,
// every add either has queued its request or sees closed, and callers
// waiting for room give up.
func (s *Scheduler) closeLanes() {
	s.closed.Store(true)
	for i := range s.lanes {
		l := &s.lanes[i]
		l.mu.Lock()
		l.room.Broadcast()
		l.mu.Unlock()
	}
}

// wakeOwner makes sure the owner goroutine runs its loop once more.
func (s *Scheduler) wakeOwner() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}
