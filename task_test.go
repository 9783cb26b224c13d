package schedule

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// White-box tests of a task's lock and of letting go of its job (task.go).

func TestTaskLockTurnsAwayOtherGenerations(t *testing.T) {
	var tk task
	tk.gen.Store(5)
	assert.False(t, tk.lock(4), "an older generation")
	require.True(t, tk.lock(5))
	assert.False(t, tk.lock(4), "an older generation, while the lock is held")
	assert.Equal(t, uint32(5), tk.generation(), "the lock bit is not part of the generation")
	tk.unlock(6) // the slot is freed
	assert.False(t, tk.lock(5), "the generation of the freed task")
	assert.True(t, tk.lock(6))
}

func TestTaskLockExcludesConcurrentHolders(t *testing.T) {
	var tk task
	tk.gen.Store(7)
	counted := 0 // guarded by tk's lock; -race checks that it is
	const each = 2000
	done := make(chan struct{})
	for range 4 {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range each {
				if i%2 == 0 {
					require.True(t, tk.lock(7))
					counted++
					tk.unlock(7)
				} else {
					g := tk.lockCurrent()
					counted++
					tk.unlock(g)
				}
			}
		}()
	}
	for range 4 {
		<-done
	}
	assert.Equal(t, 4*each, counted)
}

func TestRunEndLeavesTheJobOfATaskThatReusedTheSlot(t *testing.T) {
	s := bare(LazyCancel)
	slot, tk, ok := s.allocSlot()
	require.True(t, ok)
	cell := s.slab.newArgCell(slot)
	g := tk.generation()
	tk.begin(s.clock, jobWith(func(TaskID, any) {}, "old"), cell, time.Hour, false)
	tk.word.Store(statusDue | flagWith)         // its run has let go, and so has the owner
	require.True(t, tk.free(s.slab.base, cell)) // freed while the run was ending
	require.Nil(t, *cell, "freeing the slot clears the argument")
	tk.begin(s.clock, jobWith(func(TaskID, any) {}, "new"), cell, time.Hour, false) // handed out again
	tk.clearJobAt(g, cell)
	assert.NotNil(t, tk.job, "the new task's job was dropped")
	assert.Equal(t, "new", *cell, "the new task's argument was dropped")
	tk.clearJobAt(tk.generation(), cell)
	assert.Nil(t, tk.job, "the job of the task still in the slot is dropped")
	assert.Nil(t, *cell, "and so is its argument")
}
