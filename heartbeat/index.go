package heartbeat

import "hash/maphash"

// index is a part of one shard's key index: what the Monitor knows of each
// key it holds, a value V whose zero value marks an empty slot (V holds a
// TaskID, which is never 0). It is an open-addressing hash table with
// linear probing, and deletion by backward shift, so it never holds
// tombstones. The shard's mu guards it.
//
// Why not a Go map: a map's slot for a uint64 key and a TaskID is 16 bytes
// plus a control byte, and since a map doubles, and uniformly hashed keys
// fill its tables at the same pace, its load sits anywhere between 0.44 and
// 0.875 depending on the key count: at a million keys in 256 shards it is
// 0.48, 38 bytes a key. This table grows by half and keeps its load between
// 0.57 and 0.85 (16 bytes a slot: 19–28 bytes a key). At 0.85, finding a
// watched key takes under four probes on average, in one or two cache lines.
//
// Invariants:
//   - An empty slot holds the zero V, which no watch is. Every key between a
//     key's home slot and the slot it sits in (cyclically) is occupied, so
//     a probe from the home slot reaches it before an empty slot.
//   - n is the number of occupied slots, and n ≤ 0.85·len(slots).
type index[K, V comparable] struct {
	slots []slot[K, V]
	n     int
}

type slot[K, V comparable] struct {
	key K
	val V
}

// Load factor bounds, in twentieths: grow past 17/20 (by half, to 17/30),
// and shrink below 1/5, to 3/5, so that a table does not keep the size of
// a spike of keys that is gone.
const (
	minSlots    = 8
	growAbove   = 17
	shrinkUnder = 4
)

// home returns the slot a key with hash h probes first. It takes the high
// half of h: the shard was chosen by its low bits.
func (x *index[K, V]) home(h uint64) int {
	return int((h >> 32) * uint64(len(x.slots)) >> 32)
}

// find returns the slot that holds key, or the empty slot where a probe
// for it ends.
func (x *index[K, V]) find(h uint64, key K) (i int, ok bool) {
	i = x.home(h)
	for {
		s := &x.slots[i]
		var zero V
		if s.val == zero {
			return i, false
		}
		if s.key == key {
			return i, true
		}
		if i++; i == len(x.slots) {
			i = 0
		}
	}
}

// get returns what the index holds for key.
func (x *index[K, V]) get(h uint64, key K) (V, bool) {
	if x.n == 0 {
		var zero V
		return zero, false
	}
	i, ok := x.find(h, key)
	return x.slots[i].val, ok
}

// set records v, which is not the zero V, for key.
func (x *index[K, V]) set(seed maphash.Seed, h uint64, key K, v V) {
	if x.n > 0 {
		if i, ok := x.find(h, key); ok {
			x.slots[i].val = v
			return
		}
	}
	if 20*(x.n+1) > growAbove*len(x.slots) {
		x.resize(seed, max(minSlots, len(x.slots)*3/2))
	}
	i, _ := x.find(h, key)
	x.slots[i] = slot[K, V]{key, v}
	x.n++
}

// delete removes key, and reports whether it was there.
func (x *index[K, V]) delete(seed maphash.Seed, h uint64, key K) bool {
	if x.n == 0 {
		return false
	}
	i, ok := x.find(h, key)
	if !ok {
		return false
	}
	// Backward shift: walk the run of occupied slots after the hole and
	// move into the hole every key whose probe would otherwise cross it.
	var zero V
	for j := i; ; {
		if j++; j == len(x.slots) {
			j = 0
		}
		if x.slots[j].val == zero {
			break
		}
		k := x.home(maphash.Comparable(seed, x.slots[j].key))
		// The key at j may move to i unless its home lies cyclically in
		// (i, j].
		if (i < j && (k <= i || k > j)) || (j < i && k <= i && k > j) {
			x.slots[i] = x.slots[j]
			i = j
		}
	}
	x.slots[i] = slot[K, V]{}
	x.n--
	if len(x.slots) > minSlots && 20*x.n < shrinkUnder*len(x.slots) {
		x.resize(seed, max(minSlots, x.n*5/3))
	}
	return true
}

// each calls f with the value of every key the index holds.
func (x *index[K, V]) each(f func(V)) {
	var zero V
	for _, s := range x.slots {
		if s.val != zero {
			f(s.val)
		}
	}
}

// resize moves every key into a table of size slots.
func (x *index[K, V]) resize(seed maphash.Seed, size int) {
	old := x.slots
	x.slots = make([]slot[K, V], size)
	var zero V
	for _, s := range old {
		if s.val != zero {
			i, _ := x.find(maphash.Comparable(seed, s.key), s.key)
			x.slots[i] = s
		}
	}
}
