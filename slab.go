package schedule

import (
	"sync"
	"sync/atomic"
)

// The slab stores every task of a scheduler in fixed-size chunks and is the
// index from TaskID to task: an ID names its slot directly, so a lookup is
// two array indexings and a generation check, with no map and no lock on the
// hot path.
//
// Chunks never move and are never freed while the scheduler lives, so a
// *task stays valid forever; what changes is which task a slot holds. A slot
// is reused only after its generation was bumped, and callers that act on a
// task by ID hold the slot's stripe lock while they check the generation and
// change the state word. The generation is bumped only under that same lock,
// so a caller can never change the word of a later task that reuses the slot.
//
// IDs are scrambled per slab, so that an ID of one Scheduler does not name a
// task of another. Every slot's generations start at the slab's random base
// (never 0) and count up, skipping 0; a slot whose next generation would
// come back round to the base is retired for good, so no (slot, generation)
// pair, and hence no ID, is ever handed out twice. The slot is stored XORed
// with a random key, so the low half of a foreign ID decodes to a slot of
// this slab with probability about used/2^32, and its generation then
// matches with probability 2^-32.
//
// There are 256 stripe locks (16 KiB): callers on different cores seldom
// want the same one at once. With 64, goroutines re-arming their own tasks
// on two cores met on a stripe often enough to double the CPU per Reset at
// 32 goroutines (BenchmarkParallelReset).
const (
	chunkBits   = 10
	chunkSize   = 1 << chunkBits
	stripeCount = 256
)

type chunk [chunkSize]task

// stripe is a lock padded to its own cache line so that callers on
// different cores do not contend on a shared line.
type stripe struct {
	sync.Mutex
	_ [64 - 8]byte
}

type slab struct {
	// dir holds the chunks. It is replaced (never modified in place) when it
	// grows, under grow; anyone may load it.
	dir atomic.Pointer[directory]

	// base and key scramble IDs (see above). Set once by init, before the
	// slab is shared; read-only afterwards.
	base uint32
	key  uint32
	_    cacheLinePad

	// grow serializes the lanes adding chunks.
	grow sync.Mutex
	_    cacheLinePad

	stripes [stripeCount]stripe
}

// directory lists the chunks, and the inbox lane whose allocator hands out
// each chunk's slots (inbox.go). A lane owns the chunks it added, so the
// slots it hands out never need another lane's lock.
type directory struct {
	chunks []*chunk
	lanes  []uint8
}

// init draws the slab's ID scrambling. r must return uniformly random
// values; base is never 0.
func (sl *slab) init(r func() uint64) {
	v := r()
	sl.key = uint32(v)
	sl.base = uint32(v >> 32)
	if sl.base == 0 {
		sl.base = 1
	}
}

// id returns the ID of the task in slot at generation gen.
func (sl *slab) id(slot, gen uint32) TaskID {
	return TaskID(uint64(gen)<<32 | uint64(slot^sl.key))
}

// slotOf returns the slot an ID names.
func (sl *slab) slotOf(id TaskID) uint32 { return uint32(id) ^ sl.key }

// at returns the task in slot, which must have been allocated.
func (sl *slab) at(slot uint32) *task {
	return &sl.dir.Load().chunks[slot>>chunkBits][slot&(chunkSize-1)]
}

// laneOf returns the lane whose allocator owns slot, which must have been
// allocated.
func (sl *slab) laneOf(slot uint32) uint8 {
	return sl.dir.Load().lanes[slot>>chunkBits]
}

// lookup returns the task that id names, or nil when id cannot name a task
// of this slab. The caller must still check the generation under the
// slot's stripe lock.
func (sl *slab) lookup(id TaskID) *task {
	if id.gen() == 0 {
		return nil
	}
	dir := sl.dir.Load()
	if dir == nil {
		return nil
	}
	slot := sl.slotOf(id)
	c := slot >> chunkBits
	if c >= uint32(len(dir.chunks)) {
		return nil
	}
	return &dir.chunks[c][slot&(chunkSize-1)]
}

func (sl *slab) stripe(slot uint32) *sync.Mutex {
	return &sl.stripes[slot%stripeCount].Mutex
}

// alloc hands out a slot from the allocator of lane l, number k, adding a
// chunk for it when it has none left. l.mu must be held. It reports false
// when every slot is in use, which needs 2^32 tasks.
func (sl *slab) alloc(l *lane, k uint8) (uint32, *task, bool) {
	if n := len(l.free); n > 0 {
		slot := l.free[n-1]
		l.free = l.free[:n-1]
		return slot, sl.at(slot), true
	}
	if l.left == 0 {
		c, ok := sl.addChunk(k)
		if !ok {
			return 0, nil, false
		}
		l.next, l.left = c<<chunkBits, chunkSize
	}
	slot := l.next
	l.left--
	if l.left > 0 {
		l.next++ // never past the chunk, so never wrapping to 0
	}
	t := sl.at(slot)
	t.gen.Store(sl.base)
	return slot, t, true
}

// addChunk adds a chunk for lane k and returns its index; false when the
// slab holds the most chunks slot numbers can name.
//
// Appending may write into the spare capacity of the arrays that readers
// are using; that is safe because readers only index below the lengths of
// the directory they loaded, and the new one is published after the write.
func (sl *slab) addChunk(k uint8) (uint32, bool) {
	sl.grow.Lock()
	defer sl.grow.Unlock()
	var dir directory
	if old := sl.dir.Load(); old != nil {
		dir = *old
	}
	c := len(dir.chunks)
	if c == 1<<(32-chunkBits) {
		return 0, false
	}
	dir.chunks = append(dir.chunks, new(chunk))
	dir.lanes = append(dir.lanes, k)
	sl.dir.Store(&dir)
	return uint32(c), true
}

// retire ends the life of the task in slot: it drops the job so that the
// garbage collector can reclaim it and bumps the generation so that the
// task's ID no longer names the slot. It reports whether the slot may be
// reused: a slot whose generations have gone all the way round is never
// reused (its generation is left at 0, which no ID carries), so no TaskID is
// ever handed out twice.
func (sl *slab) retire(slot uint32, t *task) bool {
	l := sl.stripe(slot)
	l.Lock()
	t.release()
	t.interval = 0
	g := t.gen.Load() + 1
	if g == 0 {
		g = 1
	}
	if g == sl.base {
		g = 0
	}
	t.gen.Store(g)
	l.Unlock()
	return g != 0
}
