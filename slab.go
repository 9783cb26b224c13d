package schedule

import (
	"math/bits"
	"math/rand/v2"
	"sync"
	"sync/atomic"
)

// The slab stores every task of a scheduler in fixed-size chunks, hands out
// their slots, and is the index from TaskID to task: an ID names its slot
// directly, so a lookup is two array indexings and a generation check, with
// no map and no lock on the hot path.
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
// Slots are handed out by shardCount shards, each with a lock of its own and
// the chunks it added: an add takes the first shard it finds unlocked,
// starting from the one that adds on its processor used last, so adds on
// different cores rarely share a lock or a cache line. Requests about a task
// go to the inbox lane of its shard (inbox.go).
//
// Chunks whose slots are all free are trimmed (taken out of the directory), so that a scheduler that
// lived through a spike of tasks does not keep the spike's memory. Only the
// owner goroutine trims chunks (slab.trim), because with lazy cancel a
// tombstone in its heap may still name a freed slot: it rebuilds the heap
// first. The chunk's index is kept for a later chunk, whose slots start at
// the latest generation any slot of the old chunk reached: a slot's
// generations go on counting up across the two chunks, and an ID of the old
// chunk can never name a task of the new one. A caller that loaded the
// directory before the chunk went may still reach the old chunk's memory,
// which stays valid for it; every slot there has had its generation bumped,
// so the generation check turns it away.
const (
	chunkBits = 11
	chunkSize = 1 << chunkBits

	shardCount = 8

	// minDirectory is the capacity of the first directory; a directory
	// doubles when it is full.
	minDirectory = 16
)

// cacheLinePad keeps the fields after it off the cache line of those
// before it: what is kept per shard, here and in the inbox's lanes and the
// counters, is padded apart, so that cores working in different shards do
// not share a cache line.
type cacheLinePad [64]byte

// chunk is a block of slots. vacant counts its slots in its shard's vacant
// list; the shard's mu guards it. The slots are an array of their own, of
// exactly six of the Go heap's 8 KiB pages, and so is an argument column
// (four pages): objects over 32 KiB are allocated as whole pages, while a
// smaller one that holds pointers takes an 8-byte header and is rounded up
// to a size class (1,024 slots, 24 KiB, would take 26.6 KiB, and 1,024
// arguments 18 KiB for 16). With the count beside the slots, every chunk
// would take a seventh page, nearly empty.
// Its argument column, if any, is in the directory only (directory.args).
type chunk struct {
	tasks  *[chunkSize]task
	vacant int
}

func newChunk() *chunk { return &chunk{tasks: new([chunkSize]task)} }

type slab struct {
	// dir holds the chunks. It is replaced when it grows, and its entries
	// change (atomically) when a chunk is trimmed or its index reused,
	// under grow; anyone may load it.
	dir atomic.Pointer[directory]

	// base and key scramble IDs (see above). Set once by init, before the
	// slab is shared; read-only afterwards.
	base uint32
	key  uint32

	// trimming has bit k set while shard k has chunks to trim.
	trimming atomic.Uint32
	_        cacheLinePad

	shards [shardCount]slabShard

	// grow serializes changes to the directory. reuse, guarded by grow,
	// holds the indices of chunks trimmed, with the generation the slots
	// of their next chunk start at.
	grow  sync.Mutex
	reuse []reusable
}

// slabShard hands out the slots of its own chunks. mu guards every field.
//
// vacant holds the shard's freed slots, ready for reuse; the left slots from next
// on, in its newest chunk, were never used, and start at generation gen.
// chunks counts the chunks the shard owns, empty those whose slots are all
// vacant.
type slabShard struct {
	mu         sync.Mutex
	vacant     []uint32
	next, left uint32
	gen        uint32
	chunks     int
	empty      int
	_          cacheLinePad
}

// reusable is the index of a trimmed chunk.
type reusable struct{ c, gen uint32 }

// directory lists the chunks (nil where one was trimmed), their slot
// arrays and the shard that owns each, and their argument columns (job.go;
// nil until a task of the chunk has an argument). tasks[c] is
// chunks[c].tasks, kept
// here too so that finding a task by its slot reads the directory and the
// slot, not the chunk on the way: with many chunks, most of them out of
// the processor's caches, each line read on the way is a miss (at 10^8
// tasks, the chunk's line and the first line of its array, which the
// compiler's nil check reads, were half of a Reset's time).
type directory struct {
	chunks []atomic.Pointer[chunk]
	tasks  []atomic.Pointer[[chunkSize]task]
	args   []atomic.Pointer[[chunkSize]any]
	shards []atomic.Uint32
}

