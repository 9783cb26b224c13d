package main

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"runtime"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// floorSizes are the record counts BenchmarkResetFloor runs at.
var floorSizes = flag.String("floor-sizes", "1e6", "record counts BenchmarkResetFloor runs at, comma-separated")

// Records of the sizes a task could take: 40 bytes as the slab's slot
// (task.go: state word, generation, tag, job func, job argument), 16 as a
// heap entry or a minimal slot (a state word and a generation). Only the
// first word is changed; the rest is there to space the records as the
// slab spaces its slots. They hold no pointers, so that the collector does
// not scan them: this measures memory access, not marking.
type (
	rec40 struct {
		word uint64
		gen  uint32
		_    uint32    // tag
		_    [3]uint64 // fn, arg
	}
	rec16 [2]uint64 // the state word, then the generation and the tag
	// rec24 is a slot without pointers: the state word, the generation,
	// the tag, and the job and its argument as indexes into tables.
	rec24 struct {
		word uint64
		gen  uint32
		_    [3]uint32 // tag, job, argument
	}
)

// floorChunk is the slab's chunk (slab.go): a header, allocated on its own,
// that points at an array of 1,024 slots.
type floorChunk struct {
	tasks *[1024]rec40
	_     int // vacant
}

// rmw is one read-modify-write of a record's word: a load and a
// compare-and-swap, or, with plain, a load and a store.
func rmw(w *uint64, plain bool) {
	if plain {
		*w++
		return
	}
	v := atomic.LoadUint64(w)
	atomic.CompareAndSwapUint64(w, v, v+1)
}

// cpuLoop runs b.Loop's iterations through op and reports, beside the wall
// time, the process's CPU time per operation (cpu-ns/op): on a machine
// shared with other work the wall time counts the time other processes had
// the core, the CPU time does not. Nothing else runs in the process
// meanwhile (the loop allocates nothing, so no collection starts).
func cpuLoop(b *testing.B, op func(j int)) {
	b.ResetTimer()
	c0 := cpuTime()
	j := 0
	for ; b.Loop(); j++ {
		op(j)
	}
	d := cpuTime() - c0
	b.StopTimer()
	b.ReportMetric(float64(d.Nanoseconds())/float64(j), "cpu-ns/op")
}

// BenchmarkResetFloor times what a Reset of a random pending task must do
// at least, with n records held: find the record of a random key and
// change one 8-byte word in it. The keys are drawn as the curve's Reset
// phase draws them (rand.IntN(n) from a PCG), one operation at a time.
// Layouts:
//
//   - flat40, flat24, flat16: the record alone, in one array of n, at the key's
//     index: the floor of any design that keeps per-task state addressed
//     by a random key.
//   - handle+flat40, handle+flat16: first read the caller's handle (an
//     8-byte ID in a slice of n, as the curve's callers keep their
//     TaskIDs), then the record it names: the floor of the curve's Reset.
//   - handle+slab40: the handle, then the slab's own path: the chunk
//     directory's entry, the chunk's header, its array of slots, the slot.
//   - handle+dir40: the same with the array pointer kept in the directory
//     itself: no header to load, and no load of the array's first byte;
//     handle+dir24 the same with 24-byte slots without pointers.
//   - flat40-huge, handle+flat40-huge: flat40 in memory mapped with
//     MADV_HUGEPAGE (2 MiB pages where the kernel grants them), outside the
//     Go heap; huge-% says how much of it the kernel backed with huge pages.
//
// Ops: cas, a load and a compare-and-swap of the word (a locked
// instruction, as any Reset that callers on several cores may race needs);
// plain, a load and a store (flat40 only: the floor of a design with a
// single writer, which needs no locked instruction); reset, Reset's whole
// sequence: the handle, the record's address, the clock, then resetOp.
//
//	go test ./cmd/curve -run '^$' -bench ResetFloor -benchtime 10000000x -floor-sizes 1e6,1e8
func BenchmarkResetFloor(b *testing.B) {
	for s := range strings.SplitSeq(*floorSizes, ",") {
		n, err := parseSize(s)
		if err != nil {
			b.Fatal(err)
		}
		for _, c := range floorCases {
			b.Run(fmt.Sprintf("n=%s/%s", sizeName(n), c.name), func(b *testing.B) {
				c.run(b, n)
				runtime.GC()
				debug.FreeOSMemory()
			})
		}
	}
}

type floorCase struct {
	name string
	run  func(b *testing.B, n int)
}

