package schedule

import (
	"math"
	"sync/atomic"
)

// lazy is the lazy cancel strategy: CancelTask only marks the task
// cancelled, and its entry stays in the heap as a tombstone until it
// reaches the top or the heap is rebuilt. A deadline moved earlier gets a
// new entry, and the old one becomes a tombstone too.
//
// Each task's tag is that of its current entry; pushing an entry gives
// it the next tag, so that every older entry of the task stops matching
// (current). Tags are 32 bits: before they come round, the heap is rebuilt,
// which clears out every tombstone.
//
// Tombstones are bounded: the owner rebuilds the heap in O(n) once they
// make up more than 1/rebuildShare of it. Cancels never
// message the owner, so to look at the heap in time it shares out, before
// it sleeps, the cancels that would take the heap there among the shards
// (room); the cancel that uses up its shard's share wakes it. However the
// cancels fall on the shards, one of them uses up its share by the time the
// total does, give or take one per shard.
type lazy struct {
	inbox  *inbox      // to wake the owner when a shard's room runs out
	slab   *slab       // to weigh a rebuild against the chunks it frees
	counts *taskCounts // every cancel counted there made a tombstone

	// dead is the owner's part of the tombstone count: the tombstones it
	// made (movedEarlier) less those it discarded. Only the owner writes
	// it.
	dead atomic.Int64
	room [shardCount]struct {
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
// live task. (The Go runtime's timers let dead ones make up 1/4 of the heap,
// 1.33 entries per live one.)
const rebuildShare = 5

func (l *lazy) cancelled(_, _ uint32, k uint8) {
	if l.room[k].n.Add(-1) == 0 {
		l.inbox.wakeOwner()
	}
}

// tombstones may count, for a moment, a tombstone the owner has already
// discarded, before the cancel that made it is counted: hence the clamp.
func (l *lazy) tombstones() int64 {
	return max(l.dead.Load()+int64(l.counts.cancelled()), 0)
}

func (*lazy) push(h *deadlineHeap, slot uint32, t *task, when int64) {
	t.tag++
	h.push(entry{when: when, slot: slot, tag: t.tag})
}

func (*lazy) current(e entry, t *task) bool { return e.tag == t.tag }

func (l *lazy) movedEarlier(h *deadlineHeap, slot uint32, t *task, when int64) {
	l.push(h, slot, t, when)
	l.dead.Store(l.dead.Load() + 1)
}

func (l *lazy) discarded(n int) { l.dead.Store(l.dead.Load() - int64(n)) }

// tagsRunOut reports that t's next entry would take the last tag value
// before they come round: the heap must first be rebuilt, clearing out
// every tombstone, so that no old entry can match a new tag.
func (*lazy) tagsRunOut(t *task) bool { return t.tag == math.MaxUint32-1 }

func (l *lazy) wantsRebuild(heapLen int) bool {
	d := l.tombstones()
	return d > 0 && rebuildShare*d > int64(heapLen)
}

// beforeTrim clears the heap of tombstones, which may name free slots,
// before the slab gives chunks back. The rebuild costs O(n), so it is done
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
	cancels, n := l.counts.cancelled(), heapLen
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
