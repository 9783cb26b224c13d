//go:build invariants

package schedule

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// With the tag invariants, a broken invariant panics with a message that
// names it, rather than going on with corrupted state.

func TestLettingGoOfAHoldNotHeldPanicsNamingIt(t *testing.T) {
	var tk task
	tk.word.Store(packWord(1, statusPending|flagRunning))
	assert.PanicsWithValue(t,
		"schedule: invariant broken: the owner lets go of a task it does not hold (flagOwned clear)",
		func() { tk.letGo(flagOwned) })
}

func TestHandingOverACancelledTaskPanicsNamingIt(t *testing.T) {
	var tk task
	w := packWord(1, statusCancelled|flagOwned)
	tk.word.Store(w)
	assert.PanicsWithValue(t,
		"schedule: invariant broken: the owner hands over a task that is not pending",
		func() { tk.comeDue(w) })
}

func TestFreeingAHeldSlotPanicsNamingIt(t *testing.T) {
	var tk task
	tk.gen.Store(1)
	tk.word.Store(packWord(1, statusCancelled|flagRunning))
	assert.PanicsWithValue(t,
		"schedule: invariant broken: a slot is freed while the owner or a run still holds it",
		func() { tk.free(7, nil) })
}

func TestAHeapOutOfOrderPanicsNamingIt(t *testing.T) {
	var h deadlineHeap
	for i := range 10 {
		h.push(entry{when: int64(i), slot: uint32(i)})
	}
	h.items[5].when = -1 // corrupted: earlier than its parent, at index 1
	assert.PanicsWithValue(t,
		"schedule: invariant broken: heap order: a child is earlier than its parent",
		func() { h.checkOrderAt(1) })
}