var floorCases = []floorCase{
	{"flat40/cas", func(b *testing.B, n int) { flat(b, make([]rec40, n), nil, false) }},
	{"flat40/plain", func(b *testing.B, n int) { flat(b, make([]rec40, n), nil, true) }},
	{"flat24/cas", func(b *testing.B, n int) { flat(b, make([]rec24, n), nil, false) }},
	{"flat16/cas", func(b *testing.B, n int) { flat(b, make([]rec16, n), nil, false) }},
	{"handle+flat40/cas", func(b *testing.B, n int) { flat(b, make([]rec40, n), handles(n), false) }},
	{"handle+flat16/cas", func(b *testing.B, n int) { flat(b, make([]rec16, n), handles(n), false) }},
	{"handle+slab40/cas", slab40},
	{"handle+flat40/reset", resetFlat40},
	{"handle+slab40/reset", func(b *testing.B, n int) { resetSlab40(b, n, false) }},
	{"handle+slab40/reset-clock-first", func(b *testing.B, n int) { resetSlab40(b, n, true) }},
	{"handle+dir40/reset", resetDir40},
	{"handle+dir24/reset", resetDir24},
	{"flat40-huge/cas", func(b *testing.B, n int) { hugeFlat(b, n, nil) }},
	{"handle+flat40-huge/cas", func(b *testing.B, n int) { hugeFlat(b, n, handles(n)) }},
}

// handles returns the caller's IDs: handle i names record i.
func handles(n int) []uint64 {
	h := make([]uint64, n)
	for i := range h {
		h[i] = uint64(i)
	}
	return h
}

// word returns a record's first word, whatever its size.
func word[R rec40 | rec24 | rec16](r *R) *uint64 { return (*uint64)(unsafe.Pointer(r)) }

func flat[R rec40 | rec24 | rec16](b *testing.B, recs []R, hs []uint64, plain bool) {
	for i := range recs {
		*word(&recs[i]) = uint64(i) // touch every page before timing
	}
	n := len(recs)
	rng := rand.New(rand.NewPCG(1, uint64(n)))
	if hs == nil {
		cpuLoop(b, func(int) { rmw(word(&recs[rng.IntN(n)]), plain) })
	} else {
		cpuLoop(b, func(int) { rmw(word(&recs[hs[rng.IntN(n)]]), plain) })
	}
	runtime.KeepAlive(recs)
}

// newSlab40 lays n records out as the slab does, every page touched.
func newSlab40(n int) []*floorChunk {
	dir := make([]*floorChunk, (n+1023)/1024)
	for i := range dir {
		dir[i] = &floorChunk{tasks: new([1024]rec40)}
		for j := range dir[i].tasks {
			dir[i].tasks[j] = rec40{word: uint64(j), gen: 1}
		}
	}
	return dir
}

func slab40(b *testing.B, n int) {
	dir := newSlab40(n)
	hs := handles(n)
	rng := rand.New(rand.NewPCG(1, uint64(n)))
	cpuLoop(b, func(int) {
		slot := hs[rng.IntN(n)]
		rmw(&dir[slot>>10].tasks[slot&1023].word, false)
	})
	runtime.KeepAlive(dir)
}

// epoch is the clock a modelled Reset reads, as the scheduler's clock reads
// time.Since(epoch) to turn a delay into a deadline.
var epoch = time.Now()

// resetOp is what Reset does to a task's slot once it has it (task.go's
// moveTo): take the task's lock, a compare-and-swap on its generation;
// load the state word and compare-and-swap it; store the generation back.
func resetOp(r *rec40, when int64) { resetWords(&r.word, &r.gen, when) }

func resetWords(word *uint64, gen *uint32, when int64) {
	g := atomic.LoadUint32(gen)
	if !atomic.CompareAndSwapUint32(gen, g, g|1<<31) {
		return
	}
	w := atomic.LoadUint64(word)
	atomic.CompareAndSwapUint64(word, w, uint64(when)<<5|w&31)
	atomic.StoreUint32(gen, g)
}

// The reset layouts run Reset's whole sequence: the handle, the record's
// address, the clock, then resetOp. handle+slab40/reset finds the slot as
// slab.lookup does (directory entry, chunk header, the slot's address in
// the header's array, whose nil check the compiler makes as a load of the
// array's first byte), then reads the clock, as Reset does;
// reset-clock-first reads the clock before the lookup instead.
// handle+dir40/reset keeps the array pointer in the directory.
func resetFlat40(b *testing.B, n int) {
	recs := make([]rec40, n)
	for i := range recs {
		recs[i] = rec40{word: uint64(i), gen: 1}
	}
	hs := handles(n)
	rng := rand.New(rand.NewPCG(1, uint64(n)))
	cpuLoop(b, func(j int) {
		r := &recs[hs[rng.IntN(n)]]
		resetOp(r, int64(time.Since(epoch))+int64(j))
	})
	runtime.KeepAlive(recs)
}

func resetSlab40(b *testing.B, n int, clockFirst bool) {
	dir := newSlab40(n)
	hs := handles(n)
	rng := rand.New(rand.NewPCG(1, uint64(n)))
	cpuLoop(b, func(j int) {
		var when int64
		if clockFirst {
			when = int64(time.Since(epoch)) + int64(j)
		}
		r := slabLookup(dir, hs[rng.IntN(n)])
		if r == nil {
			return
		}
		if !clockFirst {
			when = int64(time.Since(epoch)) + int64(j)
		}
		resetOp(r, when)
	})
	runtime.KeepAlive(dir)
}

// slabLookup is slab.lookup's path from the slot on.
//
//go:noinline
func slabLookup(dir []*floorChunk, slot uint64) *rec40 {
	c := slot >> 10
	if c >= uint64(len(dir)) {
		return nil
	}
	ch := dir[c]
	if ch == nil {
		return nil
	}
	return &ch.tasks[slot&1023]
}

