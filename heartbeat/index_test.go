package heartbeat

import (
	"fmt"
	"hash/maphash"
	"math/rand/v2"
	"testing"

	"github.com/go-schedule/schedule"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestIndexMatchesAMapUnderRandomOperations drives the key index and a Go
// map with the same random sets and deletes, over a small key space so
// that probes collide and wrap around the table's end, and tables grow and
// shrink; after each step every key must be found where the map has it.
func TestIndexMatchesAMapUnderRandomOperations(t *testing.T) {
	t.Run("uint64", func(t *testing.T) {
		indexMatchesAMap(t, func(k uint64) uint64 { return k })
	})
	t.Run("string", func(t *testing.T) {
		indexMatchesAMap(t, func(k uint64) string { return fmt.Sprintf("dev-%016x", k) })
	})
}

func indexMatchesAMap[K comparable](t *testing.T, makeKey func(uint64) K) {
	for _, keys := range []int{5, 60, 2000} {
		all := make([]K, keys)
		for i := range all {
			all[i] = makeKey(uint64(i))
		}
		keyOf := func(i uint64) K { return all[i] }
		seed := maphash.MakeSeed()
		r := rand.New(rand.NewPCG(uint64(keys), 1))
		var x index[K, schedule.TaskID]
		want := map[K]schedule.TaskID{}
		h := func(k K) uint64 { return maphash.Comparable(seed, k) }
		for step := range 20 * keys {
			k := keyOf(r.Uint64N(uint64(keys)))
			// Mostly sets while filling, mostly deletes in the second half,
			// so that the table shrinks as well as grows.
			if r.IntN(20*keys) > step {
				id := schedule.TaskID(r.Uint64() | 1)
				x.set(seed, h(k), k, id)
				want[k] = id
			} else {
				_, had := want[k]
				require.Equal(t, had, x.delete(seed, h(k), k), "delete(%v) at step %d", k, step)
				delete(want, k)
			}
			require.Equal(t, len(want), x.n)
			if x.n > 0 {
				require.LessOrEqual(t, 20*x.n, growAbove*len(x.slots), "load above the bound")
			}
			if keys > 100 && step%500 != 0 {
				id, ok := x.get(h(k), k)
				require.Equal(t, want[k], id, "key %v at step %d", k, step)
				_, wok := want[k]
				require.Equal(t, wok, ok, "key %v at step %d", k, step)
				continue
			}
			for i := range uint64(keys) {
				k := keyOf(i)
				id, ok := x.get(h(k), k)
				wid, wok := want[k]
				require.Equal(t, wok, ok, "key %v at step %d", k, step)
				require.Equal(t, wid, id, "key %v at step %d", k, step)
			}
		}
		assert.LessOrEqual(t, len(x.slots), max(minSlots, 5*x.n), "the table kept the size of keys long gone")
	}
}
