package schedule

import "time"

// Callers reach the owner goroutine through the inbox: a slice guarded by
// the Scheduler's mu, which the owner swaps out whole (drainInbox in
// owner.go). A request costs a lock and an append, never a channel
// rendezvous, and the owner is woken only when the inbox goes from empty to
// non-empty.

// op is a request from a caller to the owner goroutine, naming a task by
// slot and generation.
type op struct {
	slot uint32
	gen  uint32
	kind opKind
}

type opKind uint8

const (
	opAdd     opKind = iota // a new task: push its entry
	opEarlier               // Reset moved a deadline earlier than the entry's
	opRemove                // eager CancelTask: remove the entry now
)

// maxInbox bounds the requests waiting for the owner. Callers that find the
// inbox full wait until the owner empties it, so a burst of calls cannot
// outrun the owner without bound.
const maxInbox = 1 << 16

// add allocates a task for job fn(id, arg) (fn nil: arg is a func()) and
// queues it for the owner.
func (s *Scheduler) add(fn func(TaskID, any), arg any, delay, interval time.Duration) (TaskID, error) {
	when := s.deadline(delay)
	s.mu.Lock()
	for len(s.inbox) >= maxInbox && !s.closed.Load() {
		s.inboxCap.Wait()
	}
	if s.closed.Load() {
		s.mu.Unlock()
		return 0, ErrShutdown
	}
	slot, t, ok := s.slab.alloc()
	if !ok {
		s.mu.Unlock()
		return 0, ErrTooManyTasks
	}
	t.fn = fn
	t.arg = arg
	t.interval = int64(interval)
	t.word.Store(packWord(when, statusPending|flagOwned))
	gen := t.gen.Load()
	s.scheduled.Add(1) // before live: see Stats on the order of reads
	s.live.Add(1)
	wake := s.appendOp(op{slot, gen, opAdd})
	s.mu.Unlock()
	if wake {
		s.wakeOwner()
	}
	return s.slab.id(slot, gen), nil
}

// appendOp queues o for the owner and reports whether the owner needs
// waking. s.mu must be held.
func (s *Scheduler) appendOp(o op) bool {
	s.inbox = append(s.inbox, o)
	s.enqueued++
	return len(s.inbox) == 1
}

// send queues o for the owner, waiting while the inbox is full. It drops o
// after Shutdown, when no owner is left to act on it.
func (s *Scheduler) send(o op) {
	s.mu.Lock()
	for len(s.inbox) >= maxInbox && !s.closed.Load() {
		s.inboxCap.Wait()
	}
	if s.closed.Load() {
		s.mu.Unlock()
		return
	}
	wake := s.appendOp(o)
	s.mu.Unlock()
	if wake {
		s.wakeOwner()
	}
}

// wakeOwner makes sure the owner goroutine runs its loop once more.
func (s *Scheduler) wakeOwner() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}
