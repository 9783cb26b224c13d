package schedule

// eager is the eager cancel strategy: CancelTask asks the owner to remove
// the task's entry at once. Its heap keeps every entry's position
// (deadlineHeap.keepPositions), so the removal is an O(log n) step, and the
// heap holds exactly the live tasks. No entry is ever a tombstone, and there
// are none to count.
type eager struct {
	inbox *inbox // where CancelTask sends the removal
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

func (*eager) discarded(int)                       {}
func (*eager) tagsRunOut(*task) bool               { return false }
func (*eager) wantsRebuild(int) bool               { return false }
func (*eager) beforeTrim(int) (trim, rebuild bool) { return true, false }
func (*eager) beforeSleep(int)                     {}
