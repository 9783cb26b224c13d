package schedule

import (
	"testing"

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
	_, tk, _ := s.allocSlot()
	g := tk.generation()
	tk.arg = func() {}
	tk.word.Store(statusDue)              // its run has let go, and so has the owner
	require.True(t, tk.free(s.slab.base)) // freed while the run was ending
	tk.arg = func() {}                    // and handed out again
	tk.clearJobAt(g)
	assert.NotNil(t, tk.arg, "the new task's job was dropped")
	tk.clearJobAt(tk.generation())
	assert.Nil(t, tk.arg, "the job of the task still in the slot is dropped")
}
