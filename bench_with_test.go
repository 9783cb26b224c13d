package schedule_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/go-schedule/schedule"
	"github.com/go-schedule/schedule/internal/schedtest"
)

// The shape of heartbeat's, netdeadline's and the jobs worker's tasks: one
// job func for all tasks, each with a pointer of the caller's as its
// argument (ScheduleOneWith). The runtime's rows are those of
// BenchmarkScheduleOne and BenchmarkFire, whose AfterFunc gets the same
// job either way.

// conn stands for the caller's per-task record an argument points to.
type conn struct{ _ int64 }

func nopWith(schedule.TaskID, any) {}

// BenchmarkScheduleOneWith adds one-shots with a pointer argument to a
// scheduler that already holds n.
func BenchmarkScheduleOneWith(b *testing.B) {
	for _, size := range benchSizes {
		for _, st := range schedtest.Strategies {
			b.Run(fmt.Sprintf("pending=%s/%s", size.name, st.String()), func(b *testing.B) {
				b.ReportAllocs()
				s, _ := filled(b, st, size.n)
				conns := make([]conn, 4096)
				i := 0
				for b.Loop() {
					if _, err := s.ScheduleOneWith(nopWith, &conns[i%len(conns)], far(i)); err != nil {
						b.Fatal(err)
					}
					i++
				}
			})
		}
	}
}

// BenchmarkFireWith is BenchmarkFire for jobs of ScheduleOneWith with a
// pointer argument.
func BenchmarkFireWith(b *testing.B) {
	done := func(_ schedule.TaskID, arg any) { arg.(*sync.WaitGroup).Done() }
	for _, st := range schedtest.Strategies {
		b.Run(st.String(), func(b *testing.B) {
			fireBatches(b, st, 1000, func(s *schedule.Scheduler, wg *sync.WaitGroup, _ func()) error {
				_, err := s.ScheduleOneWith(done, wg, 0)
				return err
			})
		})
	}
}
