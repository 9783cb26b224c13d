package schedule

import "time"

// Settle waits, in real time, until the owner goroutine has applied every
// request made before the call and ended the loop iteration that applied
// the last of them. It sends a barrier request down every lane of the
// inbox: a lane's requests are applied in order, so once the owner has
// passed all of them, it has applied everything sent before. Benchmarks
// use it so that what they measure includes the owner's work. Inside a
// synctest bubble use synctest.Wait instead. Calls of Settle must not
// overlap: each waits for as many barriers as it sent.
func (s *Scheduler) Settle() {
	want := s.owner.passed.Load() + shardCount
	for k := range uint8(shardCount) {
		if !s.inbox.send(k, op{kind: opBarrier}, 0) {
			return // shut down: nothing will be applied any more
		}
	}
	for s.owner.passed.Load() < want && !s.IsShutdown() {
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
