package schedule

import "strconv"

// CancelStrategy selects what CancelTask does with the cancelled task's
// entry in the deadline heap. Both strategies give the same results to
// callers; they differ in cost and memory.
type CancelStrategy uint8

const (
	// LazyCancel leaves the entry behind as a tombstone: cancelling is O(1)
	// and never waits. Tombstones are discarded when they reach the top of
	// the heap, and the heap is rebuilt in O(n) when they pass a fixed share
	// of it, so that it stays within a constant factor of the live tasks.
	LazyCancel CancelStrategy = iota + 1

	// EagerCancel removes the entry from the heap at once, an O(log n) step
	// for the scheduler's goroutine. The heap holds exactly the live tasks.
	EagerCancel
)

// String returns "lazy" or "eager".
func (c CancelStrategy) String() string {
	switch c {
	case LazyCancel:
		return "lazy"
	case EagerCancel:
		return "eager"
	}
	return "CancelStrategy(" + strconv.Itoa(int(c)) + ")"
}

// canceller is everything in which the two cancel strategies differ (lazy.go,
// eager.go): what a cancel leaves in the heap, how an entry is pushed and
// told from a tombstone, what a deadline moved earlier does to it, and when
// the heap must be rebuilt. A strategy holds no reference to the owner: the
// owner passes it the heap, and does the rebuilds it asks for. The owner
// goroutine calls every method but cancelled and tombstones.
type canceller interface {
	// cancelled is called by CancelTask, on the caller's goroutine, once it
	// has cancelled the task of generation gen in slot, of slab shard k.
	cancelled(slot, gen uint32, k uint8)
	// tombstones returns the number of dead entries in the heap, or on their
	// way to it; any goroutine may call it.
	tombstones() int64

	// push gives t an entry in h, due at when.
	push(h *deadlineHeap, slot uint32, t *task, when int64)
	// current reports whether e is t's entry; an entry that is not is a
	// tombstone, to be discarded.
	current(e entry, t *task) bool
	// movedEarlier brings t's entry in h forward to when, earlier than it
	// is.
	movedEarlier(h *deadlineHeap, slot uint32, t *task, when int64)
	// discarded counts n dead entries that left the heap, or the add of a
	// task cancelled before its entry was pushed.
	discarded(n int)

	// tagsRunOut reports, before t gets an entry (push, movedEarlier),
	// that the heap must be rebuilt first. wantsRebuild reports, once per
	// loop iteration, that a heap of heapLen entries should be rebuilt.
	// beforeTrim says, when the slab has chunks to give back, whether it
	// may now (no entry may name a slot of such a chunk), and whether the
	// heap must be rebuilt first. beforeSleep runs before the owner sleeps.
	tagsRunOut(t *task) bool
	wantsRebuild(heapLen int) bool
	beforeTrim(heapLen int) (trim, rebuild bool)
	beforeSleep(heapLen int)
}

// newCanceller returns the canceller of strategy c, which sends its
// requests through in, finds tasks in sl and counts cancels in counts.
func newCanceller(c CancelStrategy, sl *slab, in *inbox, counts *taskCounts) canceller {
	if c == EagerCancel {
		return &eager{inbox: in}
	}
	l := &lazy{inbox: in, slab: sl, counts: counts}
	for i := range l.room {
		l.room[i].n.Store(1) // until the owner shares out room
	}
	return l
}
