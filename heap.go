package schedule

// entry is one element of the deadline heap. It holds no pointers, so the
// garbage collector never scans the heap, however large it grows.
type entry struct {
	when int64  // deadline the entry is ordered by; may lag the task's own
	slot uint32 // slot of the task in the slab
	tag  uint32 // the cancel strategy's: lazy cancel tells tombstones by it
}

// deadlineHeap is a 4-ary min-heap of entries ordered by when. Four
// children of 16 bytes share one cache line, and the tree is half as deep as
// a binary heap, which matters when it holds a million entries.
//
// It belongs to the owner goroutine; nothing else may touch it.
//
// When track is non-nil (eager cancel), the heap tells it where every entry
// moves, and when an entry leaves.
type deadlineHeap struct {
	items []entry
	track positions
}

// positions keeps the index of each slot's entry in the heap, which the heap
// tells it every time an entry moves.
type positions interface {
	// place records that slot's entry is at index i; noPosition when it
	// left the heap.
	place(slot uint32, i int)
	// position returns the index place last recorded for slot.
	position(slot uint32) int
}

// noPosition is the index of an entry that left the heap.
const noPosition = -1

const heapArity = 4

func (h *deadlineHeap) len() int   { return len(h.items) }
func (h *deadlineHeap) top() entry { return h.items[0] }

func (h *deadlineHeap) put(i int, e entry) {
	h.items[i] = e
	if h.track != nil {
		h.track.place(e.slot, i)
	}
}

func (h *deadlineHeap) forget(e entry) {
	if h.track != nil {
		h.track.place(e.slot, noPosition)
	}
}

// indexOf returns the index of slot's entry, and false when the heap keeps
// no positions or slot has no entry: it left the heap as it reached the
// top, or in a rebuild.
func (h *deadlineHeap) indexOf(slot uint32) (int, bool) {
	if h.track == nil {
		return 0, false
	}
	i := h.track.position(slot)
	return i, i >= 0 && i < len(h.items) && h.items[i].slot == slot
}

// push adds e. A full heap doubles its capacity, where append would grow
// a large slice by a small fraction: filling a heap to a million entries then
// copies, and first touches, about two entries' worth of fresh memory per
// entry rather than five, and the copies happen on the owner goroutine,
// which every add waits behind. The price is capacity: up to twice the
// entries while the heap grows, which shrink gives back as it empties.
func (h *deadlineHeap) push(e entry) {
	if len(h.items) == cap(h.items) {
		h.resize(2 * len(h.items))
	}
	h.items = append(h.items, e)
	h.up(len(h.items)-1, e)
}

// pop removes the top entry.
func (h *deadlineHeap) pop() {
	h.removeAt(0)
}

// removeAt removes the entry at index i.
func (h *deadlineHeap) removeAt(i int) {
	last := len(h.items) - 1
	h.forget(h.items[i])
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
}

// down moves e, destined for index i, towards the leaves until no child is
// earlier than it.
func (h *deadlineHeap) down(i int, e entry) {
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
}

// heapify restores the heap order of items in O(n).
func (h *deadlineHeap) heapify() {
	n := len(h.items)
	if n == 0 {
		return
	}
	for i := (n - 2) / heapArity; i >= 0; i-- {
		h.down(i, h.items[i])
	}
	if h.track != nil {
		for i, e := range h.items {
			h.track.place(e.slot, i)
		}
	}
}

// shrink gives memory back after the heap emptied out: when less than
// 1/shrinkShare of its capacity is used, the slice is copied into one twice
// the length. Growth and shrinkage together stay amortised O(1) per entry.
// Removing entries does not shrink the heap: the owner calls shrink when
// no deadline is near (owner.shrinkWhenQuiet).
func (h *deadlineHeap) shrink() {
	if c := cap(h.items); c > minHeapCap && len(h.items) < c/shrinkShare {
		h.resize(2 * len(h.items))
	}
}

// shrinkAfterRebuild fits the capacity to what a lazy heap grows back to
// before its next rebuild, for use after an O(n) rebuild that discarded
// many entries (the copy costs no more than the rebuild did). Tombstones
// may make up 1/rebuildShare of the heap before the next rebuild (lazy.go),
// so the n entries kept regrow by n/(rebuildShare-1); a further
// n/shrinkSlack spares the pushes that get it there from ever copying the
// slice, where shrinking to the bare length would make every push after a
// rebuild pay for regrowing it.
func (h *deadlineHeap) shrinkAfterRebuild() {
	n := len(h.items)
	if want := n + n/(rebuildShare-1) + n/shrinkSlack; cap(h.items) > want+2*n/shrinkSlack+minHeapCap {
		h.resize(want)
	}
}

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
