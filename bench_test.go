package schedule_test

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-schedule/schedule"
	"github.com/go-schedule/schedule/internal/schedtest"
)

// The in-package benchmarks put both strategies side by side with the Go
// runtime's own timers, measured in the same run:
//
//	go test -run '^$' -bench . -count 6 | tee new.txt && benchstat new.txt
//
// Scheduling is asynchronous: a call returns once its request is queued for
// the owner goroutine, which works on another core. A benchmark loop thus
// measures what the caller pays; the owner can lag it by at most the inbox
// bound (65,536 requests), a fraction of a percent of a one-second run.
// Benchmarks that report memory wait for the owner first.

var benchSizes = []struct {
	name string
	n    int
}{{"1k", 1_000}, {"100k", 100_000}, {"1M", 1_000_000}}

// far returns a deadline an hour or so out, spread so that heap entries do
// not all compare equal.
func far(i int) time.Duration { return time.Hour + time.Duration(i%100_003)*time.Millisecond }

// rng is a xorshift generator: cheap enough not to show in the figures.
type rng uint64

func (r *rng) intn(n int) int {
	*r ^= *r << 13
	*r ^= *r >> 7
	*r ^= *r << 17
	return int(uint64(*r) % uint64(n))
}

func newScheduler(b *testing.B, st schedtest.Strategy) *schedule.Scheduler {
	b.Helper()
	s, err := st.New(runtime.GOMAXPROCS(0))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(s.Shutdown)
	return s
}

// filled returns a scheduler holding n pending tasks and their IDs.
func filled(b *testing.B, st schedtest.Strategy, n int) (*schedule.Scheduler, []schedule.TaskID) {
	b.Helper()
	s := newScheduler(b, st)
	ids := make([]schedule.TaskID, n)
	for i := range ids {
		id, err := s.ScheduleOne(nop, far(i))
		if err != nil {
			b.Fatal(err)
		}
		ids[i] = id
	}
	s.Settle()
	return s, ids
}

// runtimeFilled returns n pending runtime timers, stopped when b ends.
func runtimeFilled(b *testing.B, n int) []*time.Timer {
	b.Helper()
	timers := make([]*time.Timer, n)
	for i := range timers {
		timers[i] = time.AfterFunc(far(i), nop)
	}
	b.Cleanup(func() {
		for _, t := range timers {
			t.Stop()
		}
	})
	return timers
}

// eachSize runs one sub-benchmark per pending size and implementation:
// both strategies, then the runtime's timers.
func eachSize(b *testing.B, ours func(b *testing.B, st schedtest.Strategy, n int), theirs func(b *testing.B, n int)) {
	for _, size := range benchSizes {
		for _, st := range schedtest.Strategies {
			b.Run(fmt.Sprintf("pending=%s/%s", size.name, st.String()), func(b *testing.B) {
				b.ReportAllocs()
				ours(b, st, size.n)
			})
		}
		b.Run(fmt.Sprintf("pending=%s/runtime", size.name), func(b *testing.B) {
			b.ReportAllocs()
			theirs(b, size.n)
		})
	}
}

// BenchmarkScheduleOne adds one-shot tasks to a scheduler that already holds
// n; the runtime row is time.AfterFunc.
func BenchmarkScheduleOne(b *testing.B) {
	eachSize(b, func(b *testing.B, st schedtest.Strategy, n int) {
		s, _ := filled(b, st, n)
		i := 0
		for b.Loop() {
			if _, err := s.ScheduleOne(nop, far(i)); err != nil {
				b.Fatal(err)
			}
			i++
		}
	}, func(b *testing.B, n int) {
		runtimeFilled(b, n)
		var added []*time.Timer
		i := 0
		for b.Loop() {
			added = append(added, time.AfterFunc(far(i), nop))
			i++
		}
		b.StopTimer()
		for _, t := range added {
			t.Stop()
		}
	})
}

// BenchmarkCancelTask cancels pending tasks, on random ones of n; the
// runtime row is Timer.Stop. Once all n are cancelled they are scheduled
// again, outside the timer.
func BenchmarkCancelTask(b *testing.B) {
	eachSize(b, func(b *testing.B, st schedtest.Strategy, n int) {
		s, ids := filled(b, st, n)
		r := rng(1)
		next := len(ids)
		for b.Loop() {
			if next == len(ids) {
				b.StopTimer()
				for i := range ids { // refill the cancelled ones
					if s.Reset(ids[i], far(i)) {
						continue
					}
					ids[i], _ = s.ScheduleOne(nop, far(i))
				}
				shuffle(&r, ids)
				next = 0
				b.StartTimer()
			}
			s.CancelTask(ids[next])
			next++
		}
	}, func(b *testing.B, n int) {
		timers := runtimeFilled(b, n)
		r := rng(1)
		next := len(timers)
		for b.Loop() {
			if next == len(timers) {
				b.StopTimer()
				for i, t := range timers {
					t.Reset(far(i))
				}
				shuffle(&r, timers)
				next = 0
				b.StartTimer()
			}
			timers[next].Stop()
			next++
		}
	})
}

