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
// A slot is reused only after its generation was bumped, and callers that
// act on a task by ID hold the task's lock while they check the generation
// and change the state word. The generation is bumped only under that same
// lock, so a caller can never change the word of a later task that reuses
// the slot (the lock is the top bit of the generation word; see genLocked).
//
// IDs are scrambled per slab, so that an ID of one Scheduler does not name a
// task of another. Generations have 31 bits. Every slot's generations start
// at the slab's random base (never 0) and count up, skipping 0; a slot whose
// next generation would come back round to the base is retired for good, so
// no (slot, generation) pair, and hence no ID, is ever handed out twice. The
// slot is stored XORed with a random key, so the low half of a foreign ID
// decodes to a slot of this slab with probability about used/2^32, and its
// generation then matches with probability 2^-31.
//
// Chunks whose slots are all free are given back, so that a scheduler that
// lived through a spike of tasks does not keep the spike's memory (see
// lane.trim in inbox.go). The chunk's index is kept for a later chunk, whose
// slots start at the latest generation any slot of the old chunk reached: a
// slot's generations go on counting up across the two chunks, and an ID of
// the old chunk can never name a task of the new one. A caller that loaded
// the directory before the chunk went may still reach the old chunk's
// memory, which stays valid for it; every slot there has had its generation
// bumped, so the generation check turns it away.
const (
	chunkBits = 10
	chunkSize = 1 << chunkBits
)

// chunk is a block of slots. free counts its slots in its lane's free
// list; the lane's mu guards it. The slots are an array of their own,
// exactly five pages of 40-byte tasks: with the count beside them, every
// chunk would take a sixth page, nearly empty.
type chunk struct {
	tasks *[chunkSize]task
	free  int
}

func newChunk() *chunk { return &chunk{tasks: new([chunkSize]task)} }

type slab struct {
	// dir holds the chunks. It is replaced when it grows, and its entries
	// change (atomically) when a chunk is given back or its index reused,
	// under grow; anyone may load it.
	dir atomic.Pointer[directory]

	// base and key scramble IDs (see above). Set once by init, before the
	// slab is shared; read-only afterwards.
	base uint32
	key  uint32
	_    cacheLinePad

	// grow serializes changes to the directory. reuse, guarded by grow,
	// holds the indices of chunks given back, with the generation the slots
	// of their next chunk start at.
	grow  sync.Mutex
	reuse []reusable
}

// reusable is the index of a chunk given back.
type reusable struct{ c, gen uint32 }

// directory lists the chunks (nil where one was given back), and the inbox
// lane whose allocator hands out each chunk's slots (inbox.go). A lane owns
// the chunks it added, so the slots it hands out never need another lane's
// lock.
type directory struct {
	chunks []atomic.Pointer[chunk]
	lanes  []atomic.Uint32
}

// init draws the slab's ID scrambling. r must return uniformly random
// values; base is a generation: never 0, and below genLocked.
func (sl *slab) init(r func() uint64) {
	v := r()
	sl.key = uint32(v)
	sl.base = uint32(v >> 33)
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
	return &sl.chunkOf(slot).tasks[slot&(chunkSize-1)]
}

// chunkOf returns the chunk that holds slot, which must have been allocated.
func (sl *slab) chunkOf(slot uint32) *chunk {
	return sl.dir.Load().chunks[slot>>chunkBits].Load()
}

// laneOf returns the lane whose allocator owns slot, which must have been
// allocated.
func (sl *slab) laneOf(slot uint32) uint8 {
	return uint8(sl.dir.Load().lanes[slot>>chunkBits].Load())
}

