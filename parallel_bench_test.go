package schedule_test

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-schedule/schedule/internal/schedtest"
)

// The parallel benchmarks call the scheduler from 1, 2, 8 and 32
// goroutines at once, beside the runtime's timers driven the same way, and
// report the process's CPU time per operation (cpu-ns/op: every core's
// work, the owner goroutine's and the runtime's timer code included) next
// to the wall time. What matters is how cpu-ns/op grows with the goroutines,
// compared with the runtime's growth: a shared cache line or a lock that
// every core fights over shows as CPU per operation rising with them.
//
//	go test -run '^$' -bench Parallel -count 6 | tee par.txt && benchstat par.txt
//
// Past GOMAXPROCS goroutines, extra ones add contention but no parallelism,
// so a 2-core machine shows the cost of sharing, not the throughput of many
// cores (see docs/scaling.md).

var parallelGoroutines = []int{1, 2, 8, 32}

// runParallel runs op from g goroutines, b.N calls in all, with
// b.RunParallel (1 goroutine: a plain loop), and reports cpu-ns/op. Each
// of the goroutines(g) goroutines gets its own index, from 0, for op to
// pick its own tasks.
func runParallel(b *testing.B, g int, op func(worker, i int)) {
	b.ReportAllocs()
	cpu0, cpuOK := cpuTime()
	b.ResetTimer()
	if g == 1 {
		i := 0
		for b.Loop() {
			op(0, i)
			i++
		}
	} else {
		b.SetParallelism(goroutines(g) / runtime.GOMAXPROCS(0))
		var workers atomic.Int32
		b.RunParallel(func(pb *testing.PB) {
			w := int(workers.Add(1)) - 1
			for i := 0; pb.Next(); i++ {
				op(w, i)
			}
		})
	}
	b.StopTimer()
	if cpu1, ok := cpuTime(); ok && cpuOK {
		b.ReportMetric(float64((cpu1-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
}

// rearmed is how many tasks the Reset and cancel+add benchmarks re-arm,
// round-robin, whatever the number of goroutines: each of g goroutines
// takes its own contiguous g-th of them (shares), so the tasks touched, and
// hence the cache misses per operation, stay the same as goroutines are
// added, and what grows is only what the goroutines share.
const rearmed = 1 << 17

// shares cuts all into the parts that the goroutines runParallel starts
// for g re-arm: one contiguous part each, indexed by the worker index. It is
// computed before the timed loop: reading GOMAXPROCS takes a lock of the
// runtime that every goroutine would fight over.
func shares[T any](all []T, g int) [][]T {
	k := goroutines(g)
	n := len(all) / k
	out := make([][]T, k)
	for w := range out {
		out[w] = all[w*n : (w+1)*n]
	}
	return out
}

// goroutines returns how many goroutines runParallel starts for g: g
// rounded up to a multiple of GOMAXPROCS, as RunParallel starts them.
func goroutines(g int) int {
	if g == 1 {
		return 1
	}
	procs := runtime.GOMAXPROCS(0)
	return procs * ((g + procs - 1) / procs)
}

// maxWorkers bounds the goroutines RunParallel may start for 32.
func maxWorkers() int { return goroutines(32) }

// BenchmarkParallelScheduleOne adds tasks an hour or so out; the runtime
// row is time.AfterFunc. It warms the process up first (warmUp).
func BenchmarkParallelScheduleOne(b *testing.B) {
	warmUp(b)
	for _, g := range parallelGoroutines {
		for _, st := range schedtest.Strategies {
			b.Run(fmt.Sprintf("g=%d/%s", g, st.String()), func(b *testing.B) {
				s := newScheduler(b, st)
				runParallel(b, g, func(_, i int) {
					if _, err := s.ScheduleOne(nop, far(i)); err != nil {
						b.Error(err)
					}
				})
			})
		}
		b.Run(fmt.Sprintf("g=%d/runtime", g), func(b *testing.B) {
			timers := make([][]*time.Timer, maxWorkers())
			b.Cleanup(func() {
				for _, ts := range timers {
					for _, t := range ts {
						t.Stop()
					}
				}
			})
			runParallel(b, g, func(w, i int) {
				timers[w] = append(timers[w], time.AfterFunc(far(i), nop))
			})
		})
	}
}

// warmUp adds warmUpTasks tasks to a scheduler of each strategy, and as
// many runtime timers, and lets them all go. Without it, the first row a
// process runs, one goroutine's adds with lazy cancel, cost twice the eager
// row after it (docs/scaling.md), and that row is the base of the growth
// factors the parallel benchmarks are read for.
func warmUp(b *testing.B) {
	for _, st := range schedtest.Strategies {
		s, err := st.New(runtime.GOMAXPROCS(0))
		if err != nil {
			b.Fatal(err)
		}
		for i := range warmUpTasks {
			if _, err := s.ScheduleOne(nop, far(i)); err != nil {
				b.Fatal(err)
			}
		}
		s.Settle()
		s.Shutdown()
	}
	timers := make([]*time.Timer, warmUpTasks)
	for i := range timers {
		timers[i] = time.AfterFunc(far(i), nop)
	}
	for _, t := range timers {
		t.Stop()
	}
}

// warmUpTasks is the -benchtime that docs/scaling.md gives.
const warmUpTasks = 300_000

// BenchmarkParallelReset postpones pending tasks, each goroutine its own
// share of them; the runtime row is Timer.Reset.
func BenchmarkParallelReset(b *testing.B) {
	for _, g := range parallelGoroutines {
		for _, st := range schedtest.Strategies {
			b.Run(fmt.Sprintf("g=%d/%s", g, st.String()), func(b *testing.B) {
				s, all := filled(b, st, rearmed)
				parts := shares(all, g)
				runParallel(b, g, func(w, i int) {
					ids := parts[w]
					if !s.Reset(ids[i%len(ids)], far(i)+time.Hour) {
						b.Error("Reset reported the task not pending")
					}
				})
			})
		}
		b.Run(fmt.Sprintf("g=%d/runtime", g), func(b *testing.B) {
			parts := shares(runtimeFilled(b, rearmed), g)
			runParallel(b, g, func(w, i int) {
				timers := parts[w]
				timers[i%len(timers)].Reset(far(i) + time.Hour)
			})
		})
	}
}

// BenchmarkParallelCancelAdd re-arms tasks by cancelling each and adding a
// new one, each goroutine its own share of them; the runtime row is
// Stop+AfterFunc.
func BenchmarkParallelCancelAdd(b *testing.B) {
	for _, g := range parallelGoroutines {
		for _, st := range schedtest.Strategies {
			b.Run(fmt.Sprintf("g=%d/%s", g, st.String()), func(b *testing.B) {
				s, all := filled(b, st, rearmed)
				parts := shares(all, g)
				runParallel(b, g, func(w, i int) {
					ids := parts[w]
					k := i % len(ids)
					s.CancelTask(ids[k])
					id, err := s.ScheduleOne(nop, far(i))
					if err != nil {
						b.Error(err)
					}
					ids[k] = id
				})
			})
		}
		b.Run(fmt.Sprintf("g=%d/runtime", g), func(b *testing.B) {
			parts := shares(runtimeFilled(b, rearmed), g)
			runParallel(b, g, func(w, i int) {
				timers := parts[w]
				k := i % len(timers)
				timers[k].Stop()
				timers[k] = time.AfterFunc(far(i), nop)
			})
		})
	}
}
