package schedule

import "unsafe"

// Invariant checks, compiled in only with the build tag invariants
// (invariants_on.go). Each call site guards the call with invariantsOn, a
// constant, so that without the tag the check and its arguments cost
// nothing. A check that fails panics with a message that names the broken
// invariant: corrupted scheduling state is a bug, and going on would run a
// job twice or never.

// broken panics with the name of a broken invariant.
func broken(invariant string) {
	panic("schedule: invariant broken: " + invariant)
}

// checkHeld checks that the word w has the holder's flag set, as it must
// for the holder to let go of it.
func checkHeld(w, flag uint64) {
	if w&flag == 0 {
		if flag == flagOwned {
			broken("the owner lets go of a task it does not hold (flagOwned clear)")
		}
		broken("a run lets go of a task it does not hold (flagRunning clear)")
	}
}

// checkHandOver checks a word the owner is about to hand over to a run: a
// pending task that the owner holds, repeating or not as the owner
// believes.
func checkHandOver(w uint64, repeating bool) {
	if wordStatus(w) != statusPending {
		broken("the owner hands over a task that is not pending")
	}
	if w&flagOwned == 0 {
		broken("the owner hands over a task it does not hold (flagOwned clear)")
	}
	if (w&flagRepeat != 0) != repeating {
		broken("the owner takes a one-shot for a repeating task, or the reverse (flagRepeat)")
	}
	if !repeating && w&flagRunning != 0 {
		broken("a one-shot is handed over while a run holds it (flagRunning set)")
	}
}

// checkOwned checks the word and generation of a task whose current entry
// the owner found in its heap: the owner holds it, and its slot is live.
func checkOwned(w uint64, g uint32) {
	if w&flagOwned == 0 {
		broken("a heap entry is current for a task the owner does not hold (flagOwned clear)")
	}
	if wordStatus(w) == statusDue {
		broken("a heap entry is current for a task already due")
	}
	checkGeneration(g)
}

// checkVacant checks a slot about to be handed out: no one holds it, its
// generation is live, and no job is left in it.
func checkVacant(w uint64, g uint32, job unsafe.Pointer) {
	if !unheld(w) {
		broken("a slot is handed out while the owner or a run still holds it")
	}
	if job != nil {
		broken("a slot is handed out with the job of an earlier task")
	}
	checkGeneration(g)
}

// checkFreeable checks the word and generation of a task whose slot is
// about to be freed: no holder is left, the task is no longer pending, and
// the slot is live.
func checkFreeable(w uint64, g uint32) {
	if !unheld(w) {
		broken("a slot is freed while the owner or a run still holds it")
	}
	if wordStatus(w) == statusPending {
		broken("a slot is freed while its task is still pending")
	}
	checkGeneration(g)
}

// checkGeneration checks a generation read by a holder of the slot: never
// 0 (a retired slot is never handed out) and never with the lock bit.
func checkGeneration(g uint32) {
	if g == 0 {
		broken("a retired slot (generation 0) is in use")
	}
	if g&genLocked != 0 {
		broken("a generation carries the lock bit")
	}
}

// checkOrderAt checks the heap order around index i: its parent is no
// later than it, and none of its children earlier. O(arity).
func (h *deadlineHeap) checkOrderAt(i int) {
	if i >= len(h.items) {
		return
	}
	if i > 0 && h.items[(i-1)/heapArity].when > h.items[i].when {
		broken("heap order: a parent is later than its child")
	}
	for c := i*heapArity + 1; c < min(i*heapArity+1+heapArity, len(h.items)); c++ {
		if h.items[c].when < h.items[i].when {
			broken("heap order: a child is earlier than its parent")
		}
	}
	if h.pos != nil && h.pos[h.items[i].slot] != uint32(i) {
		broken("heap positions: an entry's recorded position is not its index")
	}
}

// checkAll checks the heap order and the positions of every entry. O(n):
// for use after an O(n) step only (rebuild).
func (h *deadlineHeap) checkAll() {
	for i := range h.items {
		h.checkOrderAt(i)
	}
}