// lookup returns the task that id names, or nil when id cannot name a task
// of this slab. The caller must still check the generation, by taking the
// task's lock.
func (sl *slab) lookup(id TaskID) *task {
	if g := id.gen(); g == 0 || g&genLocked != 0 {
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
	ch := dir.chunks[c].Load()
	if ch == nil {
		return nil // given back: its slots hold no task
	}
	return &ch.tasks[slot&(chunkSize-1)]
}

// alloc hands out a slot from the allocator of lane l, number k, adding a
// chunk for it when it has none left. l.mu must be held. It reports false
// when every slot is in use, which needs 2^32 tasks.
func (sl *slab) alloc(l *lane, k uint8) (uint32, *task, bool) {
	if n := len(l.free); n > 0 {
		slot := l.free[n-1]
		l.free = l.free[:n-1]
		ch := sl.chunkOf(slot)
		if ch.free == chunkSize {
			l.empty--
		}
		ch.free--
		return slot, &ch.tasks[slot&(chunkSize-1)], true
	}
	if l.left == 0 {
		c, gen, ok := sl.addChunk(k)
		if !ok {
			return 0, nil, false
		}
		l.next, l.left, l.gen = c<<chunkBits, chunkSize, gen
		l.chunks++
	}
	slot := l.next
	l.left--
	if l.left > 0 {
		l.next++ // never past the chunk, so never wrapping to 0
	}
	t := sl.at(slot)
	t.gen.Store(l.gen)
	return slot, t, true
}

// addChunk adds a chunk for lane k, at the index of a chunk given back if
// there is one, and returns its index and the generation its slots start
// at; false when the slab holds the most chunks slot numbers can name.
func (sl *slab) addChunk(k uint8) (c, gen uint32, ok bool) {
	sl.grow.Lock()
	defer sl.grow.Unlock()
	old := sl.dir.Load()
	if n := len(sl.reuse); n > 0 {
		r := sl.reuse[n-1]
		sl.reuse = sl.reuse[:n-1]
		old.lanes[r.c].Store(uint32(k))
		old.chunks[r.c].Store(newChunk())
		return r.c, r.gen, true
	}
	var dir directory
	if old != nil {
		dir = *old
	}
	c = uint32(len(dir.chunks))
	if c == 1<<(32-chunkBits) {
		return 0, 0, false
	}
	if c < uint32(cap(dir.chunks)) {
		// Readers of the old directory never index at c or beyond, so
		// the spare capacity is free to fill before the longer directory
		// is published.
		dir.chunks = dir.chunks[:c+1]
		dir.lanes = dir.lanes[:c+1]
	} else {
		chunks := make([]atomic.Pointer[chunk], c+1, max(2*c, 16))
		lanes := make([]atomic.Uint32, c+1, max(2*c, 16))
		for i := range c {
			chunks[i].Store(dir.chunks[i].Load())
			lanes[i].Store(dir.lanes[i].Load())
		}
		dir.chunks, dir.lanes = chunks, lanes
	}
	dir.lanes[c].Store(uint32(k))
	dir.chunks[c].Store(newChunk())
	sl.dir.Store(&dir)
	return c, sl.base, true
}

// giveBack drops chunk c, whose slots are all free, from the directory and
// keeps its index for a later chunk. The lane that owns c must hold its mu
// and have taken c's slots out of its free list.
func (sl *slab) giveBack(c uint32) {
	ch := sl.dir.Load().chunks[c].Load()
	// The next chunk's slots start at the latest generation reached here:
	// counted from base, the largest (every slot is free, so none is 0 and
	// none is base).
	gen := ch.tasks[0].generation()
	for i := range ch.tasks {
		if g := ch.tasks[i].generation(); g-sl.base > gen-sl.base {
			gen = g
		}
	}
	sl.grow.Lock()
	defer sl.grow.Unlock()
	sl.dir.Load().chunks[c].Store(nil)
	sl.reuse = append(sl.reuse, reusable{c, gen})
}

// retire ends the life of the task in slot: it drops the job so that the
// garbage collector can reclaim it and bumps the generation so that the
// task's ID no longer names the slot. It reports whether the slot may be
// reused: a slot whose generations have gone all the way round is never
// reused (its generation is left at 0, which no ID carries), so no TaskID is
// ever handed out twice.
func (sl *slab) retire(t *task) bool {
	g := t.lockCurrent()
	t.release()
	if g++; g == genLocked {
		g = 1
	}
	if g == sl.base {
		g = 0
	}
	t.unlock(g)
	return g != 0
}
