package schedule

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// BenchmarkTimerLateness measures how late a goroutine wakes from a sleep
// on a Go timer, which bounds how promptly the scheduler (and anything else
// that sleeps on Go timers) can start a job. On Linux an idle Go program
// waits for its timers in epoll_wait, whose timeout is in whole
// milliseconds, so short sleeps wake up to about a millisecond late
// (golang/go#53824). Each iteration sleeps once; late-µs-p50 is the median
// lateness, late-µs-p99 the 99th percentile and late-µs-max the largest.
//
//	go test -run '^$' -bench TimerLateness -benchtime 300x .
func BenchmarkTimerLateness(b *testing.B) {
	for _, d := range []time.Duration{50 * time.Microsecond, 300 * time.Microsecond, 1700 * time.Microsecond} {
		b.Run(fmt.Sprint(d), func(b *testing.B) {
			var late []time.Duration
			for b.Loop() {
				t0 := time.Now()
				time.Sleep(d)
				late = append(late, time.Since(t0)-d)
			}
			slices.Sort(late)
			b.ReportMetric(float64(late[len(late)/2].Microseconds()), "late-µs-p50")
			b.ReportMetric(float64(late[len(late)*99/100].Microseconds()), "late-µs-p99")
			b.ReportMetric(float64(late[len(late)-1].Microseconds()), "late-µs-max")
		})
	}
}
