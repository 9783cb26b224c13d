package schedprom_test

import (
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/go-schedule/schedule"
	"github.com/go-schedule/schedule/heartbeat"
	"github.com/go-schedule/schedule/schedprom"
)

// keys is the number of keys the benchmarks' Monitor watches.
const keys = 10_000

// gateway is a benchmark's scheduler with a Monitor watching keys keys (an
// hour's timeout: none expires) and a repeating job every millisecond, so
// that jobs start while it runs; and a registry of both collectors.
func gateway(b *testing.B) (*schedule.Scheduler, *heartbeat.Monitor[int], *prometheus.Registry) {
	s := start(b, 2)
	m, err := heartbeat.New(s, time.Hour, func(int) {})
	require.NoError(b, err)
	for k := range keys {
		require.NoError(b, m.Beat(k))
	}
	_, err = s.Schedule(nop, time.Millisecond)
	require.NoError(b, err)
	reg := prometheus.NewRegistry()
	reg.MustRegister(schedprom.NewCollector(s), schedprom.NewWatcherCollector(m, "heartbeat_keys"))
	return s, m, reg
}

// BenchmarkCollect is the cost of one scrape of a scheduler and a Monitor,
// on the scraping goroutine.
func BenchmarkCollect(b *testing.B) {
	_, _, reg := gateway(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := reg.Gather(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBeatWhileScraped is the heartbeat hot path (Monitor.Beat of a
// watched key: a lookup and Scheduler.Reset) while a job starts every
// millisecond, without scrapes and with ten a second. allocs/op rounds
// down; mallocs/op is every allocation of the process, the scrapes'
// included, per Beat.
func BenchmarkBeatWhileScraped(b *testing.B) {
	for _, bc := range []struct {
		name  string
		every time.Duration // 0: no scrapes
	}{{"scrapes=0", 0}, {"scrapes=10/s", 100 * time.Millisecond}} {
		b.Run(bc.name, func(b *testing.B) {
			s, m, reg := gateway(b)
			stop := make(chan struct{})
			var wg sync.WaitGroup
			scrapes := 0
			if bc.every > 0 {
				wg.Go(func() {
					tick := time.NewTicker(bc.every)
					defer tick.Stop()
					for {
						select {
						case <-stop:
							return
						case <-tick.C:
						}
						if _, err := reg.Gather(); err != nil {
							b.Error(err)
						}
						scrapes++
					}
				})
			}
			startsBefore := s.Stats().Started
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			b.ReportAllocs()
			k := 0
			for b.Loop() {
				if err := m.Beat(k); err != nil {
					b.Fatal(err)
				}
				if k++; k == keys {
					k = 0
				}
			}
			runtime.ReadMemStats(&after)
			close(stop)
			wg.Wait()
			b.ReportMetric(float64(after.Mallocs-before.Mallocs)/float64(b.N), "mallocs/op")
			b.ReportMetric(float64(scrapes), "scrapes")
			b.ReportMetric(float64(s.Stats().Started-startsBefore), "job-starts")
		})
	}
}
