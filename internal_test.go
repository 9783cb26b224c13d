package schedule

import (
	"math"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// White-box tests of the pieces the owner goroutine is built from. They
// drive the owner's steps by hand, on the test goroutine, with no loop
// running.

// bare returns a Scheduler with its state set up but no goroutines and no
// pool: the test plays the owner, and no run ever starts.
func bare(strategy CancelStrategy) *Scheduler {
	return assemble(config{strategy: strategy}, nil, 0)
}

// allocSlot allocates a slot, as an add would.
func (s *Scheduler) allocSlot() (uint32, *task, bool) {
	slot, t, _, ok := s.slab.alloc()
	return slot, t, ok
}

// step runs one round of the owner's work at the given time.
func (s *Scheduler) step(now int64) {
	s.owner.dueCount = 0
	s.owner.work(now)
}

// checkHeap verifies the heap order and, when the heap is indexed, that
// every task's ref is its entry's position.
func checkHeap(t *testing.T, h *deadlineHeap) {
	t.Helper()
	for i, e := range h.items {
		if i > 0 {
			p := (i - 1) / heapArity
			require.LessOrEqual(t, h.items[p].when, e.when, "entry %d is earlier than its parent", i)
		}
		if h.index != nil {
			require.Equal(t, uint32(i), h.index.at(e.slot).ref, "index of slot %d", e.slot)
		}
	}
}

func TestHeapMatchesASortedListUnderRandomOperations(t *testing.T) {
	for _, indexed := range []bool{false, true} {
		s := bare(LazyCancel)
		h := &deadlineHeap{}
		if indexed {
			h.index = &s.slab
		}
		r := rand.New(rand.NewPCG(1, 2))
		var want []int64
		whens := map[uint32]int64{} // slot -> when, for the indexed case
		for range 4000 {
			switch op := r.IntN(10); {
			case op < 5 || h.len() == 0:
				slot, _, ok := s.allocSlot()
				require.True(t, ok)
				when := r.Int64N(1000)
				h.push(entry{when: when, slot: slot})
				want = append(want, when)
				whens[slot] = when
			case op < 7:
				e := h.top()
				h.pop()
				require.Equal(t, slices.Min(want), e.when)
				want = removeOne(want, e.when)
				delete(whens, e.slot)
			case op < 9:
				i := r.IntN(h.len())
				e := h.items[i]
				h.removeAt(i)
				want = removeOne(want, e.when)
				delete(whens, e.slot)
			default:
				i := r.IntN(h.len())
				e := h.items[i]
				when := r.Int64N(1000)
				h.setWhen(i, when)
				want = removeOne(want, e.when)
				want = append(want, when)
				whens[e.slot] = when
			}
			checkHeap(t, h)
			require.Equal(t, len(want), h.len())
		}
		if indexed {
			for slot, when := range whens {
				assert.Equal(t, when, h.items[s.slab.at(slot).ref].when)
			}
		}
	}
}

func removeOne(xs []int64, x int64) []int64 {
	i := slices.Index(xs, x)
	return slices.Delete(xs, i, i+1)
}

func TestHeapShrinksWhenItDrains(t *testing.T) {
	var h deadlineHeap
	for i := range 100_000 {
		h.push(entry{when: int64(i)})
	}
	for h.len() > 10 {
		h.pop()
		h.shrink()
	}
	assert.LessOrEqual(t, cap(h.items), 1024)
}

func TestOwnerShrinksItsHeapOnlyWhenNoDeadlineIsNear(t *testing.T) {
	s := bare(LazyCancel)
	const n, gap = 100_000, int64(10 * time.Microsecond)
	start := s.now()
	for i := range n {
		// A stream of deadlines 10 µs apart, and one an hour out.
		d := time.Duration(int64(i) * gap)
		if i == n-1 {
			d = time.Hour
		}
		_, err := s.ScheduleOne(func() {}, d)
		require.NoError(t, err)
		if i%4096 == 0 {
			s.step(start)
		}
	}
	s.step(start)
	full := cap(s.owner.heap.items)
	require.GreaterOrEqual(t, full, n)

	whens := make([]int64, 0, n)
	for _, e := range s.owner.heap.items {
		whens = append(whens, e.when)
	}
	slices.Sort(whens)

	// The owner hands over all but the last 10,000 of the stream, leaving
	// less than a quarter of the heap; the next deadline is 10 µs away, so
	// it keeps the heap's size.
	s.step(whens[n-10_001])
	require.Equal(t, 10_000, s.owner.heap.len())
	require.Less(t, s.owner.heap.len(), full/4)
	assert.Equal(t, full, cap(s.owner.heap.items), "shrank while deadlines were due any moment")

	// Past the stream, the next deadline is an hour away: it shrinks.
	s.step(whens[n-2])
	require.Equal(t, 1, s.owner.heap.len())
	assert.Less(t, cap(s.owner.heap.items), full/4)
}

func TestHeapifyRestoresOrderAndIndex(t *testing.T) {
	s := bare(EagerCancel)
	r := rand.New(rand.NewPCG(3, 4))
	for range 5000 {
		slot, _, _ := s.allocSlot()
		s.owner.heap.items = append(s.owner.heap.items, entry{when: r.Int64N(100), slot: slot})
	}
	s.owner.heap.heapify()
	checkHeap(t, &s.owner.heap)
}

func TestSlotWhoseGenerationWouldWrapIsNeverReused(t *testing.T) {
	s := bare(LazyCancel)
	slot, task, _ := s.allocSlot()
	task.gen.Store(s.slab.base - 1) // the next generation would be the first again
	if s.slab.base == 1 {
		task.gen.Store(genLocked - 1) // generations have 31 bits, and skip 0
	}
	s.slab.free([]uint32{slot}) // the slot must be retired for good
	assert.Zero(t, task.gen.Load())
	for k := range s.slab.shards {
		assert.Empty(t, s.slab.shards[k].free)
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

func TestNextRunKeepsThePhaseAndCountsMissedDeadlines(t *testing.T) {
	cases := []struct {
		name               string
		when, interval     int64
		now                int64
		wantNext, wantMiss int64
	}{
		{"on time", 100, 10, 100, 110, 0},
		{"a little late", 100, 10, 105, 110, 0},
		{"exactly one interval late", 100, 10, 110, 120, 1},
		{"three missed", 100, 10, 135, 140, 3},
		{"overflow clamps to never", never - 5, 10, never - 5, never, 0},
		{"huge interval", 0, math.MaxInt64, 0, never, 0},
	}
	for _, c := range cases {
		next, missed := nextRun(c.when, c.interval, c.now)
		assert.Equal(t, c.wantNext, next, c.name)
		assert.Equal(t, c.wantMiss, missed, c.name)
	}
}

func TestDeadlineClampsToNowAndNever(t *testing.T) {
	s := bare(LazyCancel)
	before := s.now()
	assert.GreaterOrEqual(t, s.deadline(-time.Hour), before)
	assert.LessOrEqual(t, s.deadline(0), s.now())
	assert.Equal(t, never, s.deadline(math.MaxInt64))
	assert.Equal(t, never, s.deadline(time.Duration(never)))
}

func TestNeverDueTaskIsNotDispatchedEvenPastTheHorizon(t *testing.T) {
	s := bare(LazyCancel)
	_, err := s.ScheduleOne(func() {}, math.MaxInt64)
	require.NoError(t, err)
	s.step(math.MaxInt64) // a clock beyond the representable horizon
	assert.Empty(t, s.runs.q.items)
	assert.Equal(t, 1, s.Len())
}

// TestFarEarlierResetsWaitForOnePassOverTheHeap checks deferMoves: a move
// earlier to a second or more out sends the owner no request and leaves
// the heap as it was, and the owner fixes every such entry once the
// earliest comes due, so that the tasks run in deadline order.
func TestFarEarlierResetsWaitForOnePassOverTheHeap(t *testing.T) {
	for _, strategy := range []CancelStrategy{LazyCancel, EagerCancel} {
		t.Run(strategy.String(), func(t *testing.T) {
			s := bare(strategy)
			var ids []TaskID
			for range 5 {
				id, err := s.ScheduleOne(nop, 3*time.Hour)
				require.NoError(t, err)
				ids = append(ids, id)
			}
			s.step(0)
			require.Equal(t, never, s.inbox.movedEarlier.Load())

			require.True(t, s.Reset(ids[3], 2*time.Hour))
			require.True(t, s.Reset(ids[1], time.Hour))
			assert.False(t, s.inbox.waiting(), "a far move sent a request")
			assert.InDelta(t, int64(time.Hour), s.inbox.movedEarlier.Load(), float64(time.Minute))
			s.step(0)
			assert.Equal(t, 5, s.owner.heap.len(), "entries added for far moves")
			assert.GreaterOrEqual(t, s.owner.heap.top().when, int64(3*time.Hour), "the heap was fixed before a move came due")

			s.step(int64(time.Hour) + int64(time.Minute))
			assert.Equal(t, never, s.inbox.movedEarlier.Load())
			s.step(int64(4 * time.Hour))
			var got []TaskID
			for _, d := range s.runs.q.items[s.runs.q.head:] {
				got = append(got, s.slab.id(d.slot, s.slab.at(d.slot).gen.Load()))
			}
			require.Len(t, got, 5)
			assert.Equal(t, []TaskID{ids[1], ids[3]}, got[:2])
		})
	}
}

// TestChunkFillsWholePages guards the slab's memory per task: a task is 40
// bytes, and a chunk's slots take exactly five 8 KiB pages, which is what a
// large allocation is rounded up to.
func TestChunkFillsWholePages(t *testing.T) {
	assert.Equal(t, uintptr(40), unsafe.Sizeof(task{}))
	assert.Zero(t, unsafe.Sizeof([chunkSize]task{})%8192)
}

// TestOwnerForgetsTheIntervalsOfCancelledTasks checks that the intervals of
// repeating tasks, kept by the owner, go with the tasks.
func TestOwnerForgetsTheIntervalsOfCancelledTasks(t *testing.T) {
	for _, strategy := range []CancelStrategy{LazyCancel, EagerCancel} {
		t.Run(strategy.String(), func(t *testing.T) {
			s := bare(strategy)
			var ids []TaskID
			for i := range 3 {
				id, err := s.Schedule(nop, time.Duration(i+1)*time.Hour)
				require.NoError(t, err)
				ids = append(ids, id)
			}
			_, err := s.ScheduleOne(nop, time.Hour)
			require.NoError(t, err)
			s.step(0)
			require.Len(t, s.owner.intervals, 3)
			assert.Equal(t, int64(2*time.Hour), s.owner.intervals[s.slab.slotOf(ids[1])])

			require.True(t, s.CancelTask(ids[1]))
			s.step(int64(4 * time.Hour)) // lazy: dropped as it reaches the top
			assert.Len(t, s.owner.intervals, 2)
			for _, id := range ids {
				s.CancelTask(id)
			}
			s.step(int64(24 * time.Hour))
			assert.Nil(t, s.owner.intervals)
		})
	}
}

// TestTimerWakeHandsOverDueTasksBeforeApplyingWaitingRequests checks the
// owner's first step after its timer fires: due tasks that no waiting
// request can precede go to the run queue before the inbox is drained, and
// deadline order holds across both steps.
func TestTimerWakeHandsOverDueTasksBeforeApplyingWaitingRequests(t *testing.T) {
	for _, strategy := range []CancelStrategy{LazyCancel, EagerCancel} {
		t.Run(strategy.String(), func(t *testing.T) {
			s := bare(strategy)
			ids := map[string]TaskID{}
			add := func(name string, d time.Duration) {
				id, err := s.ScheduleOne(nop, d)
				require.NoError(t, err)
				ids[name] = id
			}
			add("a", 1*time.Hour)
			add("b", 2*time.Hour)
			add("c", 3*time.Hour)
			s.step(0)
			add("d", 150*time.Minute) // waits in the inbox
			require.True(t, s.inbox.waiting())

			s.owner.runDueAhead(int64(4 * time.Hour))
			s.owner.handOver()
			assert.True(t, s.inbox.waiting(), "the waiting add was applied first")
			s.step(int64(4 * time.Hour))

			var got []string
			for _, d := range s.runs.q.items[s.runs.q.head:] {
				for name, id := range ids {
					if s.slab.id(d.slot, s.slab.at(d.slot).gen.Load()) == id {
						got = append(got, name)
					}
				}
			}
			assert.Equal(t, []string{"a", "b", "d", "c"}, got)
		})
	}
}

// TestRequestsWakeTheOwnerOnlyWhenTheyCannotWait checks the inbox
// handshake: while the owner sleeps on a timer, requests for later
// deadlines leave it asleep, one for an earlier deadline wakes it, and
// Stats has it apply what was left waiting.
func TestRequestsWakeTheOwnerOnlyWhenTheyCannotWait(t *testing.T) {
	for _, strategy := range []CancelStrategy{LazyCancel, EagerCancel} {
		t.Run(strategy.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s, err := New(1, WithCancelStrategy(strategy))
				require.NoError(t, err)
				defer s.Shutdown()
				fired := make(chan time.Duration, 2)
				start := time.Now()
				job := func() { fired <- time.Since(start) }
				_, err = s.ScheduleOne(job, time.Hour)
				require.NoError(t, err)
				synctest.Wait()
				require.Equal(t, time.Hour.Nanoseconds(), s.inbox.sleepUntil.Load())
				loops := s.owner.loops.Load()

				later, err := s.ScheduleOne(nop, 2*time.Hour)
				require.NoError(t, err)
				require.True(t, s.Reset(later, 3*time.Hour))
				require.True(t, s.Reset(later, 90*time.Minute)) // earlier, but after the timer
				synctest.Wait()
				assert.Equal(t, loops, s.owner.loops.Load(), "requests after the owner's timer woke it")
				assert.Equal(t, 2, s.Len())

				_, err = s.ScheduleOne(job, time.Minute)
				require.NoError(t, err)
				synctest.Wait()
				assert.Greater(t, s.owner.loops.Load(), loops, "a nearer deadline did not wake the owner")
				assert.Equal(t, time.Minute.Nanoseconds(), s.inbox.sleepUntil.Load())
				assert.Equal(t, 3, s.Stats().HeapEntries-s.Stats().Tombstones, "every request applied")

				time.Sleep(time.Hour)
				synctest.Wait()
				assert.Equal(t, time.Minute, <-fired)
				assert.Equal(t, time.Hour, <-fired)
			})
		})
	}
}

