package schedule

import "time"

// Callers reach the owner goroutine through the inbox: a slice guarded by
// the Scheduler's mu, which the owner swaps out whole (drainInbox in
// owner.go). A request costs a lock and an append, never a channel
// rendezvous.
//
// A request wakes the owner only when it cannot wait: when it concerns a
// deadline earlier than the one the sleeping owner's timer is set for
// (Scheduler.sleepUntil), or it is an eager removal, or the inbox has grown
// to inboxWake requests. Everything else waits for the owner's next wake,
// which comes before any of its deadlines: a fleet that adds and moves
// deadlines tens of seconds out costs the owner one wake per timer fire or
// per inboxWake requests, not one per request.
//
// The handshake that keeps a request from being forgotten: the owner
// publishes sleepUntil and then, under mu, looks at the inbox once more
// before it sleeps; a caller appends under mu and reads sleepUntil before
// it unlocks. Either the owner sees the request, or the caller sees the
// timer the owner sleeps on and wakes it if the request cannot wait for it.

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
// outrun the owner without bound. inboxWake is the length at which a
// request wakes the owner whatever it asks for, well before the inbox is
// full.
const (
	maxInbox  = 1 << 16
	inboxWake = 1 << 12
)

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
	wake := s.appendOp(op{slot, gen, opAdd}, when)
	s.mu.Unlock()
	if wake {
		s.wakeOwner()
	}
	return s.slab.id(slot, gen), nil
}

// appendOp queues o for the owner and reports whether the owner needs
// waking: o must be applied before wakeBy (0: at once). s.mu must be held.
func (s *Scheduler) appendOp(o op, wakeBy int64) bool {
	s.inbox = append(s.inbox, o)
	s.enqueued++
	return wakeBy < s.sleepUntil.Load() || len(s.inbox) == inboxWake
}

// send queues o for the owner, to be applied before wakeBy (0: at once),
// waiting while the inbox is full. It drops o after Shutdown, when no owner
// is left to act on it.
func (s *Scheduler) send(o op, wakeBy int64) {
	s.mu.Lock()
	for len(s.inbox) >= maxInbox && !s.closed.Load() {
		s.inboxCap.Wait()
	}
	if s.closed.Load() {
		s.mu.Unlock()
		return
	}
	wake := s.appendOp(o, wakeBy)
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
