package main

import (
	"runtime"
	"sort"
	"sync/atomic"
)

// memSnapshot is what a workload reads from the runtime before and after a
// measured region.
type memSnapshot struct {
	heapAlloc uint64
	mallocs   uint64
}

// settledMem runs the garbage collector until the live heap is stable and
// returns it, so that "before" and "after" compare live bytes only.
func settledMem() memSnapshot {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return memSnapshot{heapAlloc: ms.HeapAlloc, mallocs: ms.Mallocs}
}

// mallocs returns the number of heap allocations so far without forcing a
// collection.
func mallocs() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.Mallocs
}

// perItem divides a byte or count delta by n, as a float, allowing for a
// delta that went negative.
func perItem(after, before uint64, n int) float64 {
	return (float64(after) - float64(before)) / float64(n)
}

// percentile returns the p-th percentile (0..100) of sorted values by the
// nearest-rank method.
func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	k := int(p/100*float64(len(sorted))+0.5) - 1
	k = min(max(k, 0), len(sorted)-1)
	return sorted[k]
}

// summary is the median and range of repeated measurements.
type summary struct {
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	N      int     `json:"n"`
}

func summarize(xs []float64) summary {
	if len(xs) == 0 {
		return summary{}
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return summary{Median: m, Min: s[0], Max: s[len(s)-1], N: len(s)}
}

// storeMax raises a to v if v is larger.
func storeMax(a *atomic.Int64, v int64) {
	for {
		old := a.Load()
		if v <= old || a.CompareAndSwap(old, v) {
			return
		}
	}
}

// storeMin lowers a to v if v is smaller.
func storeMin(a *atomic.Int64, v int64) {
	for {
		old := a.Load()
		if v >= old || a.CompareAndSwap(old, v) {
			return
		}
	}
}

// countedPrepare takes the "before" memory snapshot of a memory-measuring
// workload and only then sizes t's handle storage, so that the caller's
// handles (a TaskID, a *time.Timer, ... per timer) are counted with the
// library's own memory: they are what a user has to hold to cancel or
// re-arm a timer, and go-zero, which is keyed by the caller's own key,
// keeps its equivalent (the key index) inside the library. It returns the
// snapshot and the bytes of handle storage per timer.
func countedPrepare(t Timers, n int) (before memSnapshot, handleBytes float64) {
	before = settledMem()
	t.Prepare(n)
	withHandles := settledMem()
	// before.mallocs is left as it was, so the handle storage's allocation
	// is counted in the workload's allocations too.
	return before, perItem(withHandles.heapAlloc, before.heapAlloc, n)
}
