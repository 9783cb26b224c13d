package schedule

import "math"

// entry is one element of the deadline heap. It holds no pointers, so the
// garbage collector never scans the heap, however large it grows.
type entry struct {
	when int64  // deadline the entry is ordered by; may lag the task's own
	slot uint32 // slot of the task in the slab
	tag  uint32 // the task's tag when the entry was pushed (task.tag)
}

// deadlineHeap is a 4-ary min-heap of entries ordered by when. Four
// children of 16 bytes share one cache line, and the tree is half as deep as
// a binary heap, which matters when it holds a million entries.
//
// It belongs to the owner goroutine; nothing else may touch it.
//
// A heap that keeps positions (eager cancel, keepPositions) records in pos,
// indexed by slot, the index of each slot's entry: at most one per slot, so
// that removing a task's entry, or moving it, starts from its index. An
// entry that leaves the heap leaves its position behind; indexOf tells it
// stale by the slot of the entry it points at, and the slot's next entry
// overwrites it.
//
// The heap knows nothing of its users: what its entries stand for, which
// of them to keep in a rebuild, and when to rebuild are the owner's and the
// cancel strategy's business (owner.rebuild). It hands its earliest entry
// out only once its deadline is reached (popBy), and the owner decides
// what becomes of it, putting it back if it is to stay (push).
//
// hole is set while the top entry is out (popBy) and its place not yet
// filled: items[0] is no entry then. A push fills it with one sift down
// from the top, which is what fixing the top entry in place would cost, so
// that an entry taken out and put back, at its own deadline or at a later
// one, costs no more than reading the top and fixing it. Any other method
// first fills the hole with the last entry, which is the rest of a pop.
type deadlineHeap struct {
	items  []entry
	pos    []uint32 // nil: no positions kept
	minPos int      // the fewest positions shrink leaves
	hole   bool
}

// noPosition is the position of a slot that has had no entry yet. No index
// reaches it: the heap holds at most one entry per slot, and slots are
// uint32s.
const noPosition = math.MaxUint32

const heapArity = 4

func (h *deadlineHeap) len() int {
	if h.hole {
		return len(h.items) - 1
	}
	return len(h.items)
}

// top returns the earliest entry; the heap must not be empty.
func (h *deadlineHeap) top() entry {
	h.fillHole()
	return h.items[0]
}

// popBy takes the earliest entry out and returns it, if its deadline is
// no later than limit; otherwise it reports false and leaves the heap as
// it is. The entry's place stays a hole until the next call (see hole).
func (h *deadlineHeap) popBy(limit int64) (entry, bool) {
	h.fillHole()
	if len(h.items) == 0 || h.items[0].when > limit {
		return entry{}, false
	}
	h.hole = true
	return h.items[0], true
}

// fillHole completes a pop whose hole no push filled: the last entry
// takes the top's place.
func (h *deadlineHeap) fillHole() {
	if h.hole {
		h.hole = false
		h.removeAt(0)
	}
}

// keepPositions makes the heap record every entry's position, for slots
// up to at least minPos, which shrink never goes below. It must be called
// while the heap is empty.
func (h *deadlineHeap) keepPositions(minPos int) {
	h.minPos = max(minPos, minHeapCap)
	h.pos = growPositions(nil, minHeapCap)
}

// growPositions returns pos with room for at least n slots, the new ones at
// noPosition.
func growPositions(pos []uint32, n int) []uint32 {
	grown := make([]uint32, n)
	copy(grown, pos)
	for i := len(pos); i < n; i++ {
		grown[i] = noPosition
	}
	return grown
}

func (h *deadlineHeap) put(i int, e entry) {
	h.items[i] = e
	if h.pos != nil {
		h.pos[e.slot] = uint32(i)
	}
}

// indexOf returns the index of slot's entry, and false when the heap keeps
// no positions or slot has no entry.
func (h *deadlineHeap) indexOf(slot uint32) (int, bool) {
	h.fillHole()
	if int(slot) >= len(h.pos) {
		return 0, false
	}
	i := h.pos[slot]
	return int(i), i < uint32(len(h.items)) && h.items[i].slot == slot
}

// push adds e, growing a full heap (grownCap). A push right after a pop
// fills the pop's hole instead (see hole).
func (h *deadlineHeap) push(e entry) {
	if h.pos != nil && int(e.slot) >= len(h.pos) {
		h.pos = growPositions(h.pos, max(grownCap(len(h.pos)), int(e.slot)+1))
	}
	if h.hole {
		h.hole = false
		h.down(0, e)
		return
	}
	if len(h.items) == cap(h.items) {
		h.resize(grownCap(len(h.items)))
	}
	h.items = append(h.items, e)
	h.up(len(h.items)-1, e)
}

// removeAt removes the entry at index i.
func (h *deadlineHeap) removeAt(i int) {
	last := len(h.items) - 1
	e := h.items[last]
	h.items = h.items[:last]
	if i == last {
		return
	}
	if i > 0 && e.when < h.items[(i-1)/heapArity].when {
		h.up(i, e)
	} else {
		h.down(i, e)
	}
}

// remove removes slot's entry, for a heap that keeps positions, and
// reports whether there was one.
func (h *deadlineHeap) remove(slot uint32) bool {
	i, ok := h.indexOf(slot)
	if ok {
		h.removeAt(i)
	}
	return ok
}

// lower moves slot's entry earlier, to when, for a heap that keeps
// positions; an entry already as early is left where it is. It reports
// whether slot has an entry.
func (h *deadlineHeap) lower(slot uint32, when int64) bool {
	i, ok := h.indexOf(slot)
	if ok && when < h.items[i].when {
		h.setWhen(i, when)
	}
	return ok
}

