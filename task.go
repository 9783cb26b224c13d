package schedule

import (
	"math"
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"
)

// TaskID identifies a task scheduled on a Scheduler. It is never 0, and a
// Scheduler never hands out the same TaskID twice. IDs are opaque: their
// numeric order says nothing about the order in which tasks were scheduled.
//
// An ID names a task of the [Scheduler] that issued it only. Each Scheduler
// encodes its IDs with random values of its own, so an ID from another
// Scheduler names one of its tasks with probability about n/2^63, n being
// the number of tasks that Scheduler has room for (at least as many as it
// holds): a mixed-up ID is, for any practical purpose, an unknown ID.
type TaskID uint64

// The generation of an ID (high 32 bits, of which generations use the low
// 31); the slot is in the low 32 bits, scrambled with the slab's key (see
// slab.id and slab.slotOf).
func (id TaskID) gen() uint32 { return uint32(id >> 32) }

// The state word of a task packs its deadline and its state into one
// uint64 so that a single CompareAndSwap moves both:
//
//	bits 6..63  deadline, in nanoseconds since the scheduler's epoch
//	bit  5      with:    the job is a func(TaskID, any) (set once, at add;
//	             see job.go)
//	bit  4      repeating: the task has an interval (set once, at add)
//	bit  3      owned:   the owner goroutine still references the slot
//	             (an add op in the inbox or an entry in the heap)
//	bit  2      running: the task is queued for a worker or running on one
//	bits 0..1   status:  pending, cancelled or fired
//
// Invariants:
//   - Callers (CancelTask, Reset) change only the status (pending to
//     cancelled) and the deadline of a pending task.
//   - Only the owner sets fired, sets running and clears owned; only a worker
//     clears running.
//   - A slot is freed by whoever makes the word reach "not owned, not
//     running"; by then its status is cancelled or fired, and no one else
//     holds a reference to the slot.
const (
	statusPending   = 0
	statusCancelled = 1
	statusDue       = 2
	statusMask      = 3

	flagRunning = 1 << 2
	flagOwned   = 1 << 3
	flagRepeat  = 1 << 4
	flagWith    = 1 << 5
	flagMask    = 1<<whenShift - 1

	whenShift = 6

	// never is the largest deadline the word can hold, about 9 years after
	// the epoch. A task with this deadline never comes due.
	never = int64(math.MaxUint64 >> whenShift)
)

func packWord(when int64, flags uint64) uint64 { return uint64(when)<<whenShift | flags }
func wordWhen(w uint64) int64                  { return int64(w >> whenShift) }
func wordStatus(w uint64) uint64               { return w & statusMask }

// task is one slot of the slab. Slots are reused, so every access from
// outside the owner goes through the generation check described in slab.go.
//
// Ownership of the fields:
//   - word: shared; changed only by CompareAndSwap (see the layout above).
//   - gen: the slot's generation, in the low 31 bits, and the task's lock,
//     in the top bit (see lock). The generation changes only when the slot
//     is freed, by whoever holds the lock; anyone may read it.
//   - The interval of a repeating task is not here: it travels to the owner
//     with the add request and stays in the owner's map (owner.intervals),
//     and neither is a job's argument, which sits in the slab's argument
//     column (job.go): a slot is 24 bytes, with one pointer, the job's func.
//   - job: the job's func value (job.go). Written when the slot is
//     allocated, before its ID is published, with the argument, if any;
//     read only by the worker that runs the job, while the running flag is
//     set. Both are cleared, under the task's lock, by whoever sees the
//     task cancelled with no run in flight (CancelTask, or the worker
//     ending the run), and when the slot is freed: a job that can no longer
//     run is never kept reachable.
//   - tag: owner goroutine only: the tag of the task's current entry in the
//     heap (owner.push). An entry with another tag is a tombstone, which
//     only lazy cancel leaves behind.
type task struct {
	word atomic.Uint64
	gen  atomic.Uint32
	tag  uint32
	job  unsafe.Pointer
}

// The transitions of the state word. Each is named for what it does to
// the task, and the invariants above hold across each: no other file
// stores to the word or compares and swaps it.

// begin starts the life of a task in a slot just allocated: it sets the
// job j, with its argument in cell (which must not be nil for an argument
// that is not), and the deadline, delay from now on c, which it returns,
// and gives the owner its hold, which the add request carries to the
// owner. Its ID is not published yet, so no one else reads the slot.
func (t *task) begin(c clock, j job, cell *any, delay time.Duration, repeating bool) (when int64) {
	when = c.deadline(delay)
	if invariantsOn {
		checkVacant(t.word.Load(), t.generation(), t.job)
	}
	t.job = j.fn
	flags := uint64(statusPending | flagOwned)
	if j.with {
		flags |= flagWith
		if j.arg != nil {
			*cell = j.arg
		}
	}
	if repeating {
		flags |= flagRepeat
	}
	t.word.Store(packWord(when, flags))
	return when
}

