package schedule

import (
	"strconv"
	"sync/atomic"
)

// CancelStrategy selects what [Scheduler.CancelTask] does with the
// cancelled task's entry in the deadline heap. Both strategies give the
// same results to callers; they differ in cost and memory.
type CancelStrategy uint8

const (
	// LazyCancel leaves the entry behind as a tombstone: cancelling is O(1)
	// and never waits for the scheduler. Tombstones are discarded when they
	// reach the top of the heap, and the heap is rebuilt in O(n) when they
	// pass a fixed share of it, so that it stays within a constant factor of
	// the live tasks.
	LazyCancel CancelStrategy = iota + 1

	// EagerCancel removes the entry from the heap at once, an O(log n) step
	// for the scheduler's goroutine. The heap holds exactly the live tasks.
	EagerCancel
)

// String returns "lazy" or "eager", and "CancelStrategy(n)" for any other
// value n.
func (c CancelStrategy) String() string {
	switch c {
	case LazyCancel:
		return "lazy"
	case EagerCancel:
		return "eager"
	}
	return "CancelStrategy(" + strconv.Itoa(int(c)) + ")"
}

// canceller is everything in which the two cancel strategies differ: what
// a cancel leaves in the heap, what a deadline moved earlier does to its
// entry, and when the heap must be rebuilt. The owner pushes entries and
// tells a task's current entry from its tombstones itself (task.tag); a
// strategy holds no reference to the owner or to a task, and gets what it
// needs as arguments. The owner goroutine calls every method but
// cancelled, cancels and tombstones.
type canceller interface {
	// cancelled is called by CancelTask, on the caller's goroutine, once it
	// has cancelled the task of generation gen in slot, of slab shard k. It
	// counts the cancel.
	cancelled(slot, gen uint32, k uint8)
	// cancels returns the number of cancels counted; any goroutine may
	// call it.
	cancels() uint64
	// tombstones returns the number of tombstones in the heap, or on their
	// way to it; any goroutine may call it.
	tombstones() int64

	// movedEarlier is told that the deadline of the task in slot moved
	// earlier, to when. It moves the task's entry in h and reports true,
	// or reports false, and the owner then pushes a new entry, which makes
	// the old one a tombstone.
	movedEarlier(h *deadlineHeap, slot uint32, when int64) (moved bool)
	// discarded counts n tombstones that left the heap, or the add of a
	// task cancelled before its entry was pushed.
	discarded(n int)

	// wantsRebuild reports, once per loop iteration, that a heap of
	// heapLen entries should be rebuilt. beforeTrim says, when the slab
	// has chunks to trim, whether it may now (no entry may name a
	// slot of such a chunk), and whether the heap must be rebuilt first.
	// beforeSleep runs before the owner sleeps.
	wantsRebuild(heapLen int) bool
	// regrowth returns how many entries a heap of n entries, just
	// rebuilt, may grow by before the strategy asks for the next rebuild,
	// for the heap to keep room for (deadlineHeap.shrinkAfterRebuild).
	regrowth(n int) int
	beforeTrim(heapLen int) (trim, rebuild bool)
	beforeSleep(heapLen int)
}

// newCanceller returns the canceller of strategy c. Eager cancel sends its
// removals through in; lazy cancel wakes the owner through in, and weighs a
// rebuild against the chunks sl has to trim.
func newCanceller(c CancelStrategy, sl *slab, in *inbox) canceller {
	if c == EagerCancel {
		return &eager{inbox: in}
	}
	l := &lazy{inbox: in, slab: sl}
	for i := range l.room {
		l.room[i].n.Store(1) // until the owner shares out room
	}
	return l
}

// lazy is the lazy cancel strategy: CancelTask only marks the task
// cancelled, and its entry stays in the heap as a tombstone until it
// reaches the top or the heap is rebuilt. A deadline moved earlier gets a
// new entry, and the old one becomes a tombstone too; the owner tells
// tombstones by their tags (task.tag).
//
// Tombstones are bounded: the owner rebuilds the heap in O(n) once they
// make up more than 1/rebuildShare of it. Cancels never message the owner,
// so to look at the heap in time it shares out, before it sleeps, the
// cancels that would take the heap there among the shards (room); the
// cancel that uses up its shard's share wakes it. However the cancels fall
// on the shards, one of them uses up its share by the time the total does,
// give or take one per shard.
type lazy struct {
	cancelCount shardedCount // every cancel counted made a tombstone
	inbox       *inbox       // to wake the owner when a shard's room runs out
	slab        *slab        // to weigh a rebuild against the chunks it frees

	// ownTombs is the owner's part of the tombstone count: the tombstones
	// it made (movedEarlier) less those it discarded. Only the owner writes
	// it.
	ownTombs atomic.Int64
	room     [shardCount]struct {
		n atomic.Int64
		_ cacheLinePad
	}
	// What the last sharing of room was based on (owner only): the cancels
	// counted and the heap's length then.
	sharedAt struct {
		cancels uint64
		heap    int
	}
}

