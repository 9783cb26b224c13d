package schedule

import (
	"errors"
	"log"
	"sync"
	"time"

	"github.com/panjf2000/ants/v2"
)

// Due jobs travel from the owner goroutine to the pool through a queue:
// the owner appends in deadline order and never blocks; the dispatcher
// goroutine takes them in that order and submits each to the pool, waiting
// there while every worker is busy. A slow job therefore delays only the
// jobs behind it in the queue, never scheduling.

// due is a task handed to the pool, with the deadline it ran for.
type due struct {
	slot uint32
	when int64
}

// dueQueue is a FIFO shared by the owner (producer) and the dispatcher
// (consumer); mu guards items.
type dueQueue struct {
	mu    sync.Mutex
	items []due
	ready chan struct{} // holds a token while items may be non-empty
}

func (q *dueQueue) put(batch []due) {
	q.mu.Lock()
	wasEmpty := len(q.items) == 0
	q.items = append(q.items, batch...)
	q.mu.Unlock()
	if wasEmpty {
		select {
		case q.ready <- struct{}{}:
		default:
		}
	}
}

// take swaps out everything queued, reusing buf's storage.
func (q *dueQueue) take(buf []due) []due {
	q.mu.Lock()
	items := q.items
	q.items = buf[:0]
	q.mu.Unlock()
	return items
}

// dispatch is the dispatcher goroutine.
func (s *Scheduler) dispatch() {
	defer close(s.dispatcherDone)
	defer s.dropQueued()
	var batch []due
	for {
		select {
		case <-s.quit:
			return
		case <-s.dueQ.ready:
		}
		batch = s.dueQ.take(batch)
		for i, d := range batch {
			if !s.submit(d) {
				// Shutting down: the rest never start. Release their slots.
				for _, rest := range batch[i:] {
					s.finish(rest.slot, s.slab.at(rest.slot))
				}
				s.waiting.Add(-int64(len(batch) - i))
				return
			}
			s.waiting.Add(-1)
		}
	}
}

// dropQueued releases the due jobs that shutting down keeps from ever
// starting, once the owner can queue no more, so that they stop counting
// as waiting.
func (s *Scheduler) dropQueued() {
	<-s.ownerDone
	rest := s.dueQ.take(nil)
	for _, d := range rest {
		s.finish(d.slot, s.slab.at(d.slot))
	}
	s.waiting.Add(-int64(len(rest)))
}

// submit hands d to the pool. It reports false when the scheduler is
// shutting down and d was not submitted.
func (s *Scheduler) submit(d due) bool {
	backoff := 50 * time.Microsecond
	for {
		if s.closed.Load() {
			return false
		}
		err := s.pool.Submit(func() { s.run(d) })
		switch {
		case err == nil:
			return true
		case errors.Is(err, ants.ErrPoolOverload):
			// A non-blocking pool given through WithPool is full.
			select {
			case <-s.quit:
				return false
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 5*time.Millisecond)
		default:
			// The pool was released under a running scheduler: the job
			// cannot run.
			s.finish(d.slot, s.slab.at(d.slot))
			return true
		}
	}
}

// run executes a due task on a worker.
func (s *Scheduler) run(d due) {
	t := s.slab.at(d.slot)
	defer s.finish(d.slot, t)
	if wordStatus(t.word.Load()) == statusCancelled {
		// A repeating task cancelled while its run waited for a worker: the
		// run has not started, so it never does.
		return
	}
	if !s.gate.enter() {
		return
	}
	defer s.gate.leave()
	s.noteLateness(s.now() - d.when)
	s.fired.Add(1)
	s.call(makeID(d.slot, t.gen.Load()), t.job)
}

// call runs job, recovering a panic so that neither the worker nor the
// scheduler goes down with it.
func (s *Scheduler) call(id TaskID, job func()) {
	defer func() {
		if r := recover(); r != nil {
			s.panics.Add(1)
			if s.cfg.onPanic != nil {
				s.cfg.onPanic(id, r)
			} else {
				log.Printf("schedule: job of task %d panicked: %v", id, r)
			}
		}
	}()
	job()
}

// finish clears the running flag of the task in slot; if the owner has
// already let go of it, the slot is freed here.
func (s *Scheduler) finish(slot uint32, t *task) {
	if t.letGo(flagRunning) {
		s.free(slot, t)
	}
}

func (s *Scheduler) noteLateness(late int64) {
	for {
		cur := s.maxLateness.Load()
		if late <= cur || s.maxLateness.CompareAndSwap(cur, late) {
			return
		}
	}
}

// gate lets jobs start until it is closed, and tells when the last job that
// started has returned. mu guards all of its fields.
type gate struct {
	mu      sync.Mutex
	closed  bool
	running int
	idle    chan struct{} // closed once closed is set and running is 0
}

func (g *gate) enter() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	g.running++
	return true
}

func (g *gate) leave() {
	g.mu.Lock()
	g.running--
	if g.closed && g.running == 0 {
		close(g.idle)
	}
	g.mu.Unlock()
}

func (g *gate) close() {
	g.mu.Lock()
	if !g.closed {
		g.closed = true
		if g.running == 0 {
			close(g.idle)
		}
	}
	g.mu.Unlock()
}

func (g *gate) active() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.running
}
