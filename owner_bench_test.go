package schedule

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// BenchmarkOwner measures the owner goroutine alone: the test plays the
// owner (see bare), queues requests with the timer stopped, and times only
// the owner applying them, on a heap of 1,000,000 pending tasks with random
// deadlines, touched in random order. ns/op is the owner's CPU per
// operation, so owner-ops/s, 1e9/(ns/op), is the most one owner can take
// however many cores feed it: the ceilings in docs/scaling.md.
//
//	go test -run '^$' -bench 'Owner/(add|cancel|reset|fire)' -benchtime 1000000x -count 6
//	go test -run '^$' -bench Owner/adjust -benchtime 30x -count 3
//	go test -run '^$' -bench 'Owner/(fix|look)' -benchtime 1000000x -count 6
func BenchmarkOwner(b *testing.B) {
	const pending, batch = 1_000_000, 4096
	r := rand.New(rand.NewPCG(1, 2))
	// A random deadline in the hour after an hour from now.
	delay := func() time.Duration { return time.Hour + time.Duration(r.Int64N(int64(time.Hour))) }
	for _, strategy := range cancelStrategies {
		// setup returns a scheduler holding pending tasks, with their IDs
		// and delays.
		setup := func(b *testing.B) (*Scheduler, []TaskID, []time.Duration) {
			s := bare(strategy)
			ids := make([]TaskID, pending)
			delays := make([]time.Duration, pending)
			for i := range pending {
				delays[i] = delay()
				var err error
				if ids[i], err = s.ScheduleOne(nop, delays[i]); err != nil {
					b.Fatal(err)
				}
				if i%batch == 0 {
					s.step(s.now()) // a lane holds at most laneMax requests
				}
			}
			s.step(s.now())
			return s, ids, delays
		}
		// run times the owner applying b.N operations that queue makes,
		// batch by batch.
		run := func(b *testing.B, s *Scheduler, queue func()) {
			b.ReportAllocs()
			b.ResetTimer()
			for done := 0; done < b.N; done += batch {
				b.StopTimer()
				for range min(batch, b.N-done) {
					queue()
				}
				b.StartTimer()
				s.step(s.now())
			}
			b.StopTimer()
			b.ReportMetric(1e9*float64(b.N)/float64(b.Elapsed().Nanoseconds()), "owner-ops/s")
		}
		b.Run(fmt.Sprintf("add/%v", strategy), func(b *testing.B) {
			s, _, _ := setup(b)
			run(b, s, func() { s.ScheduleOne(nop, delay()) })
		})
		// A pair is two requests with eager cancel (remove, add) and one
		// with lazy (add; the cancel leaves a tombstone for rebuilds, which
		// are timed).
		b.Run(fmt.Sprintf("cancel+add/%v", strategy), func(b *testing.B) {
			s, ids, _ := setup(b)
			run(b, s, func() {
				k := r.IntN(pending)
				s.CancelTask(ids[k])
				ids[k], _ = s.ScheduleOne(nop, delay())
			})
		})
		// Each Reset moves a random task's deadline to less than a second
		// from now (a request, fixed at once), so to the top.
		b.Run(fmt.Sprintf("reset-earlier/%v", strategy), func(b *testing.B) {
			s, ids, _ := setup(b)
			run(b, s, func() {
				s.Reset(ids[r.IntN(pending)], time.Duration(r.Int64N(int64(deferMoves))))
			})
		})
		// One op is one pass over the heap fixing the deadlines that
		// batch Resets moved earlier, each to half as far past an hour from
		// now as it was (no request, then one pass: deferMoves); ms/pass is
		// what such a pass costs the owner on a heap of a million.
		b.Run(fmt.Sprintf("adjust/%v", strategy), func(b *testing.B) {
			s, ids, delays := setup(b)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				for range batch {
					k := r.IntN(pending)
					delays[k] = time.Hour + (delays[k]-time.Hour)/2
					s.Reset(ids[k], delays[k])
				}
				b.StartTimer()
				s.inbox.takeMovedEarlier(never)
				s.owner.rebuild()
			}
			b.StopTimer()
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1e6, "ms/pass")
		})
		// One op is one postponed deadline fixed as it comes near the top:
		// every task's deadline was moved two hours later by a Reset (no
		// request), and the owner's passes, at later and later times, find
		// their entries within lookAhead of now but stale, and put each
		// back at its task's deadline. This is the owner's share of the
		// heartbeat path. At most one op per task: -benchtime 1000000x.
		b.Run(fmt.Sprintf("fix/%v", strategy), func(b *testing.B) {
			s, ids, delays := setup(b)
			if b.N > pending {
				b.Skip("at most one fix per task")
			}
			for k, id := range ids {
				if !s.Reset(id, 2*time.Hour+delays[k]) {
					b.Fatal("Reset of a pending task failed")
				}
			}
			whens := make([]int64, 0, pending)
			for _, e := range s.owner.heap.items {
				whens = append(whens, e.when)
			}
			slices.Sort(whens)
			b.ReportAllocs()
			b.ResetTimer()
			for done := 0; done < b.N; done += batch {
				// A pass at a time that brings the next batch of entries
				// within lookAhead; none of their tasks is due.
				s.owner.collectDue(whens[min(done+batch, b.N)-1] - int64(lookAhead))
			}
		})
		// One op is one pass of the owner whose earliest entry is live and
		// within lookAhead of now, not due yet: the owner looks at it and
		// leaves it, the pass every wake-up makes while a deadline is near.
		b.Run(fmt.Sprintf("look/%v", strategy), func(b *testing.B) {
			s, _, _ := setup(b)
			now := s.owner.heap.top().when - int64(lookAhead)/2
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				s.owner.collectDue(now)
			}
		})
		b.Run(fmt.Sprintf("fire/%v", strategy), func(b *testing.B) {
			s, _, _ := setup(b)
			b.ReportAllocs()
			b.ResetTimer()
			for done := 0; done < b.N; done += batch {
				b.StopTimer()
				for range min(batch, b.N-done) {
					s.ScheduleOne(nop, 0)
				}
				s.owner.applyRequests()
				b.StartTimer()
				s.owner.collectDue(s.now()) // pop each due task and hand it to the run queue
				s.owner.flush()
				b.StopTimer()
				s.runner.dropDue(s.runner.q.takeAll(false)) // what runs would do, untimed
			}
			b.ReportMetric(1e9*float64(b.N)/float64(b.Elapsed().Nanoseconds()), "owner-ops/s")
		})
	}
}
