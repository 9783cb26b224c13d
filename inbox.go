package schedule

import (
	"math/bits"
	"sync"
	"sync/atomic"
	"time"
)

// The inbox carries requests from callers to the owner goroutine. It has
// shardCount lanes, one per slab shard, each a slice of requests under a
// lock of its own, which the owner swaps out whole (inbox.take). A
// request costs a lock and an append, never a channel rendezvous. Every
// request about a task goes to the lane of the task's shard, so the
// requests about one task reach the owner in the order they were made.
//
// A request wakes the owner only when it cannot wait: when it concerns a
// deadline earlier than the one the sleeping owner's timer is set for
// (sleepUntil), or it is an eager removal, or its lane has grown to laneWake
// requests. Everything else waits for the owner's next wake-up, which comes
// before any of its deadlines: a fleet that adds and moves deadlines tens of
// seconds out costs the owner one wake-up per timer fire or per laneWake
// requests, not one per request.
//
// The handshake that keeps a request from being forgotten: the owner
// publishes sleepUntil and then looks once more at busy, in which a request
// that finds its lane empty sets the lane's bit before it reads sleepUntil.
// Either the owner sees the bit, or the caller sees the timer the owner
// sleeps on and wakes it if the request cannot wait for it. (The owner
// clears a lane's bit under the lane's lock as it takes the lane's
// requests, so a lane with requests always has its bit set.)
//
// Deadlines moved earlier far ahead need no request at all: Reset only
// lowers movedEarlier, the earliest of them, and the owner fixes them all
// in one pass when it comes due (see deferMoves).
type inbox struct {
	lanes [shardCount]lane

	// busy has bit k set while lane k holds requests.
	busy atomic.Uint32
	// sleepUntil is written by the owner: while it sleeps, the deadline its
	// timer is set for (never when none); 0 while it is awake.
	sleepUntil atomic.Int64
	// movedEarlier is the earliest deadline a Reset has moved a task to,
	// ahead of its heap entry, without a request (never when none): callers
	// lower it, the owner takes it when it fixes the heap.
	movedEarlier atomic.Int64
	// closed is set once, by Shutdown.
	closed atomic.Bool
	// wake holds a token while the owner has been asked to wake.
	wake chan struct{}

	// Owner only: how many takes in a row handed back a buffer of which
	// they had used little (reuse).
	small int
}

// lane is one lane of the inbox. mu guards every field.
type lane struct {
	mu   sync.Mutex
	ops  []op      // requests for the owner, in arrival order
	room sync.Cond // L is mu; signalled when the owner empties a full lane
	// from is the earliest wakeBy of the adds and earlier moves in ops
	// (never if there are none). Removals are left out: the order in which
	// due tasks are handed over does not depend on them.
	from int64
	_    cacheLinePad
}

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
	opEarlier               // Reset moved a deadline earlier than its entry's
	opRemove                // eager CancelTask: remove the entry now
	opBarrier               // names no task: counted once applied (owner.barriers)
)

// laneMax bounds the requests waiting in a lane: callers that find it full
// wait until the owner empties it, so that a burst of calls cannot outrun
// the owner without bound. This is the bound the Scheduler's godoc speaks
// of. A caller's adds keep to one shard, its processor's (slab.go), so a
// single producer waits once its own lane holds laneMax requests; all the
// lanes together hold at most shardCount·laneMax. laneWake is the length
// at which a request wakes the owner whatever it asks for, well before the
// lane is full.
const (
	laneMax  = 1 << 13
	laneWake = 1 << 9
)

// deferMoves is how far ahead a deadline moved earlier must be for Reset to
// leave it to the owner's next pass instead of sending a request. A
// heartbeat moves the same deadline again, later, long before it comes due,
// so fixing its entry at once is wasted work as often as not. Passes are
// O(n), like the Go runtime's adjustment of timers moved earlier; one comes
// at most once per deferMoves, since a pass takes movedEarlier back to never
// and every later deferred move is at least deferMoves ahead of its Reset.
//
// Why no move is missed: Reset changes the task's word and then lowers
// movedEarlier; the owner first takes movedEarlier back to never and then
// reads the words. A Reset whose lowering the owner took is seen by the
// pass; one whose lowering came after it leaves movedEarlier for the next
// pass. Invariant: every pending task whose deadline is earlier than its
// heap entry either has an opEarlier request on its way to the owner or has
// a deadline no earlier than movedEarlier.
const deferMoves = time.Second

func (in *inbox) init() {
	for i := range in.lanes {
		l := &in.lanes[i]
		l.room.L = &l.mu
		l.from = never
	}
	in.movedEarlier.Store(never)
	in.wake = make(chan struct{}, 1)
}

