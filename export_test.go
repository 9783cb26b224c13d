package schedule

import "time"

// Settle waits, in real time, until the owner goroutine has applied every
// request made before the call and finished a loop iteration after that.
// Benchmarks use it so that what they measure includes the owner's work.
// Inside a synctest bubble use synctest.Wait instead.
func (s *Scheduler) Settle() {
	var n [shardCount]uint64
	for i := range s.inbox.lanes {
		l := &s.inbox.lanes[i]
		l.mu.Lock()
		n[i] = l.enqueued
		l.mu.Unlock()
	}
	s.inbox.wakeOwner()
	for i := range s.inbox.lanes {
		for s.inbox.lanes[i].processed.Load() < n[i] && !s.IsShutdown() {
			time.Sleep(20 * time.Microsecond)
		}
	}
	l := s.owner.loops.Load()
	s.inbox.wakeOwner()
	for s.owner.loops.Load() == l && !s.IsShutdown() {
		time.Sleep(20 * time.Microsecond)
	}
}

// CancelStrategyOf reports the strategy s was built with.
func CancelStrategyOf(s *Scheduler) CancelStrategy {
	if _, ok := s.cancel.(*eager); ok {
		return EagerCancel
	}
	return LazyCancel
}
