package schedule

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// White-box tests of the slab (slab.go): slot reuse, generations, and
// chunks trimmed after a spike.

// TestChunkFillsWholePages guards the slab's memory per task: a task is 24
// bytes, and a chunk's slots, and its argument column, take exactly what
// their arrays hold: whole 8 KiB pages, with no header and no rounding up
// to a size class.
func TestChunkFillsWholePages(t *testing.T) {
	assert.Equal(t, uintptr(24), unsafe.Sizeof(task{}))
	// A header and a size class would add 11–13%; the measure is within 1–2%.
	assert.InEpsilon(t, float64(unsafe.Sizeof([chunkSize]task{})), heapPerObject(func() any { return new([chunkSize]task) }), 0.04)
	assert.InEpsilon(t, float64(unsafe.Sizeof([chunkSize]any{})), heapPerObject(func() any { return new([chunkSize]any) }), 0.04)
}

// heapPerObject returns the heap bytes each object that alloc returns
// takes, averaged over a few hundred.
func heapPerObject(alloc func() any) float64 {
	const n = 256
	kept := make([]any, 0, n)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range n {
		kept = append(kept, alloc())
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(kept)
	return float64(after.HeapAlloc-before.HeapAlloc) / n
}

func TestSlotWhoseGenerationWouldWrapIsNeverReused(t *testing.T) {
	s := bare(LazyCancel)
	slot, task, _ := s.allocSlot()
	task.gen.Store(s.slab.base - 1) // the next generation would be the first again
	if s.slab.base == 1 {
		task.gen.Store(genLocked - 1) // generations have 31 bits, and skip 0
	}
	task.word.Store(statusDue)  // its run and the owner have let go
	s.slab.free([]uint32{slot}) // the slot must be retired for good
	assert.Zero(t, task.gen.Load())
	for k := range s.slab.shards {
		assert.Empty(t, s.slab.shards[k].vacant)
	}

	next, _, _ := s.allocSlot()
	assert.NotEqual(t, slot, next)
}

func TestFreedSlotIsReusedWithANewGeneration(t *testing.T) {
	s := bare(EagerCancel)
	first, err := s.ScheduleOne(func() {}, time.Hour)
	require.NoError(t, err)
	require.True(t, s.CancelTask(first))
	s.step(s.now()) // the owner removes the entry and frees the slot

	// Its shard hands the slot out next; adds take any free shard, so add
	// until one comes from that shard.
	var second TaskID
	for second == 0 || s.slab.shardOf(s.slab.slotOf(second)) != s.slab.shardOf(s.slab.slotOf(first)) {
		second, err = s.ScheduleOne(func() {}, time.Hour)
		require.NoError(t, err)
	}
	assert.Equal(t, s.slab.slotOf(first), s.slab.slotOf(second), "the slot is reused")
	assert.NotEqual(t, first.gen(), second.gen())
	assert.False(t, s.CancelTask(first), "the old ID does not reach the new task")
	assert.False(t, s.Reset(first, time.Second))
}

// liveChunks counts the slab's chunks that have not been trimmed, and
// panics if the directory's slot arrays are not its chunks'.
func liveChunks(s *Scheduler) int {
	n := 0
	if dir := s.slab.dir.Load(); dir != nil {
		for i := range dir.chunks {
			ch, tasks := dir.chunks[i].Load(), dir.tasks[i].Load()
			if ch == nil && tasks != nil || ch != nil && ch.tasks != tasks {
				panic(fmt.Sprintf("directory entry %d: the slot array is not the chunk's", i))
			}
			if ch != nil {
				n++
			}
		}
	}
	return n
}

// TestChunksAreTrimmedAfterACancelSpike cancels every task of a spike and
// checks that the slab gives its chunks back, that no ID of the spike names
// a task afterwards, and that the tasks of a second spike, in reused chunk
// indices, get IDs never seen before.
func TestChunksAreTrimmedAfterACancelSpike(t *testing.T) {
	eachCancelStrategy(t, func(t *testing.T, strategy CancelStrategy) {
		s := bare(strategy)
		const n = 256 * chunkSize
		seen := make(map[TaskID]bool, 2*n)
		spike := func() []TaskID {
			ids := make([]TaskID, n)
			for i := range ids {
				id, err := s.ScheduleOne(nop, time.Hour+time.Duration(i))
				require.NoError(t, err)
				require.False(t, seen[id], "ID %#x handed out twice", id)
				seen[id] = true
				ids[i] = id
				if i%4096 == 0 {
					s.step(s.now()) // a lane holds at most laneMax requests
				}
			}
			s.step(s.now())
			return ids
		}
		first := spike()
		peak := liveChunks(s)
		require.GreaterOrEqual(t, peak, 256)
		for i, id := range first {
			require.True(t, s.CancelTask(id))
			if i%4096 == 0 {
				s.step(s.now())
			}
		}
		s.step(s.now())
		s.step(s.now())
		assert.LessOrEqual(t, liveChunks(s), peak/10, "chunks kept after the spike")
		for _, id := range first {
			assert.False(t, s.CancelTask(id))
			assert.False(t, s.Reset(id, time.Second))
		}

		second := spike() // reuses the indices trimmed
		assert.Equal(t, n, s.Len())
		for _, id := range second {
			require.True(t, s.Reset(id, 2*time.Hour), "a task of the second spike")
		}
		for _, id := range first {
			assert.False(t, s.CancelTask(id), "an ID of the first spike names a task of the second")
		}
	})
}

// TestChunksAreTrimmedAfterAFiringSpike runs every task of a spike on a
// running scheduler, in fake time, and checks that the slab gives its
// chunks back once the runs have ended.
func TestChunksAreTrimmedAfterAFiringSpike(t *testing.T) {
	eachCancelStrategy(t, func(t *testing.T, strategy CancelStrategy) {
		synctest.Test(t, func(t *testing.T) {
			s, err := New(4, WithCancelStrategy(strategy))
			require.NoError(t, err)
			defer s.Shutdown()
			const n = 256 * chunkSize
			var ran atomic.Int64
			for range n {
				_, err := s.ScheduleOne(func() { ran.Add(1) }, time.Second)
				require.NoError(t, err)
			}
			peak := liveChunks(s)
			require.GreaterOrEqual(t, peak, 256)
			time.Sleep(time.Second)
			synctest.Wait()
			assert.Equal(t, int64(n), ran.Load())
			assert.LessOrEqual(t, liveChunks(s), peak/10, "chunks kept after the spike")
		})
	})
}

// TestTombstonesNeverReachATrimmedChunk fires lazy tasks whose earlier
// deadlines left tombstones behind, so that the tombstones name free slots,
// and checks that the chunks are trimmed only once the tombstones are
// gone: the later steps, which would pop them, must find their chunks.
func TestTombstonesNeverReachATrimmedChunk(t *testing.T) {
	s := bare(LazyCancel)
	const n = 64 * chunkSize
	ids := make([]TaskID, n)
	for i := range ids {
		var err error
		ids[i], err = s.ScheduleOne(nop, 2*time.Hour)
		require.NoError(t, err)
		if i%4096 == 0 {
			s.step(s.now())
		}
	}
	s.step(s.now())
	peak := liveChunks(s)
	for i, id := range ids {
		// Moved earlier, to less than deferMoves away: each move is a
		// request, and the 2 h entries become tombstones.
		require.True(t, s.Reset(id, 500*time.Millisecond))
		if i%4096 == 0 {
			s.step(0)
		}
	}
	s.step(0)
	require.Positive(t, s.cancel.tombstones(), "tombstones in the heap")

	at := s.now() + int64(time.Hour)
	s.step(at)                                  // every task comes due...
	s.runner.dropDue(s.runner.q.takeAll(false)) // ...and its run ends, freeing its slot
	s.step(at)                                  // the chunks go, and the tombstones first
	assert.Zero(t, s.cancel.tombstones())
	assert.Zero(t, s.owner.heap.len())
	assert.Less(t, liveChunks(s), peak, "no chunk trimmed")
	assert.LessOrEqual(t, liveChunks(s), 2*shardCount)
	s.step(at + int64(2*time.Hour)) // nothing left to pop
}

// An add whose shard would have to add a chunk takes a free slot of
// another shard instead, and keeps to that shard: slots go back to the
// shard they came from, so a caller that keeps to one shard while it frees
// the slots of others would otherwise grow the slab while free slots pile
// up elsewhere.
func TestAllocTakesAnotherShardsFreeSlotBeforeAddingAChunk(t *testing.T) {
	s := bare(EagerCancel)
	h := &shardHint{k: 3}
	var slots []uint32
	for range 10 {
		slot, tk, k, ok := s.slab.allocHinted(h)
		require.True(t, ok)
		require.Equal(t, uint8(3), k)
		tk.word.Store(statusDue) // its run and the owner have let go
		slots = append(slots, slot)
	}
	s.slab.free(slots) // back to shard 3's vacant list
	chunks := liveChunks(s)

	h.k = 0 // a shard with no chunk yet
	slot, _, k, ok := s.slab.allocHinted(h)
	require.True(t, ok)
	assert.Equal(t, uint8(3), k, "the slot comes from the shard with free slots")
	assert.Equal(t, uint32(3), h.k, "later adds keep to that shard")
	assert.Contains(t, slots, slot)
	assert.Equal(t, chunks, liveChunks(s), "no chunk added")
}
