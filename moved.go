package schedule

import "time"

// Deadlines moved earlier, the way the Go runtime's timers handle them.
//
// A Reset that moves a deadline earlier leaves the task's heap entry later
// than the task. For a deadline less than deferMoves away, Reset sends the
// owner a request (opEarlier), which fixes that one entry. For a deadline
// further out, sending a request and fixing the entry at once is wasted
// work as often as not: a heartbeat moves the same deadline again, later,
// long before it comes due. Reset then only lowers movedEarlier, the
// earliest deadline moved ahead of its entry, and the owner fixes every
// such entry in one pass (adjust) when movedEarlier comes due: its timer
// is set for it, as for the heap's top.
//
// The pass reads every entry's task, so it costs O(n): 13 ms for a heap of
// a million on a 2-core VM (BenchmarkOwner/adjust). A pass takes
// movedEarlier back to never, and a later deferred move is at least
// deferMoves ahead of its Reset, so passes come at most once per
// deferMoves (1.3% of a core, at a million); a fleet whose timeouts are
// tens of seconds has about one per shortest timeout.
//
// Why no move is missed: Reset changes the task's word and then lowers
// movedEarlier; adjust first takes movedEarlier back to never and then
// reads the words. A Reset whose lowering the owner took is seen by the
// pass; one whose lowering came after it leaves movedEarlier for the next
// pass. Invariant: every pending task whose deadline is earlier than its
// heap entry either has an opEarlier request on its way to the owner or
// has a deadline no earlier than movedEarlier.
const deferMoves = time.Second

// noteMovedEarlier records that a Reset moved a deadline earlier, to when,
// and wakes the owner if its timer is set for later.
func (s *Scheduler) noteMovedEarlier(when int64) {
	for {
		cur := s.movedEarlier.Load()
		if when >= cur {
			return
		}
		if s.movedEarlier.CompareAndSwap(cur, when) {
			break
		}
	}
	if when < s.sleepUntil.Load() {
		s.wakeOwner()
	}
}

// adjust fixes the entries of every task whose deadline a Reset moved
// earlier without a request, once the earliest of them is due at now. Only
// the owner calls it.
func (s *Scheduler) adjust(now int64) {
	if s.movedEarlier.Load() > now {
		return
	}
	s.movedEarlier.Store(never)
	if s.cfg.strategy == LazyCancel {
		s.compact() // compact fixes the entries it keeps
		return
	}
	items := s.heap.items
	moved := false
	for i := range items {
		w := s.slab.at(items[i].slot).word.Load()
		if when := wordWhen(w); wordStatus(w) == statusPending && when < items[i].when {
			items[i].when = when
			moved = true
		}
	}
	if moved {
		s.heap.heapify()
	}
}
