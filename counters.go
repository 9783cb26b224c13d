package schedule

// The task counters (Len, Stats.Scheduled, Stats.Cancelled and, with lazy
// cancel, the tombstone count) are kept where they are written, so that no
// cache line takes a write from every add and every cancel on every core:
//
//   - Each inbox lane counts the tasks added through it and the cancels of
//     those tasks (lane.scheduled, lane.cancelled). An add already holds its
//     lane, and a cancel goes to the lane of the task's chunk, which on a
//     caller that adds and cancels on one core is that core's lane.
//   - The owner goroutine counts what only it does: one-shots handed over to
//     run and tasks dropped by Shutdown (ended), and its own changes to the
//     tombstone count (deadOwn). Only the owner writes them, so it stores
//     rather than adds.
//
// Readers sum the lanes. They read what ends tasks before what starts them,
// so that every end they count comes with its start: the pending count is
// never negative, and Stats keeps Scheduled ≥ Pending + Cancelled +
// Dropped. (The tombstone count can be, for a moment: the owner may discard
// a tombstone before the cancel that made it is counted in its lane;
// tombstones clamps it at 0.)
//
// The owner must look at a lazy heap once tombstones make up a fifth of it
// (tooManyTombstones), even if nothing else wakes it. Before it sleeps it
// shares out among the lanes the cancels that would take the heap there
// (lane.tombstoneRoom); the cancel that brings a lane's share to zero
// wakes it. However the cancels fall on the lanes, one of them reaches
// zero by the time the total does, give or take one per lane.

// pending returns the number of pending tasks.
func (s *Scheduler) pending() int64 {
	n := -s.ended.Load()
	for i := range s.lanes {
		n -= int64(s.lanes[i].cancelled.Load())
	}
	for i := range s.lanes {
		n += int64(s.lanes[i].scheduled.Load())
	}
	return max(n, 0)
}

// scheduledCount returns the number of tasks ever scheduled.
func (s *Scheduler) scheduledCount() uint64 {
	var n uint64
	for i := range s.lanes {
		n += s.lanes[i].scheduled.Load()
	}
	return n
}

// cancelledCount returns the number of successful CancelTask calls.
func (s *Scheduler) cancelledCount() uint64 {
	var n uint64
	for i := range s.lanes {
		n += s.lanes[i].cancelled.Load()
	}
	return n
}

// tombstones returns the number of tombstones in a lazy heap, or on their
// way to it (a cancel of a task whose add the owner has not applied); 0
// with eager cancel. Every lazy cancel makes one.
func (s *Scheduler) tombstones() int64 {
	if s.cfg.strategy != LazyCancel {
		return 0
	}
	return max(s.deadOwn.Load()+int64(s.cancelledCount()), 0)
}

// countTombstones adds n to the owner's part of the tombstone count. Owner
// goroutine only.
func (s *Scheduler) countTombstones(n int64) { s.deadOwn.Store(s.deadOwn.Load() + n) }

// countEnded counts a task that stopped being pending other than by
// CancelTask. Owner goroutine only.
func (s *Scheduler) countEnded() { s.ended.Store(s.ended.Load() + 1) }

// shareTombstoneRoom gives each lane its share of the lazy cancels that
// would make a fifth of the heap tombstones. Owner goroutine only, before
// it sleeps.
func (s *Scheduler) shareTombstoneRoom() {
	room := int64(s.heap.len())/5 - s.tombstones() + 1
	share := max((room+laneCount-1)/laneCount, 1)
	for i := range s.lanes {
		s.lanes[i].tombstoneRoom.Store(share)
	}
}

// countCancel counts a successful CancelTask of the task in slot and, with
// lazy cancel, wakes the owner when its tombstones may call for a rebuild.
func (s *Scheduler) countCancel(slot uint32) {
	l := s.laneOf(slot)
	l.cancelled.Add(1)
	if s.cfg.strategy == LazyCancel && l.tombstoneRoom.Add(-1) == 0 {
		s.wakeOwner()
	}
}
