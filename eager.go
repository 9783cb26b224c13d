package schedule

// eager is the eager cancel strategy: CancelTask asks the owner to remove
// the task's entry at once. Every entry's position is kept in its task's
// ref, which the heap keeps up to date through the positions interface, so
// the removal is an O(log n) step, and the heap holds exactly the live
// tasks. No entry is ever a tombstone, and there are none to count.
type eager struct {
	inbox *inbox // where CancelTask sends the removal
	slab  *slab  // holds the positions, in task.ref
}

func (e *eager) cancelled(slot, gen uint32, k uint8) {
	e.inbox.send(k, op{slot: slot, gen: gen, kind: opRemove}, 0)
}

func (*eager) tombstones() int64 { return 0 }

func (*eager) push(h *deadlineHeap, slot uint32, _ *task, when int64) {
	h.push(entry{when: when, slot: slot})
}

func (*eager) current(entry, *task) bool { return true }

func (*eager) movedEarlier(h *deadlineHeap, slot uint32, _ *task, when int64) {
	if i, ok := h.indexOf(slot); ok && when < h.items[i].when {
		h.setWhen(i, when)
	}
}

// place and position keep the heap's positions in task.ref: an index, or
// noPosition stored as its uint32 conversion, which no heap index reaches.
func (e *eager) place(slot uint32, i int) { e.slab.at(slot).ref = uint32(i) }
func (e *eager) position(slot uint32) int { return int(e.slab.at(slot).ref) }

func (*eager) discarded(int)                       {}
func (*eager) tagsRunOut(*task) bool               { return false }
func (*eager) wantsRebuild(int) bool               { return false }
func (*eager) beforeTrim(int) (trim, rebuild bool) { return true, false }
func (*eager) beforeSleep(int)                     {}