// retain keeps the entries for which keep reports true and reports how
// many it discarded: the first half of a rebuild, in O(n). keep may move
// an entry's deadline (it gets the entry itself). The heap order does not
// hold again until heapify. retain is small enough to inline, so that the
// owner's keep function inlines into the loop.
func (h *deadlineHeap) retain(keep func(e *entry) bool) (discarded int) {
	h.fillHole()
	kept := 0
	for i := range h.items {
		if keep(&h.items[i]) {
			h.items[kept] = h.items[i]
			kept++
		}
	}
	discarded = len(h.items) - kept
	h.items = h.items[:kept]
	return discarded
}

// setWhen changes the deadline of the entry at index i and restores the
// heap order.
func (h *deadlineHeap) setWhen(i int, when int64) {
	e := h.items[i]
	old := e.when
	e.when = when
	if when < old {
		h.up(i, e)
	} else {
		h.down(i, e)
	}
}

// up moves e, destined for index i, towards the root until its parent is
// not later than it.
func (h *deadlineHeap) up(i int, e entry) {
	for i > 0 {
		p := (i - 1) / heapArity
		if h.items[p].when <= e.when {
			break
		}
		h.put(i, h.items[p])
		i = p
	}
	h.put(i, e)
	if invariantsOn {
		h.checkOrderAt(i)
	}
}

// down moves e, destined for index i, towards the leaves until no child is
// earlier than it.
func (h *deadlineHeap) down(i int, e entry) {
	i = h.siftDown(i, e)
	if invariantsOn {
		h.checkOrderAt(i)
	}
}

// siftDown is down without the invariant check, for heapify, under whose
// work the order above i does not hold yet. It returns e's index.
func (h *deadlineHeap) siftDown(i int, e entry) int {
	n := len(h.items)
	for {
		c := i*heapArity + 1
		if c >= n {
			break
		}
		m := c
		end := min(c+heapArity, n)
		for k := c + 1; k < end; k++ {
			if h.items[k].when < h.items[m].when {
				m = k
			}
		}
		if h.items[m].when >= e.when {
			break
		}
		h.put(i, h.items[m])
		i = m
	}
	h.put(i, e)
	return i
}

// heapify restores the heap order of items in O(n).
func (h *deadlineHeap) heapify() {
	n := len(h.items)
	if n == 0 {
		return
	}
	for i := (n - 2) / heapArity; i >= 0; i-- {
		h.siftDown(i, h.items[i])
	}
	if h.pos != nil {
		// siftDown placed only the entries it moved.
		for i, e := range h.items {
			h.pos[e.slot] = uint32(i)
		}
	}
	if invariantsOn {
		h.checkAll()
	}
}

// shrink fits the heap's capacity after it emptied out: when less than
// 1/shrinkShare of its capacity is used, the slice is copied into one twice
// the length, and so are the positions, if they are kept, when less than
// 1/shrinkShare of them cover a slot that has an entry. Growth and
// shrinkage together stay amortised O(1) per entry. Removing entries does
// not shrink the heap: the owner calls shrink when no deadline is near
// (owner.shrinkWhenQuiet).
func (h *deadlineHeap) shrink() {
	h.fillHole()
	c := cap(h.items)
	if c <= minHeapCap || len(h.items) >= c/shrinkShare {
		return
	}
	h.resize(2 * len(h.items))
	if h.pos == nil {
		return
	}
	var top uint32 // the highest slot with an entry
	for _, e := range h.items {
		top = max(top, e.slot)
	}
	if n := int(top) + 1; len(h.pos) > h.minPos && len(h.pos)/shrinkShare > n {
		h.pos = growPositions(h.pos[:n], max(2*n, h.minPos))
	}
}

// shrinkAfterRebuild fits the capacity to what the heap grows back to
// before its next rebuild, regrow entries more than it holds, for use
// after an O(n) rebuild that discarded many entries (the copy costs no
// more than the rebuild did). A further 1/shrinkSlack of the entries
// spares the pushes that get it there from ever copying the slice, where
// shrinking to the bare length would make every push after a rebuild pay
// for regrowing it.
func (h *deadlineHeap) shrinkAfterRebuild(regrow int) {
	h.fillHole()
	n := len(h.items)
	if want := n + regrow + n/shrinkSlack; cap(h.items) > want+2*n/shrinkSlack+minHeapCap {
		h.resize(want)
	}
}

// grownCap is the capacity a full heap of n entries grows to, and the
// length that positions for n slots grow to when a slot beyond them gets
// an entry. Up to doubleUpTo it doubles, where append would grow a large
// slice by a quarter: filling a heap to a million entries then copies, and
// first touches, about two entries' worth of fresh memory per entry rather
// than five, and the copies happen on the owner goroutine, which every add
// waits behind. Beyond, the heap's capacity is a large part of a task's
// memory (16 B an entry, and 4 of position, against a 24-byte slot), and
// doubling would leave up to half of it unused, a third on average: it
// grows by a quarter, as append does, which copies each entry about four
// more times as the heap grows, a few nanoseconds an add. shrink undoes
// the growth as the heap empties.
func grownCap(n int) int {
	if n < doubleUpTo {
		return 2 * n
	}
	return n + n/4
}

// doubleUpTo is the size, in entries (16 MiB of them), up to which a full
// heap doubles (grownCap).
const doubleUpTo = 1 << 20

const (
	minHeapCap  = 256
	shrinkShare = 4
	shrinkSlack = 16
)

func (h *deadlineHeap) resize(n int) {
	items := make([]entry, len(h.items), max(n, minHeapCap))
	copy(items, h.items)
	h.items = items
}
