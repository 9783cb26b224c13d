package schedule

import (
	"math"
	"sync/atomic"
)

// TaskID identifies a task scheduled on a Scheduler. It is never 0, and a
// Scheduler never hands out the same TaskID twice. IDs are opaque: their
// numeric order says nothing about the order in which tasks were scheduled.
type TaskID uint64

// An ID is the slot of the task in the slab (low 32 bits) and the slot's
// generation (high 32 bits). Generations start at 1, so no ID is 0.
func makeID(slot, gen uint32) TaskID { return TaskID(uint64(gen)<<32 | uint64(slot)) }

func (id TaskID) slot() uint32 { return uint32(id) }
func (id TaskID) gen() uint32  { return uint32(id >> 32) }

// The state word of a task packs its deadline and its state into one
// uint64 so that a single CompareAndSwap moves both:
//
//	bits 4..63  deadline, in nanoseconds since the scheduler's epoch
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
	statusFired     = 2
	statusMask      = 3

	flagRunning = 1 << 2
	flagOwned   = 1 << 3
	flagMask    = 1<<whenShift - 1

	whenShift = 4

	// never is the largest deadline the word can hold, about 36 years after
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
//   - gen: written only while the slot is being freed, under the slot's
//     stripe lock; read by anyone.
//   - job, interval: written when the slot is allocated, before its ID is
//     published; cleared when it is freed. Read by the owner and by the
//     worker that runs the job.
//   - ref: owner goroutine only. With eager cancel it is the index of the
//     task's entry in the heap (noIndex when it has none); with lazy cancel
//     it is the tag of the task's current heap entry, and entries whose tag
//     differs are tombstones.
type task struct {
	word     atomic.Uint64
	gen      atomic.Uint32
	ref      uint32
	job      func()
	interval int64 // nanoseconds; 0 for a one-shot task
}

// letGo clears one holder's flag, flagOwned or flagRunning, and reports
// whether that left the slot with no holder, so that the caller must free it.
// Exactly one of the two holders sees true.
func (t *task) letGo(flag uint64) bool {
	for {
		w := t.word.Load()
		nw := w &^ flag
		if t.word.CompareAndSwap(w, nw) {
			return nw&(flagOwned|flagRunning) == 0
		}
	}
}

// noIndex marks a task that has no entry in an eager heap.
const noIndex = math.MaxUint32
