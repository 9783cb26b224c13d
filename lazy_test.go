package schedule

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// White-box tests of the lazy cancel strategy (cancel.go).

func TestLazyTagWrapDoesNotRunATaskTwice(t *testing.T) {
	s := bare(LazyCancel)
	ran := 0
	id, err := s.ScheduleOne(func() { ran++ }, time.Hour)
	require.NoError(t, err)
	s.step(0)
	// Fast-forward the task's tag to just short of wrapping.
	task := s.slab.at(s.slab.slotOf(id))
	task.tag = math.MaxUint32 - 2
	s.owner.heap.items[0].tag = task.tag

	// Each move earlier pushes an entry with the next tag: MaxUint32-1,
	// MaxUint32, 0, 1. The old entries must all read as tombstones.
	for i := range 4 {
		// Less than deferMoves away: each move is a request.
		require.True(t, s.Reset(id, time.Duration(500-i)*time.Millisecond))
		s.step(0)
	}
	assert.Equal(t, uint32(1), task.tag)
	s.step(int64(2 * time.Hour))
	require.Len(t, s.runner.q.items, 1, "dispatched once")
	var fb freeBatch
	s.runner.runJob(s.runner.q.items[0], &fb)
	assert.Equal(t, 1, ran)
	assert.Equal(t, 0, s.owner.heap.len(), "every tombstone was discarded")
	assert.Equal(t, int64(0), s.cancel.tombstones())
}

// With lazy cancel, giving chunks back means rebuilding the heap first (a
// tombstone may name a free slot), which costs O(n): it is done only when
// the chunks hold at least a quarter as many slots as the heap has entries.
func TestLazyTrimsChunksOnlyWhenTheyPayForTheRebuild(t *testing.T) {
	s := bare(LazyCancel)
	const n = 8 * chunkSize
	var ids []TaskID
	for i := range n {
		id, err := s.ScheduleOne(nop, time.Hour)
		require.NoError(t, err)
		ids = append(ids, id)
		if i%chunkSize == 0 {
			s.step(0) // so that no inbox lane fills up and holds the adds back
		}
	}
	s.step(0)
	require.True(t, s.CancelTask(ids[0]))
	s.step(0)
	require.Equal(t, int64(1), s.cancel.tombstones())
	require.Equal(t, n, s.owner.heap.len())

	// The counts of empty chunks stand in for chunks whose slots all went
	// back to the slab; nothing is trimmed here.
	setEmpty := func(chunks int) {
		sh := &s.slab.shards[0]
		sh.mu.Lock()
		sh.empty = chunks
		sh.mu.Unlock()
	}
	setEmpty(1) // one chunk against a heap of eight chunks' entries
	assert.False(t, s.owner.readyToTrim(), "a rebuild of the heap for one chunk")
	assert.Equal(t, int64(1), s.cancel.tombstones())
	assert.Equal(t, n, s.owner.heap.len())

	setEmpty(2) // a quarter of the heap's entries
	assert.True(t, s.owner.readyToTrim())
	assert.Zero(t, s.cancel.tombstones(), "the heap was rebuilt before the trim")
	assert.Equal(t, n-1, s.owner.heap.len())
	setEmpty(0)
}
