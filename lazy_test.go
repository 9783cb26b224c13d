package schedule

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// White-box tests of the lazy cancel strategy (lazy.go).

func TestLazyTagWrapDoesNotRunATaskTwice(t *testing.T) {
	s := bare(LazyCancel)
	ran := 0
	id, err := s.ScheduleOne(func() { ran++ }, time.Hour)
	require.NoError(t, err)
	s.step(0)
	// Fast-forward the task's tag to just short of wrapping.
	task := s.slab.at(s.slab.slotOf(id))
	task.ref = math.MaxUint32 - 2
	s.owner.heap.items[0].tag = task.ref

	// Each move earlier pushes an entry with the next tag: MaxUint32-1,
	// MaxUint32, 0, 1. The old entries must all read as tombstones.
	for i := range 4 {
		// Less than deferMoves away: each move is a request.
		require.True(t, s.Reset(id, time.Duration(500-i)*time.Millisecond))
		s.step(0)
	}
	assert.Equal(t, uint32(1), task.ref)
	s.step(int64(2 * time.Hour))
	require.Len(t, s.runs.q.items, 1, "dispatched once")
	var fb freeBatch
	s.runs.runOne(s.runs.q.items[0], &fb)
	assert.Equal(t, 1, ran)
	assert.Equal(t, 0, s.owner.heap.len(), "every tombstone was discarded")
	assert.Equal(t, int64(0), s.cancel.tombstones())
}
