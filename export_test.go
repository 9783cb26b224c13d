package schedule

import "time"

// Settle waits, in real time, until the owner goroutine has applied every
// request made before the call and finished a loop iteration after that.
// Benchmarks use it so that what they measure includes the owner's work.
// Inside a synctest bubble use synctest.Wait instead.
func (s *Scheduler) Settle() {
	var n [laneCount]uint64
	for i := range s.lanes {
		l := &s.lanes[i]
		l.mu.Lock()
		n[i] = l.enqueued
		l.mu.Unlock()
	}
	s.wakeOwner()
	for i := range s.lanes {
		for s.lanes[i].processed.Load() < n[i] && !s.closed.Load() {
			time.Sleep(20 * time.Microsecond)
		}
	}
	l := s.loops.Load()
	s.wakeOwner()
	for s.loops.Load() == l && !s.closed.Load() {
		time.Sleep(20 * time.Microsecond)
	}
}

// CancelStrategyOf reports the strategy s was built with.
func CancelStrategyOf(s *Scheduler) CancelStrategy { return s.cfg.strategy }
