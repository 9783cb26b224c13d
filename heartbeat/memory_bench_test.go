package heartbeat_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/go-schedule/schedule"
	"github.com/go-schedule/schedule/heartbeat"
)

// BenchmarkMemoryPerDevice reports the heap a gateway pays per device, one
// layer at a time, at 1,000, 100,000 and 1,000,000 devices, each measured
// from nothing, so that the fixed cost of an empty scheduler and Monitor is
// in the figure, spread over the devices:
//
//   - scheduler: a Scheduler (lazy cancel, one worker) holding one pending
//     one-shot per device, and the caller's TaskID for each;
//   - monitor: a Monitor on such a Scheduler watching one uint64 key per
//     device: the task, the key index and the key boxed as the task's
//     argument, with no handle left to the caller.
//
// fixed-B is the heap of the empty layer, B/device the heap per device
// with it included:
//
//	go test ./heartbeat -run '^$' -bench MemoryPerDevice -benchtime 1x
func BenchmarkMemoryPerDevice(b *testing.B) {
	for _, n := range []int{1_000, 100_000, 1_000_000} {
		b.Run(fmt.Sprintf("devices=%d/scheduler", n), func(b *testing.B) {
			benchMemory(b, n, func(s *schedule.Scheduler, n int) func(int) {
				ids := make([]schedule.TaskID, n)
				return func(i int) {
					var err error
					if ids[i], err = s.ScheduleOne(nop, benchTimeout); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
		b.Run(fmt.Sprintf("devices=%d/monitor", n), func(b *testing.B) {
			keys := uint64Keys(n)
			benchMemory(b, n, func(s *schedule.Scheduler, _ int) func(int) {
				m, err := heartbeat.New(s, benchTimeout, func(uint64) {})
				if err != nil {
					b.Fatal(err)
				}
				return func(i int) {
					if err := m.Beat(keys[i]); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}

func nop() {}

// benchMemory reports the heap of a scheduler with the layer on it
// (layer(s, n) builds what sits on s and returns the function that adds
// device i): empty, and per device once n devices are added.
func benchMemory(b *testing.B, n int, layer func(s *schedule.Scheduler, n int) func(int)) {
	var fixed, per float64
	for b.Loop() {
		fixed = heapOf(b, 0, layer)
		per = heapOf(b, n, layer) / float64(n)
	}
	b.ReportMetric(fixed, "fixed-B")
	b.ReportMetric(per, "B/device")
}

// heapOf builds a scheduler and the layer on it with n devices, and
// returns the heap it all takes, from nothing.
func heapOf(b *testing.B, n int, layer func(s *schedule.Scheduler, n int) func(int)) float64 {
	before := heapBytes()
	s, err := schedule.New(1)
	if err != nil {
		b.Fatal(err)
	}
	add := layer(s, n)
	for i := range n {
		add(i)
	}
	settle(s, n)
	used := float64(heapBytes() - before)
	runtime.KeepAlive(add)
	if err := s.ShutdownContext(context.Background()); err != nil {
		b.Fatal(err)
	}
	return used
}

// settle waits until the owner goroutine has taken n tasks into its heap,
// so that the heap, not the requests on their way to it, is measured.
func settle(s *schedule.Scheduler, n int) {
	for range 1000 {
		if s.Stats().HeapEntries >= n {
			return
		}
		time.Sleep(time.Millisecond)
	}
}
