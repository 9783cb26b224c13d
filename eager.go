package schedule

// eager is the eager cancel strategy: CancelTask asks the owner to remove
// the task's entry at once. Every entry's position is kept in its task's
// ref (the heap maintains it: deadlineHeap.index), so the removal is an
// O(log n) step, and the heap holds exactly the live tasks. No entry is
// ever a tombstone, and there is nothing to tidy.
type eager struct{ o *owner }

func (e *eager) cancelled(slot, gen uint32, k uint8) {
	e.o.inbox.send(k, op{slot: slot, gen: gen, kind: opRemove}, 0)
}

func (*eager) tombstones() int64 { return 0 }

func (e *eager) push(slot uint32, _ *task, when int64) {
	e.o.heap.push(entry{when: when, slot: slot})
}

func (*eager) current(entry, *task) bool { return true }

func (e *eager) movedEarlier(slot uint32, t *task, when int64) {
	if i, ok := e.index(slot, t); ok && when < e.o.heap.items[i].when {
		e.o.heap.setWhen(i, when)
	}
}

func (e *eager) remove(slot uint32, t *task) {
	if i, ok := e.index(slot, t); ok {
		e.o.heap.removeAt(i)
		e.o.drop(slot, t)
	}
}

// index returns the position of t's entry, and false when it has none: it
// left the heap as it reached the top, or in a rebuild.
func (e *eager) index(slot uint32, t *task) (int, bool) {
	i := int(t.ref)
	return i, i < e.o.heap.len() && e.o.heap.items[i].slot == slot
}

func (*eager) discarded(int)    {}
func (*eager) tidy()            {}
func (*eager) beforeTrim() bool { return true }
func (*eager) beforeSleep()     {}
