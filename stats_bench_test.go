package schedule

import (
	"math/rand/v2"
	"testing"
	"time"
)

// BenchmarkCountStart is the bookkeeping of one job start (Stats.Started,
// the maximum lateness, the lateness histogram and its sum), on one
// goroutine, for latenesses spread evenly over 0-3 ms, where a Go timer's
// lateness falls on an idle Linux host.
func BenchmarkCountStart(b *testing.B) {
	var c outcomes
	rng := rand.New(rand.NewPCG(1, 2))
	var late [1024]int64
	for i := range late {
		late[i] = rng.Int64N(int64(3 * time.Millisecond))
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		c.started(late[i%len(late)])
		i++
	}
}