// resetDir40 keeps the chunk's array in the directory itself: the nil check
// the lookup makes anyway (for a trimmed chunk) proves the array there, so
// the compiler adds none, and the header's load goes too.
func resetDir40(b *testing.B, n int) {
	dir := make([]*[1024]rec40, (n+1023)/1024)
	for i := range dir {
		dir[i] = new([1024]rec40)
		for j := range dir[i] {
			dir[i][j] = rec40{word: uint64(j), gen: 1}
		}
	}
	hs := handles(n)
	rng := rand.New(rand.NewPCG(1, uint64(n)))
	cpuLoop(b, func(j int) {
		r := dirLookup(dir, hs[rng.IntN(n)])
		if r == nil {
			return
		}
		resetOp(r, int64(time.Since(epoch))+int64(j))
	})
	runtime.KeepAlive(dir)
}

// resetDir24 is resetDir40 with 24-byte slots without pointers.
func resetDir24(b *testing.B, n int) {
	dir := make([]*[1024]rec24, (n+1023)/1024)
	for i := range dir {
		dir[i] = new([1024]rec24)
		for j := range dir[i] {
			dir[i][j] = rec24{word: uint64(j), gen: 1}
		}
	}
	hs := handles(n)
	rng := rand.New(rand.NewPCG(1, uint64(n)))
	cpuLoop(b, func(j int) {
		r := dirLookup(dir, hs[rng.IntN(n)])
		if r == nil {
			return
		}
		resetWords(&r.word, &r.gen, int64(time.Since(epoch))+int64(j))
	})
	runtime.KeepAlive(dir)
}

//go:noinline
func dirLookup[R rec40 | rec24](dir []*[1024]R, slot uint64) *R {
	c := slot >> 10
	if c >= uint64(len(dir)) {
		return nil
	}
	a := dir[c]
	if a == nil {
		return nil
	}
	return &a[slot&1023]
}

// hugeFlat runs flat40 over anonymous memory mapped outside the Go heap with
// MADV_HUGEPAGE, and reports how much of it huge pages back.
func hugeFlat(b *testing.B, n int, hs []uint64) {
	const twoMiB = 2 << 20
	size := (n*int(unsafe.Sizeof(rec40{})) + twoMiB - 1) / twoMiB * twoMiB
	mem, err := syscall.Mmap(-1, 0, size+twoMiB, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		b.Fatal(err)
	}
	defer syscall.Munmap(mem)
	// Start on a 2 MiB boundary, so that every huge page is whole.
	off := (twoMiB - int(uintptr(unsafe.Pointer(&mem[0]))%twoMiB)) % twoMiB
	region := mem[off : off+size]
	if err := syscall.Madvise(region, 14 /* MADV_HUGEPAGE */); err != nil {
		b.Fatal(err)
	}
	before := anonHuge()
	recs := unsafe.Slice((*rec40)(unsafe.Pointer(&region[0])), n)
	flat(b, recs, hs, false)
	b.ReportMetric(100*float64(anonHuge()-before)/float64(size), "huge-%")
}

// anonHuge is the process's anonymous memory backed by huge pages.
func anonHuge() uint64 {
	v, _ := procField("/proc/self/smaps_rollup", "AnonHugePages")
	return v
}

// timerSizes are the timer counts BenchmarkTimerReset runs at.
var timerSizes = flag.String("timer-sizes", "1e6", "pending timers BenchmarkTimerReset runs at, comma-separated")

func sharedTimerFunc() {}

// BenchmarkTimerReset times the Go runtime's Timer.Reset to a later
// deadline on a random one of n pending timers, as the curve's Reset phase
// does on its runtime implementation, without the curve's other phases
// (full collections, the steady load) that make its 10^8 step need tens of
// GB. The timers share one func, so that no closure is held per timer;
// heap-B/timer is the Go heap per pending timer, its *time.Timer handle
// included.
//
//	GOGC=off GOMEMLIMIT=18GiB go test ./cmd/curve -run '^$' -bench TimerReset -benchtime 2000000x -timer-sizes 1e6,1e8
func BenchmarkTimerReset(b *testing.B) {
	for s := range strings.SplitSeq(*timerSizes, ",") {
		n, err := parseSize(s)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("n=%s", sizeName(n)), func(b *testing.B) {
			runtime.GC()
			heap0, _ := heapLive()
			rng := rand.New(rand.NewPCG(1, uint64(n)))
			ts := make([]*time.Timer, n)
			for i := range ts {
				ts[i] = time.AfterFunc(base+time.Duration(rng.Int64N(int64(spread))), sharedTimerFunc)
			}
			runtime.GC()
			heap1, _ := heapLive()
			cpuLoop(b, func(j int) {
				ts[rng.IntN(n)].Reset(base + spread + time.Duration(j)*time.Microsecond)
			})
			b.ReportMetric(per(heap1-heap0, n), "heap-B/timer")
			for _, t := range ts {
				t.Stop()
			}
			ts = nil
			runtime.GC()
			debug.FreeOSMemory()
		})
	}
}