// abandon ends the life of a task whose add never reached the owner
// (Shutdown came first): no one holds it, and the caller frees its slot.
// flagWith stays, for free to clear the argument.
func (t *task) abandon() { t.word.Store(t.word.Load()&flagWith | statusCancelled) }

// state returns the word, for the holders of the slot (the owner, a run),
// which the slot cannot be freed under.
func (t *task) state() uint64 { return t.word.Load() }

// stateAt returns the word of the task of generation g, under the task's
// lock, and false when the slot no longer holds that task.
func (t *task) stateAt(g uint32) (uint64, bool) {
	if !t.lock(g) {
		return 0, false
	}
	w := t.word.Load()
	t.unlock(g)
	return w, true
}

// isCancelled reports whether the task was cancelled, for a holder of
// the slot.
func (t *task) isCancelled() bool { return wordStatus(t.word.Load()) == statusCancelled }

// comeDue hands a pending one-shot, whose word the owner read as w, from
// the owner to a run: the task is due, the run holds it, and the owner
// lets go. It reports false, changing nothing, when a caller changed the
// word since w was read.
func (t *task) comeDue(w uint64) bool {
	if invariantsOn {
		checkHandOver(w, false)
	}
	return t.word.CompareAndSwap(w, w&^(statusMask|flagOwned)|statusDue|flagRunning)
}

// repeat moves a pending repeating task, whose word the owner read as w,
// on to its next deadline, and gives a run a hold on it unless the
// previous run still holds one (run false: this run is skipped). It
// reports false in ok, changing nothing, when a caller changed the word
// since w was read.
func (t *task) repeat(w uint64, next int64) (run, ok bool) {
	if invariantsOn {
		checkHandOver(w, true)
	}
	run = w&flagRunning == 0
	nw := packWord(next, w&flagMask)
	if run {
		nw |= flagRunning
	}
	return run, t.word.CompareAndSwap(w, nw)
}

// run runs the task's job as the task id, for the run that holds it, with
// the argument in cell (the slot's argument cell, nil where its chunk has
// no column; see slab.held), and then ends the run
// (endRun, with the slab's generation base), reporting whether the slot is
// free for reuse. A job that panics or ends its goroutine does not come
// back here: the caller then ends the run itself.
func (t *task) run(id TaskID, base uint32, cell *any) (reusable bool) {
	with := t.word.Load()&flagWith != 0
	var arg any
	if with && cell != nil {
		arg = *cell
	}
	call(t.job, with, id, arg)
	return t.endRun(base, cell)
}

// endRun lets go of a run's hold on the task (flagRunning). If the owner
// has let go too, no one holds the task any more: endRun ends its life
// (free, with the slab's generation base) and reports whether the slot is
// free for reuse, for the caller to give back to the slab (slab.vacate). A
// repeating task cancelled while the run was in flight, which the owner
// still holds, has its job cleared here: no run of it starts again. cell
// is the task's argument cell, as for run.
func (t *task) endRun(base uint32, cell *any) (reusable bool) {
	g := t.generation() // the run's: the slot cannot be freed before letGo
	w := t.letGo(flagRunning)
	if unheld(w) {
		return t.free(base, cell)
	}
	if wordStatus(w) == statusCancelled {
		t.clearJobAt(g, cell)
	}
	return false
}

// cancel cancels the pending task of generation g, as CancelTask does, and
// reports whether it did. A job that no run holds is cleared at once; a
// run in flight clears it when it ends (endRun). cell is the argument cell
// of the task's slot (slab.argCell), nil when its chunk has no column.
func (t *task) cancel(g uint32, cell *any) bool {
	_, ok := t.changePending(g, 0, cell, true)
	return ok
}

// moveTo moves the deadline of the pending task of generation g to when,
// as Reset does. It reports the deadline it had and whether it moved it.
func (t *task) moveTo(g uint32, when int64) (old int64, ok bool) {
	w, ok := t.changePending(g, when, nil, false)
	return wordWhen(w), ok
}

// changePending cancels the pending task of generation g (cancel set) or
// moves its deadline to when, under the task's lock, so that the slot
// cannot be freed and reused meanwhile; cell is the argument cell a cancel
// clears with the job. It returns the word it changed, and false when the
// task is not, or is no longer, pending.
func (t *task) changePending(g uint32, when int64, cell *any, cancel bool) (uint64, bool) {
	if !t.lock(g) {
		return 0, false
	}
	for {
		w := t.word.Load()
		if wordStatus(w) != statusPending {
			t.unlock(g)
			return w, false
		}
		nw := packWord(when, w&flagMask)
		if cancel {
			nw = w | statusCancelled
		}
		if t.word.CompareAndSwap(w, nw) {
			if cancel && w&flagRunning == 0 {
				t.clearJob(w, cell) // no run holds the job, and none can start now
			}
			t.unlock(g)
			return w, true
		}
	}
}