func shuffle[T any](r *rng, xs []T) {
	for i := len(xs) - 1; i > 0; i-- {
		j := r.intn(i + 1)
		xs[i], xs[j] = xs[j], xs[i]
	}
}

// BenchmarkReset is the heartbeat path: postpone the deadline of a random
// one of n pending tasks. The runtime row is Timer.Reset on a random one of
// n AfterFunc timers.
func BenchmarkReset(b *testing.B) {
	eachSize(b, func(b *testing.B, st schedtest.Strategy, n int) {
		s, ids := filled(b, st, n)
		r := rng(1)
		for b.Loop() {
			i := r.intn(n)
			if !s.Reset(ids[i], far(i)) {
				b.Fatal("Reset of a pending task failed")
			}
		}
	}, func(b *testing.B, n int) {
		timers := runtimeFilled(b, n)
		r := rng(1)
		for b.Loop() {
			i := r.intn(n)
			timers[i].Reset(far(i))
		}
	})
}

// BenchmarkScheduleOneCancelTask adds a task and cancels it again, the
// cancel+add form of a heartbeat; the runtime row is AfterFunc + Stop.
func BenchmarkScheduleOneCancelTask(b *testing.B) {
	eachSize(b, func(b *testing.B, st schedtest.Strategy, n int) {
		s, _ := filled(b, st, n)
		i := 0
		for b.Loop() {
			id, err := s.ScheduleOne(nop, far(i))
			if err != nil {
				b.Fatal(err)
			}
			s.CancelTask(id)
			i++
		}
	}, func(b *testing.B, n int) {
		runtimeFilled(b, n)
		i := 0
		for b.Loop() {
			time.AfterFunc(far(i), nop).Stop()
			i++
		}
	})
}

// BenchmarkFire measures firing throughput: each iteration schedules a
// batch of tasks due at once and waits until all of them ran. The runtime
// row is AfterFunc(0), which starts a goroutine per timer.
func BenchmarkFire(b *testing.B) {
	const perBatch = 1000
	for _, st := range schedtest.Strategies {
		b.Run(st.String(), func(b *testing.B) {
			fireBatches(b, st, perBatch, func(s *schedule.Scheduler, _ *sync.WaitGroup, done func()) error {
				_, err := s.ScheduleOne(done, 0)
				return err
			})
		})
	}
	b.Run("runtime", func(b *testing.B) {
		b.ReportAllocs()
		var wg sync.WaitGroup
		done := wg.Done
		for b.Loop() {
			wg.Add(perBatch)
			for range perBatch {
				time.AfterFunc(0, done)
			}
			wg.Wait()
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*perBatch), "ns/task")
	})
}

// fireBatches runs BenchmarkFire's rounds on a scheduler of strategy st:
// add schedules one task due at once that calls wg.Done, which done is
// (made once, so that the rounds allocate no method value), when it runs.
func fireBatches(b *testing.B, st schedtest.Strategy, perBatch int, add func(s *schedule.Scheduler, wg *sync.WaitGroup, done func()) error) {
	b.ReportAllocs()
	s := newScheduler(b, st)
	var wg sync.WaitGroup
	done := wg.Done
	for b.Loop() {
		wg.Add(perBatch)
		for range perBatch {
			if err := add(s, &wg, done); err != nil {
				b.Fatal(err)
			}
		}
		wg.Wait()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*perBatch), "ns/task")
}

