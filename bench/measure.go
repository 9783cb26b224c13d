package main

import (
	"runtime"
	"sort"
	"syscall"
	"time"
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

// cpuTime returns the user plus system CPU time of this process.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
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

// goroutineSampler records the peak number of goroutines until stopped.
type goroutineSampler struct {
	stop chan struct{}
	done chan int
}

func sampleGoroutines(every time.Duration) *goroutineSampler {
	g := &goroutineSampler{stop: make(chan struct{}), done: make(chan int, 1)}
	go func() {
		peak := 0
		tk := time.NewTicker(every)
		defer tk.Stop()
		for {
			peak = max(peak, runtime.NumGoroutine())
			select {
			case <-g.stop:
				g.done <- peak
				return
			case <-tk.C:
			}
		}
	}()
	return g
}

// Stop ends sampling and returns the peak seen.
func (g *goroutineSampler) Stop() int {
	close(g.stop)
	return <-g.done
}