// rebuildShare: tombstones may make up at most 1/rebuildShare of the heap,
// a quarter of the live entries, so the heap holds at most 1.25 entries per
// live task. (The Go runtime's timers let deleted ones make up 1/4 of the heap,
// 1.33 entries per live one.)
const rebuildShare = 5

func (l *lazy) cancels() uint64 { return l.cancelCount.sum() }

func (l *lazy) cancelled(_, _ uint32, k uint8) {
	l.cancelCount[k].n.Add(1)
	if l.room[k].n.Add(-1) == 0 {
		l.inbox.wakeOwner()
	}
}

// tombstones may count, for a moment, a tombstone the owner has already
// discarded, before the cancel that made it is counted: hence the clamp.
func (l *lazy) tombstones() int64 {
	return max(l.ownTombs.Load()+int64(l.cancels()), 0)
}

// movedEarlier leaves the entry where it is, to become a tombstone once
// the owner has pushed the new one.
func (l *lazy) movedEarlier(*deadlineHeap, uint32, int64) bool {
	l.ownTombs.Store(l.ownTombs.Load() + 1)
	return false
}

func (l *lazy) discarded(n int) { l.ownTombs.Store(l.ownTombs.Load() - int64(n)) }

// regrowth: tombstones may make up 1/rebuildShare of the heap before the
// next rebuild, so the n entries kept regrow by n/(rebuildShare-1).
func (l *lazy) regrowth(n int) int { return n / (rebuildShare - 1) }

func (l *lazy) wantsRebuild(heapLen int) bool {
	d := l.tombstones()
	return d > 0 && rebuildShare*d > int64(heapLen)
}

// beforeTrim clears the heap of tombstones, which may name free slots,
// before the slab trims chunks. The rebuild costs O(n), so it is done
// for the chunks only when they hold at least 1/trimShare as many slots as
// the heap has entries; smaller chunks wait for the next rebuild that
// tombstones call for anyway (wantsRebuild), or for more chunks to empty.
func (l *lazy) beforeTrim(heapLen int) (trim, rebuild bool) {
	if l.tombstones() == 0 {
		return true, false
	}
	if trimShare*l.slab.emptySlots() < heapLen {
		return false, false
	}
	return true, true
}

// beforeSleep shares out room among the shards. The shares stand until a
// cancel uses one up, or the heap shrinks (a share sized for a larger heap
// would let tombstones pass 1/rebuildShare of it): with neither since the
// last sharing, it leaves them, and the owner writes to no shard's cache
// line.
func (l *lazy) beforeSleep(heapLen int) {
	cancels, n := l.cancels(), heapLen
	if cancels == l.sharedAt.cancels && n >= l.sharedAt.heap {
		return
	}
	l.sharedAt.cancels, l.sharedAt.heap = cancels, n
	room := int64(n)/rebuildShare - l.tombstones() + 1
	share := max((room+shardCount-1)/shardCount, 1)
	for i := range l.room {
		l.room[i].n.Store(share)
	}
}

// eager is the eager cancel strategy: CancelTask asks the owner to remove
// the task's entry at once. Its heap keeps every entry's position
// (deadlineHeap.keepPositions), so the removal is an O(log n) step, and the
// heap holds exactly the live tasks. No entry is ever a tombstone, and there
// are none to count: a task's one entry always carries its current tag.
type eager struct {
	cancelCount shardedCount
	inbox       *inbox // where CancelTask sends the removal
}

func (e *eager) cancelled(slot, gen uint32, k uint8) {
	e.cancelCount[k].n.Add(1)
	e.inbox.send(k, op{slot: slot, gen: gen, kind: opRemove}, 0)
}

func (e *eager) cancels() uint64 { return e.cancelCount.sum() }
func (*eager) tombstones() int64 { return 0 }

// movedEarlier moves the entry in place, from the position the heap
// keeps for slot.
func (*eager) movedEarlier(h *deadlineHeap, slot uint32, when int64) bool {
	h.lower(slot, when)
	return true
}

func (*eager) discarded(int)                       {}
func (*eager) wantsRebuild(int) bool               { return false }
func (*eager) regrowth(int) int                    { return 0 }
func (*eager) beforeTrim(int) (trim, rebuild bool) { return true, false }
func (*eager) beforeSleep(int)                     {}