// set makes ch (nil: none) the chunk at index c, owned by shard k, with
// no argument column.
func (dir *directory) set(c uint32, ch *chunk, k uint8) {
	dir.shards[c].Store(uint32(k))
	dir.args[c].Store(nil)
	if ch == nil {
		dir.tasks[c].Store(nil)
		dir.chunks[c].Store(nil)
		return
	}
	dir.chunks[c].Store(ch)
	dir.tasks[c].Store(ch.tasks)
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
	t := sl.find(slot)
	if t == nil {
		panic("schedule: a task in a trimmed chunk")
	}
	return t
}

// find returns the task in slot, or nil if its chunk was trimmed; slot
// must be below the slots the directory holds. The explicit nil check also
// spares the read the compiler's own would make of the array's first line.
func (sl *slab) find(slot uint32) *task {
	tasks := sl.dir.Load().tasks[slot>>chunkBits].Load()
	if tasks == nil {
		return nil
	}
	return &tasks[slot&(chunkSize-1)]
}

// held returns the task in slot, which must have been allocated, the ID it
// has now and its argument cell (argCell). For a holder of the slot (the
// owner, a run) that is the task's ID: the slot's generation cannot change
// under it.
func (sl *slab) held(slot uint32) (*task, TaskID, *any) {
	dir := sl.dir.Load()
	c, i := slot>>chunkBits, slot&(chunkSize-1)
	tasks := dir.tasks[c].Load()
	if tasks == nil {
		panic("schedule: a task in a trimmed chunk")
	}
	t := &tasks[i]
	var cell *any
	if args := dir.args[c].Load(); args != nil {
		cell = &args[i]
	}
	return t, sl.id(slot, t.gen.Load()&^genLocked), cell
}

// argCell returns slot's cell in its chunk's argument column, or nil when
// the chunk has none (so that no task of it has an argument); slot must
// have been allocated.
func (sl *slab) argCell(slot uint32) *any {
	args := sl.dir.Load().args[slot>>chunkBits].Load()
	if args == nil {
		return nil
	}
	return &args[slot&(chunkSize-1)]
}

// newArgCell returns slot's cell in its chunk's argument column, making
// the column if the chunk has none yet; slot must have been allocated, to
// a caller that has not published its ID. A column is made once per chunk
// at most, under grow, so that a directory copied as it grows keeps it.
func (sl *slab) newArgCell(slot uint32) *any {
	if cell := sl.argCell(slot); cell != nil {
		return cell
	}
	sl.grow.Lock()
	defer sl.grow.Unlock()
	c := slot >> chunkBits
	dir := sl.dir.Load()
	args := dir.args[c].Load()
	if args == nil {
		args = new([chunkSize]any)
		dir.args[c].Store(args)
	}
	return &args[slot&(chunkSize-1)]
}

// chunkOf returns the chunk that holds slot, which must have been allocated.
func (sl *slab) chunkOf(slot uint32) *chunk {
	return sl.dir.Load().chunks[slot>>chunkBits].Load()
}

// shardOf returns the shard that owns slot, which must have been allocated.
func (sl *slab) shardOf(slot uint32) uint8 {
	return uint8(sl.dir.Load().shards[slot>>chunkBits].Load())
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
	if c >= uint32(len(dir.tasks)) {
		return nil
	}
	tasks := dir.tasks[c].Load()
	if tasks == nil {
		return nil // trimmed: its slots hold no task
	}
	return &tasks[slot&(chunkSize-1)]
}

// shardHint is the shard an add on this P took last time. Hints live in a
// sync.Pool, which keeps one per P: adds on one core keep to one shard, so
// a single caller finds the same shard (and the same chunks) warm in its
// cache, and callers on different cores keep to different shards. A hint
// the pool drops at a collection is simply drawn again.
type shardHint struct{ k uint32 }

var shardHints = sync.Pool{New: func() any { return &shardHint{k: rand.Uint32() % shardCount} }}

// alloc hands out a vacant slot, whose task has its new generation, and
// returns it with the slot's shard. It reports false when every slot is in
// use, which takes 2^32 tasks.
func (sl *slab) alloc() (slot uint32, t *task, k uint8, ok bool) {
	h := shardHints.Get().(*shardHint)
	defer shardHints.Put(h)
	return sl.allocHinted(h)
}

// allocID is alloc that returns the new task's ID too, and, if withArg,
// the slot's argument cell (newArgCell).
func (sl *slab) allocID(withArg bool) (id TaskID, slot uint32, t *task, cell *any, k uint8, ok bool) {
	slot, t, k, ok = sl.alloc()
	if !ok {
		return 0, 0, nil, nil, 0, false
	}
	if withArg {
		cell = sl.newArgCell(slot)
	}
	return sl.id(slot, t.gen.Load()), slot, t, cell, k, true
}