// clearJob clears the job, and its argument in cell if the word w says it
// has one, so that the garbage collector can reclaim them and everything
// they capture. The task's lock must be held.
func (t *task) clearJob(w uint64, cell *any) {
	t.job = nil
	if w&flagWith != 0 && cell != nil {
		*cell = nil
	}
}

// clearJobAt clears the job, as clearJob does, if the slot still holds the
// task of generation g; it takes the task's lock. If the slot has been
// freed since (and its job cleared then), it may hold a new task by now,
// whose job stays.
func (t *task) clearJobAt(g uint32, cell *any) {
	if t.lock(g) {
		t.clearJob(t.word.Load(), cell)
		t.unlock(g)
	}
}

// letGo clears one holder's flag, flagOwned or flagRunning, and returns the
// word it left. The slot has no holder left, and the caller must free it,
// when that word has neither flag: exactly one of the two holders sees so.
func (t *task) letGo(flag uint64) uint64 {
	for {
		w := t.word.Load()
		if invariantsOn {
			checkHeld(w, flag)
		}
		nw := w &^ flag
		if t.word.CompareAndSwap(w, nw) {
			return nw
		}
	}
}

func unheld(w uint64) bool { return w&(flagOwned|flagRunning) == 0 }

// free ends the life of the task, whose holders have all let go of it: it
// clears the job, with its argument in cell, so that the garbage collector
// can reclaim it, and moves
// the generation on so that the task's ID no longer names the slot. The
// generations of a slot start at base and count up, skipping 0; when the
// next would be base again, the slot is retired: its generation is left
// at 0, which no ID carries, and free reports false, so that the slot is
// never reused and no TaskID is ever handed out twice.
func (t *task) free(base uint32, cell *any) (reusable bool) {
	g := t.lockCurrent()
	w := t.word.Load()
	if invariantsOn {
		checkFreeable(w, g)
	}
	t.clearJob(w, cell)
	if g++; g == genLocked {
		g = 1
	}
	if g == base {
		g = 0 // retired
	}
	t.unlock(g)
	return g != 0
}

// genLocked is the top bit of a task's gen: set while someone holds the
// task's lock. Callers that act on a task by ID (CancelTask, Reset) hold it
// while they check the generation and change the word or clear the job;
// whoever frees the slot holds it while it clears the job and moves the
// generation on. So a caller never changes a later task that reuses the
// slot: its ID's generation no longer matches, and cannot start to match
// while it holds the lock.
//
// The lock sits in the task's own cache line, which the holder touches
// anyway, as the Go runtime keeps a lock in each timer: callers on
// different cores acting on different tasks share no line. It is held for
// a few instructions, so a caller that finds it taken spins briefly and
// then yields its processor until it is free.
const genLocked = 1 << 31

// lock takes the task's lock for a caller holding an ID of generation g,
// and reports false, taking nothing, when g is not, or is no longer, the
// slot's generation.
func (t *task) lock(g uint32) bool {
	for spins := 0; ; spins++ {
		cur := t.gen.Load()
		if cur == g && t.gen.CompareAndSwap(g, g|genLocked) {
			return true
		}
		if cur&^genLocked != g {
			return false
		}
		backOff(spins)
	}
}

// lockCurrent takes the task's lock whatever its generation, which it
// returns. It is for holders of the slot (a worker running its job, the
// owner), whose task cannot be freed under them.
func (t *task) lockCurrent() uint32 {
	for spins := 0; ; spins++ {
		if cur := t.gen.Load(); cur&genLocked == 0 && t.gen.CompareAndSwap(cur, cur|genLocked) {
			return cur
		}
		backOff(spins)
	}
}

// unlock opens the task's lock, leaving generation g: the one it was
// taken at, or the next one when the slot has just been freed.
func (t *task) unlock(g uint32) { t.gen.Store(g) }

// generation returns the slot's generation, whether or not its lock is
// held.
func (t *task) generation() uint32 { return t.gen.Load() &^ genLocked }

// backOff waits a little before the next attempt to take a task's lock:
// after spinsBeforeYield spins it lets other goroutines run, since a holder
// that was preempted needs a processor to finish. The lock is held for a
// few instructions, so a short spin usually finds it free.
func backOff(spins int) {
	if spins >= spinsBeforeYield {
		runtime.Gosched()
	}
}

const spinsBeforeYield = 4
