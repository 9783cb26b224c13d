package schedule_test

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-schedule/schedule"
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
// goroutine gets its own index, from 0, for op to pick its own tasks.
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
		procs := runtime.GOMAXPROCS(0)
		b.SetParallelism((g + procs - 1) / procs)
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

// perWorker is how many tasks each goroutine of the Reset and cancel+add
// benchmarks re-arms, round-robin.
const perWorker = 4096

// maxWorkers bounds the goroutines RunParallel may start for 32.
func maxWorkers() int {
	procs := runtime.GOMAXPROCS(0)
	return procs * ((32 + procs - 1) / procs)
}

// workerTasks returns a scheduler holding perWorker pending tasks for each
// goroutine a parallel benchmark may start, and their IDs by goroutine.
func workerTasks(b *testing.B, strategy schedule.CancelStrategy) (*schedule.Scheduler, [][]schedule.TaskID) {
	s := newScheduler(b, strategy)
	ids := make([][]schedule.TaskID, maxWorkers())
	for w := range ids {
		for i := range perWorker {
			id, err := s.ScheduleOne(nop, far(i))
			if err != nil {
				b.Fatal(err)
			}
			ids[w] = append(ids[w], id)
		}
	}
	s.Settle()
	return s, ids
}

// workerTimers is workerTasks for the runtime's timers, stopped when the
// benchmark ends.
func workerTimers(b *testing.B) [][]*time.Timer {
	timers := make([][]*time.Timer, maxWorkers())
	for w := range timers {
		for i := range perWorker {
			timers[w] = append(timers[w], time.AfterFunc(far(i), nop))
		}
	}
	b.Cleanup(func() { stopAll(timers) })
	return timers
}

func stopAll(timers [][]*time.Timer) {
	for _, ts := range timers {
		for _, t := range ts {
			t.Stop()
		}
	}
}

// BenchmarkParallelScheduleOne adds tasks an hour or so out; the runtime
// row is time.AfterFunc.
func BenchmarkParallelScheduleOne(b *testing.B) {
	for _, g := range parallelGoroutines {
		for _, st := range benchStrategies {
			b.Run(fmt.Sprintf("g=%d/%s", g, st.name), func(b *testing.B) {
				s := newScheduler(b, st.strategy)
				runParallel(b, g, func(_, i int) {
					if _, err := s.ScheduleOne(nop, far(i)); err != nil {
						b.Error(err)
					}
				})
			})
		}
		b.Run(fmt.Sprintf("g=%d/runtime", g), func(b *testing.B) {
			timers := make([][]*time.Timer, maxWorkers())
			b.Cleanup(func() { stopAll(timers) })
			runParallel(b, g, func(w, i int) {
				timers[w] = append(timers[w], time.AfterFunc(far(i), nop))
			})
		})
	}
}

// BenchmarkParallelReset postpones pending tasks, each goroutine its own;
// the runtime row is Timer.Reset.
func BenchmarkParallelReset(b *testing.B) {
	for _, g := range parallelGoroutines {
		for _, st := range benchStrategies {
			b.Run(fmt.Sprintf("g=%d/%s", g, st.name), func(b *testing.B) {
				s, ids := workerTasks(b, st.strategy)
				runParallel(b, g, func(w, i int) {
					if !s.Reset(ids[w][i%perWorker], far(i)+time.Hour) {
						b.Error("Reset reported the task not pending")
					}
				})
			})
		}
		b.Run(fmt.Sprintf("g=%d/runtime", g), func(b *testing.B) {
			timers := workerTimers(b)
			runParallel(b, g, func(w, i int) {
				timers[w][i%perWorker].Reset(far(i) + time.Hour)
			})
		})
	}
}

// BenchmarkParallelCancelAdd re-arms tasks by cancelling each and adding a
// new one, each goroutine its own; the runtime row is Stop+AfterFunc.
func BenchmarkParallelCancelAdd(b *testing.B) {
	for _, g := range parallelGoroutines {
		for _, st := range benchStrategies {
			b.Run(fmt.Sprintf("g=%d/%s", g, st.name), func(b *testing.B) {
				s, ids := workerTasks(b, st.strategy)
				runParallel(b, g, func(w, i int) {
					k := i % perWorker
					s.CancelTask(ids[w][k])
					id, err := s.ScheduleOne(nop, far(i))
					if err != nil {
						b.Error(err)
					}
					ids[w][k] = id
				})
			})
		}
		b.Run(fmt.Sprintf("g=%d/runtime", g), func(b *testing.B) {
			timers := workerTimers(b)
			runParallel(b, g, func(w, i int) {
				k := i % perWorker
				timers[w][k].Stop()
				timers[w][k] = time.AfterFunc(far(i), nop)
			})
		})
	}
}