// BenchmarkFireSparse measures the CPU that a steady stream of deadlines
// costs: each iteration arms 1,000 one-shots 10 µs apart (100,000 a second,
// the rate of bench/'s fire workload), starting 1 ms out, and waits until
// all of them ran. cpu-ns/job is the process's CPU time per job, arming
// included; wall time is set by the stream, not by the work. late-p50-µs
// and late-p99-µs are how late the jobs started, each measured by the job
// against its deadline counted from the start of its round. The runtime
// row is AfterFunc.
func BenchmarkFireSparse(b *testing.B) {
	for _, st := range schedtest.Strategies {
		b.Run(st.String(), func(b *testing.B) {
			s := newScheduler(b, st)
			fireSparse(b, func(d time.Duration, f func()) {
				if _, err := s.ScheduleOne(f, d); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
	b.Run("runtime", func(b *testing.B) {
		fireSparse(b, func(d time.Duration, f func()) { time.AfterFunc(d, f) })
	})
}

func fireSparse(b *testing.B, arm func(time.Duration, func())) {
	const (
		perRound = 1000
		gap      = 10 * time.Microsecond
		lead     = time.Millisecond
	)
	b.ReportAllocs()
	var (
		wg    sync.WaitGroup
		start time.Time // of the round; written before its jobs are armed
		late  = make([]time.Duration, perRound)
		all   []time.Duration
		jobs  = make([]func(), perRound) // made once: arming allocates only what the timers do
	)
	for i := range jobs {
		due := lead + time.Duration(i)*gap
		jobs[i] = func() {
			late[i] = time.Since(start) - due
			wg.Done()
		}
	}
	cpu0, cpuOK := cpuTime()
	for b.Loop() {
		wg.Add(perRound)
		start = time.Now()
		for i, job := range jobs {
			arm(lead+time.Duration(i)*gap-time.Since(start), job)
		}
		wg.Wait()
		all = append(all, late...)
	}
	if cpu1, ok := cpuTime(); ok && cpuOK {
		b.ReportMetric(float64(cpu1-cpu0)/float64(b.N*perRound), "cpu-ns/job")
	}
	slices.Sort(all)
	b.ReportMetric(float64(all[len(all)/2].Microseconds()), "late-p50-µs")
	b.ReportMetric(float64(all[len(all)*99/100].Microseconds()), "late-p99-µs")
}

// heapBytes returns the live heap after a full collection.
func heapBytes() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkMemoryPerTask reports the heap bytes each pending task costs at
// 1M pending, from an empty scheduler, the caller's TaskID included; the
// runtime row is AfterFunc timers, the caller's *time.Timer included.
func BenchmarkMemoryPerTask(b *testing.B) {
	const n = 1_000_000
	for _, st := range schedtest.Strategies {
		b.Run(st.String(), func(b *testing.B) {
			var per float64
			for b.Loop() {
				before := heapBytes()
				s, err := st.New(1)
				if err != nil {
					b.Fatal(err)
				}
				ids := make([]schedule.TaskID, n) // the caller's handles, as the runtime row keeps its timers
				for i := range ids {
					if ids[i], err = s.ScheduleOne(nop, far(i)); err != nil {
						b.Fatal(err)
					}
				}
				s.Settle()
				per = float64(heapBytes()-before) / n
				runtime.KeepAlive(ids)
				// Wait for the pool's goroutines too, so that none of this
				// scheduler is still reachable when the next round measures.
				if err := s.ShutdownContext(context.Background()); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(per, "B/task")
		})
	}
	b.Run("runtime", func(b *testing.B) {
		var per float64
		for b.Loop() {
			before := heapBytes()
			var ran sync.WaitGroup
			ran.Add(n)
			timers := make([]*time.Timer, n)
			for i := range timers {
				timers[i] = time.AfterFunc(far(i), ran.Done)
			}
			per = float64(heapBytes()-before) / n
			// Fire them rather than stop them: a stopped timer can stay in
			// the runtime's timer heap, and so in the next round's before,
			// until its P next tidies that heap; a fired one leaves at once.
			for _, t := range timers {
				t.Reset(0)
			}
			ran.Wait()
		}
		b.ReportMetric(per, "B/task")
	})
}

// BenchmarkMemoryAfterHeartbeats re-arms 1M devices with timeouts spread
// over 30-60 s by cancel + add, two heartbeats per device, the pattern that
// makes lazy tombstones pile up, then reports bytes per device and heap
// entries per live task.
func BenchmarkMemoryAfterHeartbeats(b *testing.B) {
	const devices = 1_000_000
	timeout := func(d int) time.Duration { return 30*time.Second + time.Duration(d%30_011)*time.Millisecond }
	for _, st := range schedtest.Strategies {
		b.Run(st.String(), func(b *testing.B) {
			var per, ratio float64
			ids := make([]schedule.TaskID, devices) // not counted
			for b.Loop() {
				before := heapBytes()
				s, err := st.New(1)
				if err != nil {
					b.Fatal(err)
				}
				for d := range ids {
					ids[d], _ = s.ScheduleOne(nop, timeout(d))
				}
				r := rng(7)
				for range 2 * devices {
					d := r.intn(devices)
					s.CancelTask(ids[d])
					ids[d], _ = s.ScheduleOne(nop, timeout(d))
				}
				s.Settle()
				stats := s.Stats()
				ratio = float64(stats.HeapEntries) / float64(stats.Pending)
				per = float64(heapBytes()-before) / devices
				s.Shutdown()
			}
			b.ReportMetric(per, "B/device")
			b.ReportMetric(ratio, "entries/live")
		})
	}
}
