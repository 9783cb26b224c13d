package schedule

import "time"

// Settle waits, in real time, until the owner goroutine has applied every
// request made before the call and finished a loop iteration after that.
// Benchmarks use it so that what they measure includes the owner's work.
// Inside a synctest bubble use synctest.Wait instead.
func (s *Scheduler) Settle() {
	s.mu.Lock()
	n := s.enqueued
	s.mu.Unlock()
	s.wakeOwner()
	for s.processed.Load() < n && !s.closed.Load() {
		time.Sleep(20 * time.Microsecond)
	}
	l := s.loops.Load()
	s.wakeOwner()
	for s.loops.Load() == l && !s.closed.Load() {
		time.Sleep(20 * time.Microsecond)
	}
}

// CancelStrategyOf reports the strategy s was built with.
func CancelStrategyOf(s *Scheduler) CancelStrategy { return s.cfg.strategy }