// send queues o in lane k, to be applied before wakeBy (0: at once),
// waiting while the lane is full. It reports false, queuing nothing, once
// the inbox is closed.
func (in *inbox) send(k uint8, o op, wakeBy int64) bool {
	l := &in.lanes[k]
	l.mu.Lock()
	for len(l.ops) >= laneMax && !in.closed.Load() {
		l.room.Wait()
	}
	if in.closed.Load() {
		l.mu.Unlock()
		return false
	}
	l.ops = append(l.ops, o)
	if o.kind != opRemove {
		l.from = min(l.from, wakeBy)
	}
	if len(l.ops) == 1 {
		in.busy.Or(1 << k)
	}
	wake := wakeBy < in.sleepUntil.Load() || len(l.ops) == laneWake
	l.mu.Unlock()
	if wake {
		in.wakeOwner()
	}
	return true
}

// wakeOwner makes sure the owner goroutine runs its loop once more.
func (in *inbox) wakeOwner() {
	select {
	case in.wake <- struct{}{}:
	default:
	}
}

// noteMovedEarlier records that a Reset moved a deadline earlier, to when,
// without a request, and wakes the owner if its timer is set for later.
func (in *inbox) noteMovedEarlier(when int64) {
	for {
		cur := in.movedEarlier.Load()
		if when >= cur {
			return
		}
		if in.movedEarlier.CompareAndSwap(cur, when) {
			break
		}
	}
	if when < in.sleepUntil.Load() {
		in.wakeOwner()
	}
}

// close closes the inbox: once it returns, every request either has been
// queued or sees closed, and callers waiting for room give up.
func (in *inbox) close() {
	in.closed.Store(true)
	for i := range in.lanes {
		l := &in.lanes[i]
		l.mu.Lock()
		l.room.Broadcast()
		l.mu.Unlock()
	}
}

// The rest is for the owner goroutine.

// waiting reports whether requests wait in the inbox.
func (in *inbox) waiting() bool { return in.busy.Load() != 0 }

// lanesWaiting returns the lanes that hold requests, bit k for lane k. The
// owner takes each of them once (take), so that callers who keep one lane
// busy cannot hold up the requests in the others.
func (in *inbox) lanesWaiting() uint32 { return in.busy.Load() }

// take swaps out the requests of lane k, in arrival order, for the owner to
// apply, and takes back applied, the requests the owner took last and has
// applied since. The owner and the lanes trade buffers rather than
// allocate: the lane's requests come out in the lane's buffer, and the
// buffer of the requests applied goes into the lane, emptied (reuse).
func (in *inbox) take(k int, applied []op) []op {
	empty := in.reuse(applied)
	l := &in.lanes[k]
	l.mu.Lock()
	in.busy.And(^uint32(1 << k))
	if len(l.ops) >= laneMax {
		l.room.Broadcast()
	}
	ops := l.ops
	l.ops, l.from = empty, never
	l.mu.Unlock()
	return ops
}

// Buffers of requests grow in a burst. A buffer larger than bigBuffer
// shrinks (the next one grows afresh) once smallTakes takes in a row used
// less than 1/smallShare of it: not at the first small take,
// or a steady stream of requests would regrow it again and again.
const (
	bigBuffer  = 4096
	smallTakes = 16
	smallShare = 16
)

// reuse returns ops, a buffer of requests taken and applied, emptied for
// the next requests, or nil, to shrink it away, when bursts that needed its
// size are over. Requests hold no pointers: emptying is reslicing.
func (in *inbox) reuse(ops []op) []op {
	if c := cap(ops); c > bigBuffer && len(ops) < c/smallShare {
		in.small++
	} else {
		in.small = 0
	}
	if in.small >= smallTakes {
		in.small = 0
		return nil
	}
	return ops[:0]
}

// waitingFrom returns the earliest deadline that a request waiting in the
// inbox concerns, or never if none does.
func (in *inbox) waitingFrom() int64 {
	from := int64(never)
	for busy := in.busy.Load(); busy != 0; busy &= busy - 1 {
		l := &in.lanes[bits.TrailingZeros32(busy)]
		l.mu.Lock()
		from = min(from, l.from)
		l.mu.Unlock()
	}
	return from
}

// sleep publishes that the owner sleeps until wakeAt (never: no timer) and
// reports whether it may: false, with nothing published, when a request or
// an earlier move came in meanwhile.
func (in *inbox) sleep(wakeAt int64) bool {
	in.sleepUntil.Store(wakeAt)
	if in.waiting() || in.movedEarlier.Load() < wakeAt {
		in.sleepUntil.Store(0)
		return false
	}
	return true
}

// awake publishes that the owner is awake.
func (in *inbox) awake() { in.sleepUntil.Store(0) }

// takeMovedEarlier reports whether the earliest deadline moved earlier
// without a request is due at now, and if so takes it back to never: the
// owner must then fix every entry of the heap.
func (in *inbox) takeMovedEarlier(now int64) bool {
	if in.movedEarlier.Load() > now {
		return false
	}
	in.movedEarlier.Store(never)
	return true
}
