package schedule

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// White-box tests of the deadline heap (heap.go).

// checkHeap verifies the heap order and, when the heap keeps positions,
// that every entry's recorded position is its index.
func checkHeap(t *testing.T, h *deadlineHeap) {
	t.Helper()
	for i, e := range h.items {
		if i > 0 {
			p := (i - 1) / heapArity
			require.LessOrEqual(t, h.items[p].when, e.when, "entry %d is earlier than its parent", i)
		}
		if h.pos != nil {
			j, ok := h.indexOf(e.slot)
			require.True(t, ok, "slot %d has no position", e.slot)
			require.Equal(t, i, j, "index of slot %d", e.slot)
		}
	}
}

func TestHeapMatchesASortedListUnderRandomOperations(t *testing.T) {
	for _, indexed := range []bool{false, true} {
		s := bare(LazyCancel)
		h := &deadlineHeap{}
		if indexed {
			h.keepPositions(minPositions)
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
			case op < 6:
				e, ok := h.popBy(math.MaxInt64)
				require.True(t, ok)
				require.Equal(t, len(want)-1, h.len())
				h.fillHole() // for the raw reads of items below
				require.Equal(t, slices.Min(want), e.when)
				want = removeOne(want, e.when)
				delete(whens, e.slot)
			case op < 7:
				// Take the top out and put it back, at its own deadline or a
				// later one: the push fills the pop's hole.
				top := h.top()
				_, ok := h.popBy(top.when - 1)
				require.False(t, ok, "popped an entry not due by the limit")
				e, ok := h.popBy(top.when)
				require.True(t, ok)
				require.Equal(t, top, e)
				want = removeOne(want, e.when)
				if r.IntN(2) == 0 {
					e.when += r.Int64N(1000)
				}
				h.push(e)
				want = append(want, e.when)
				whens[e.slot] = e.when
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
				i, ok := h.indexOf(slot)
				require.True(t, ok, "slot %d has no position", slot)
				assert.Equal(t, when, h.items[i].when)
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
		h.popBy(math.MaxInt64)
		h.shrink()
	}
	assert.LessOrEqual(t, cap(h.items), 1024)
}

func TestHeapPositionsShrinkWhenItDrains(t *testing.T) {
	var h deadlineHeap
	h.keepPositions(minPositions)
	for i := range 100_000 {
		h.push(entry{when: -int64(i), slot: uint32(i)}) // the highest slots leave first
	}
	for h.len() > 10 {
		h.popBy(math.MaxInt64)
		h.shrink()
	}
	assert.LessOrEqual(t, len(h.pos), minPositions, "the positions kept the spike's slots")
	checkHeap(t, &h)
}

func TestHeapifyRestoresOrderAndIndex(t *testing.T) {
	s := bare(EagerCancel)
	r := rand.New(rand.NewPCG(3, 4))
	h := &s.owner.heap
	for range 5000 {
		slot, _, _ := s.allocSlot()
		h.push(entry{when: r.Int64N(100), slot: slot})
	}
	r.Shuffle(h.len(), func(i, j int) { h.items[i], h.items[j] = h.items[j], h.items[i] })
	h.heapify()
	checkHeap(t, h)
}

// After a rebuild the heap's capacity is fitted to what it grows back to
// before the next one: room for the tombstones lazy cancel allows beside the
// entries kept, so that the pushes that make them never copy the slice.
func TestHeapShrinkAfterRebuildLeavesRoomForTheTombstonesAllowed(t *testing.T) {
	var h deadlineHeap
	h.resize(1 << 20)
	const n = 100_000
	for i := range n {
		h.push(entry{when: int64(i)})
	}
	h.shrinkAfterRebuild((&lazy{}).regrowth(n))
	require.Less(t, cap(h.items), 1<<20, "the heap kept its spike's capacity")
	// Tombstones may make up 1/rebuildShare of the heap before the next
	// rebuild: n/(rebuildShare-1) of them beside the n entries kept.
	assert.GreaterOrEqual(t, cap(h.items), n+n/(rebuildShare-1))
}
