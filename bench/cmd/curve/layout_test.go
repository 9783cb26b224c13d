package main

import (
	"flag"
	"fmt"
	"runtime"
	"testing"
)

// layoutTasks is how many slots BenchmarkFullGCBySlotLayout holds.
var layoutTasks = flag.Int("layout-tasks", 1_000_000, "slots held by BenchmarkFullGCBySlotLayout")

// Slot layouts, 1,024 to a chunk: what the collector pays for a slab of
// them depends on whether a slot holds pointers, not on what the scheduler
// does with it.
type (
	// slotWithJob is a state word, a generation, a tag, and the job as a
	// func and an interface, as the slab's task was before it kept one
	// pointer (task.go): 40 bytes of which three words are pointers the
	// collector must look at.
	slotWithJob struct {
		word     uint64
		gen, tag uint32
		fn       func(uint64, any)
		arg      any
	}
	// slotWithIndex names its job by index into a table of job funcs and
	// its argument by an index of the caller's: 24 bytes, no pointer, so a
	// chunk of them is never scanned.
	slotWithIndex struct {
		word          uint64
		gen, tag      uint32
		job, argIndex uint32
	}
)

func sharedLayoutJob(uint64, any) {}

// BenchmarkFullGCBySlotLayout times one full collection with -layout-tasks
// slots held in chunks of each layout: a shared job func and no argument
// (ScheduleOneWith(job, nil): pointers outside the Go heap), a closure per
// slot as its argument (ScheduleOne(func(){...})), and job indexes.
//
//	go test ./cmd/curve -run '^$' -bench FullGCBySlotLayout -benchtime 5x -layout-tasks=10000000
func BenchmarkFullGCBySlotLayout(b *testing.B) {
	n := *layoutTasks
	chunks := (n + 1023) / 1024
	fill := map[string]func() any{
		"pointers-shared-job": func() any {
			cs := make([]*[1024]slotWithJob, chunks)
			for i := range cs {
				cs[i] = new([1024]slotWithJob)
				for j := range cs[i] {
					cs[i][j] = slotWithJob{word: uint64(j), gen: 1, tag: 1, fn: sharedLayoutJob}
				}
			}
			return cs
		},
		"pointers-closure-per-slot": func() any {
			cs := make([]*[1024]slotWithJob, chunks)
			for i := range cs {
				cs[i] = new([1024]slotWithJob)
				for j := range cs[i] {
					k := i*1024 + j
					cs[i][j] = slotWithJob{word: uint64(k), gen: 1, tag: 1, arg: func() { _ = k }}
				}
			}
			return cs
		},
		"index": func() any {
			cs := make([]*[1024]slotWithIndex, chunks)
			for i := range cs {
				cs[i] = new([1024]slotWithIndex)
				for j := range cs[i] {
					cs[i][j] = slotWithIndex{word: uint64(j), gen: 1, tag: 1, job: 1, argIndex: uint32(i*1024 + j)}
				}
			}
			return cs
		},
	}
	for _, name := range []string{"pointers-shared-job", "pointers-closure-per-slot", "index"} {
		b.Run(fmt.Sprintf("tasks=%d/%s", n, name), func(b *testing.B) {
			b.ReportAllocs()
			held := fill[name]()
			runtime.GC()
			gc0, scan := readMetric("/cpu/classes/gc/total:cpu-seconds"), readMetric("/gc/scan/heap:bytes")
			for b.Loop() {
				runtime.GC()
			}
			gcCPU := readMetric("/cpu/classes/gc/total:cpu-seconds") - gc0
			b.ReportMetric(gcCPU*1e3/float64(b.N), "gc-cpu-ms/op")
			b.ReportMetric(scan/float64(n), "scan-B/slot")
			runtime.KeepAlive(held)
		})
	}
}