// allocHinted is alloc starting from the shard hint names, which it
// updates to the shard it took the slot from.
func (sl *slab) allocHinted(h *shardHint) (slot uint32, t *task, k uint8, ok bool) {
	sh := sl.lockAnyShard(h)
	if len(sh.vacant) == 0 && sh.left == 0 {
		sh = sl.switchToFree(sh, h)
	}
	slot, t, ok = sl.allocFrom(sh, uint8(h.k))
	sh.mu.Unlock()
	return slot, t, uint8(h.k), ok
}

// lockAnyShard locks and returns the first shard found unlocked, trying
// them from hint on, and leaves its number in hint; if all are locked it
// waits for the hinted one.
func (sl *slab) lockAnyShard(hint *shardHint) *slabShard {
	for i := range uint32(shardCount) {
		k := (hint.k + i) % shardCount
		if sh := &sl.shards[k]; sh.mu.TryLock() {
			hint.k = k
			return sh
		}
	}
	sh := &sl.shards[hint.k]
	sh.mu.Lock()
	return sh
}

// switchToFree is for a shard sh, locked, that would have to add a chunk
// to hand out a slot: if another shard has vacant slots, it unlocks sh and
// returns that one, locked, and leaves its number in hint; otherwise it
// returns sh. Slots go back to the shard they came from, so a caller that
// keeps to one shard while the slots it frees belong to others would
// otherwise add chunks while the others' vacant slots pile up; the next adds
// on this processor keep to the shard found.
func (sl *slab) switchToFree(sh *slabShard, hint *shardHint) *slabShard {
	for i := uint32(1); i < shardCount; i++ {
		k := (hint.k + i) % shardCount
		other := &sl.shards[k]
		if !other.mu.TryLock() {
			continue
		}
		if len(other.vacant) > 0 {
			sh.mu.Unlock()
			hint.k = k
			return other
		}
		other.mu.Unlock()
	}
	return sh
}

// allocFrom hands out a slot of shard sh, number k, adding a chunk when it
// has none left. sh.mu must be held.
func (sl *slab) allocFrom(sh *slabShard, k uint8) (uint32, *task, bool) {
	if n := len(sh.vacant); n > 0 {
		slot := sh.vacant[n-1]
		sh.vacant = sh.vacant[:n-1]
		ch := sl.chunkOf(slot)
		if ch.vacant == chunkSize {
			sh.empty--
		}
		ch.vacant--
		return slot, &ch.tasks[slot&(chunkSize-1)], true
	}
	if sh.left == 0 {
		c, gen, ok := sl.addChunk(k)
		if !ok {
			return 0, nil, false
		}
		sh.next, sh.left, sh.gen = c<<chunkBits, chunkSize, gen
		sh.chunks++
	}
	slot := sh.next
	sh.left--
	if sh.left > 0 {
		sh.next++ // never past the chunk, so never wrapping to 0
	}
	t := sl.at(slot)
	t.gen.Store(sh.gen)
	return slot, t, true
}

// addChunk adds a chunk for shard k, at the index of a trimmed chunk if
// there is one, and returns its index and the generation its slots start
// at; false when the slab holds the most chunks slot numbers can name.
func (sl *slab) addChunk(k uint8) (c, gen uint32, ok bool) {
	sl.grow.Lock()
	defer sl.grow.Unlock()
	old := sl.dir.Load()
	if n := len(sl.reuse); n > 0 {
		r := sl.reuse[n-1]
		sl.reuse = sl.reuse[:n-1]
		old.set(r.c, newChunk(), k)
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
		dir.tasks = dir.tasks[:c+1]
		dir.args = dir.args[:c+1]
		dir.shards = dir.shards[:c+1]
	} else {
		n := max(2*c, minDirectory)
		grown := directory{
			chunks: make([]atomic.Pointer[chunk], c+1, n),
			tasks:  make([]atomic.Pointer[[chunkSize]task], c+1, n),
			args:   make([]atomic.Pointer[[chunkSize]any], c+1, n),
			shards: make([]atomic.Uint32, c+1, n),
		}
		for i := range c {
			grown.chunks[i].Store(dir.chunks[i].Load())
			grown.tasks[i].Store(dir.tasks[i].Load())
			grown.args[i].Store(dir.args[i].Load())
			grown.shards[i].Store(dir.shards[i].Load())
		}
		dir = grown
	}
	dir.set(c, newChunk(), k)
	sl.dir.Store(&dir)
	return c, sl.base, true
}

// free ends the lives of the tasks in slots, whose holders have all let
// go of them, and gives the slots that are free for reuse back (vacate).
// It may reorder slots, and reports what vacate reports.
func (sl *slab) free(slots []uint32) (trim bool) {
	reusable := slots[:0]
	for _, slot := range slots {
		if sl.at(slot).free(sl.base, sl.argCell(slot)) {
			reusable = append(reusable, slot)
		}
	}
	return sl.vacate(reusable)
}