func nop() {}

// liveChunks counts the slab's chunks that have not been given back.
func liveChunks(s *Scheduler) int {
	n := 0
	if dir := s.slab.dir.Load(); dir != nil {
		for i := range dir.chunks {
			if dir.chunks[i].Load() != nil {
				n++
			}
		}
	}
	return n
}

// TestChunksAreGivenBackAfterACancelSpike cancels every task of a spike and
// checks that the slab gives its chunks back, that no ID of the spike names
// a task afterwards, and that the tasks of a second spike, in reused chunk
// indices, get IDs never seen before.
func TestChunksAreGivenBackAfterACancelSpike(t *testing.T) {
	for _, strategy := range []CancelStrategy{LazyCancel, EagerCancel} {
		t.Run(strategy.String(), func(t *testing.T) {
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

			second := spike() // reuses the indices given back
			assert.Equal(t, n, s.Len())
			for _, id := range second {
				require.True(t, s.Reset(id, 2*time.Hour), "a task of the second spike")
			}
			for _, id := range first {
				assert.False(t, s.CancelTask(id), "an ID of the first spike names a task of the second")
			}
		})
	}
}

// TestChunksAreGivenBackAfterAFiringSpike runs every task of a spike on a
// running scheduler, in fake time, and checks that the slab gives its
// chunks back once the runs have ended.
func TestChunksAreGivenBackAfterAFiringSpike(t *testing.T) {
	for _, strategy := range []CancelStrategy{LazyCancel, EagerCancel} {
		t.Run(strategy.String(), func(t *testing.T) {
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
}

// TestTombstonesNeverReachAChunkGivenBack fires lazy tasks whose earlier
// deadlines left tombstones behind, so that the tombstones name free slots,
// and checks that the chunks are given back only once the tombstones are
// gone: the later steps, which would pop them, must find their chunks.
func TestTombstonesNeverReachAChunkGivenBack(t *testing.T) {
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
	s.step(at)                              // every task comes due...
	s.runs.dropDue(s.runs.q.takeAll(false)) // ...and its run ends, freeing its slot
	s.step(at)                              // the chunks go, and the tombstones first
	assert.Zero(t, s.cancel.tombstones())
	assert.Zero(t, s.owner.heap.len())
	assert.Less(t, liveChunks(s), peak, "no chunk given back")
	assert.LessOrEqual(t, liveChunks(s), 2*shardCount)
	s.step(at + int64(2*time.Hour)) // nothing left to pop
}

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
	require.True(t, s.slab.retire(tk)) // freed while the run was ending
	tk.arg = func() {}                 // and handed out again
	tk.releaseAt(g)
	assert.NotNil(t, tk.arg, "the new task's job was dropped")
	tk.releaseAt(tk.generation())
	assert.Nil(t, tk.arg, "the job of the task still in the slot is dropped")
}