// vacate returns slots, whose tasks' lives have ended (task.free) and
// which are free for reuse, to their shards, under one lock per shard. It
// may reorder slots. It reports whether a shard has come to hold enough
// chunks with every slot free to trim them: the owner should then call
// trim.
func (sl *slab) vacate(slots []uint32) (trim bool) {
	for len(slots) > 0 {
		// Move the slots of the first one's shard to the front, then hand
		// them back together.
		k := sl.shardOf(slots[0])
		n := 0
		for i, slot := range slots {
			if sl.shardOf(slot) == k {
				slots[n], slots[i] = slots[i], slots[n]
				n++
			}
		}
		sh := &sl.shards[k]
		sh.mu.Lock()
		for _, slot := range slots[:n] {
			ch := sl.chunkOf(slot)
			ch.vacant++
			if ch.vacant == chunkSize {
				sh.empty++
			}
		}
		sh.vacant = append(sh.vacant, slots[:n]...)
		if sh.trimmable() && sl.trimming.Or(1<<k)&(1<<k) == 0 {
			trim = true
		}
		sh.mu.Unlock()
		slots = slots[n:]
	}
	return trim
}

// trimmable reports whether the shard holds enough chunks with every slot
// free to trim them: at least minTrim, and at least 1/trimShare of
// its chunks. Once a spike's tasks are gone, the shard keeps one such chunk
// and the one it is handing out, and the pass over the vacant list is paid
// for by the chunks it trims. sh.mu must be held.
func (sh *slabShard) trimmable() bool {
	return sh.empty >= minTrim && trimShare*sh.empty >= sh.chunks
}

// minTrim is the fewest empty chunks a shard trims: it keeps one.
const minTrim = 2

// trimShare: a shard trims chunks once 1/trimShare of them are
// empty, so that the pass over its vacant list that finds them is paid for
// by the memory it returns.
const trimShare = 4

// shrinkFreeList: a vacant list whose capacity is over shrinkFreeList
// entries, and four times its length, is copied into one twice its length
// when the shard is trimmed, so that a spike's vacant list does not stay.
const shrinkFreeList = 4096

// emptySlots returns the number of slots in the chunks whose slots are
// all free.
func (sl *slab) emptySlots() int {
	n := 0
	for k := range sl.shards {
		sh := &sl.shards[k]
		sh.mu.Lock()
		n += sh.empty
		sh.mu.Unlock()
	}
	return n * chunkSize
}

// trimAsked reports whether a shard has asked the owner to trim it.
func (sl *slab) trimAsked() bool { return sl.trimming.Load() != 0 }

// trim takes out, in every shard that asked for it, the chunks whose
// slots are all free but one, kept for the next adds, and shrinks a vacant
// list that has emptied out. Only the owner calls it, and with lazy
// cancel only on a heap without tombstones: a tombstone may name a free
// slot, and must never reach a trimmed chunk (canceller.beforeTrim).
func (sl *slab) trim() {
	for want := sl.trimming.Load(); want != 0; want &= want - 1 {
		k := bits.TrailingZeros32(want)
		sl.trimming.And(^uint32(1 << k))
		sh := &sl.shards[k]
		sh.mu.Lock()
		if sh.trimmable() {
			sl.trimShard(sh)
		}
		sh.mu.Unlock()
	}
}

// trimShard trims one shard (see trim). sh.mu must be held.
func (sl *slab) trimShard(sh *slabShard) {
	const (
		reserve = -chunkSize // marks the chunk kept
		leaving = -1         // marks the chunks trimmed
	)
	var gone []uint32
	kept := (*chunk)(nil)
	for _, slot := range sh.vacant {
		ch := sl.chunkOf(slot)
		if ch.vacant != chunkSize {
			continue
		}
		if kept == nil {
			kept, ch.vacant = ch, reserve
			continue
		}
		ch.vacant = leaving
		gone = append(gone, slot>>chunkBits)
	}
	n := 0
	for _, slot := range sh.vacant {
		if sl.chunkOf(slot).vacant != leaving {
			sh.vacant[n] = slot
			n++
		}
	}
	sh.vacant = sh.vacant[:n]
	if cap(sh.vacant) > shrinkFreeList && n < cap(sh.vacant)/4 {
		sh.vacant = append(make([]uint32, 0, 2*n), sh.vacant...)
	}
	if kept != nil {
		kept.vacant = chunkSize
	}
	for _, c := range gone {
		sl.trimChunk(c)
	}
	sh.chunks -= len(gone)
	sh.empty -= len(gone)
}

// trimChunk takes chunk c, whose slots are all free, from the directory and
// keeps its index for a later chunk. The shard that owns c must hold its mu
// and have taken c's slots out of its vacant list.
func (sl *slab) trimChunk(c uint32) {
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
	dir := sl.dir.Load()
	dir.set(c, nil, uint8(dir.shards[c].Load()))
	sl.reuse = append(sl.reuse, reusable{c, gen})
}
