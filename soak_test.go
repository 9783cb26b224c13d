package schedule_test

import (
	"flag"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-schedule/schedule"
	"github.com/go-schedule/schedule/internal/schedtest"
)

// The soak runs bounded by default (100,000 devices for a few seconds;
// less with -short). With -soak it runs at full scale:
//
//	go test -run '^TestHeapStaysBoundedUnderHeartbeatChurn$' -soak -soak.duration 2m -timeout 30m
var (
	soakFull     = flag.Bool("soak", false, "run the scale soak at full size")
	soakTasks    = flag.Int("soak.tasks", 1_000_000, "pending tasks in the full soak")
	soakDuration = flag.Duration("soak.duration", time.Minute, "how long the full soak re-arms tasks")
)

type soakSize struct {
	devices  int
	duration time.Duration
	phase    time.Duration // mutation time between two checks
}

func soakConfig() soakSize {
	switch {
	case *soakFull:
		return soakSize{*soakTasks, *soakDuration, time.Second}
	case testing.Short():
		return soakSize{20_000, 500 * time.Millisecond, 100 * time.Millisecond}
	}
	return soakSize{100_000, 2 * time.Second, 200 * time.Millisecond}
}

// TestHeapStaysBoundedUnderHeartbeatChurn models a gateway: every device
// has a pending timeout (a tenth of them repeating), and mutator goroutines
// re-arm them with heartbeats, change devices' timeouts (moving deadlines
// both ways), reconnect devices (cancel and schedule anew) and add short
// jobs that do fire. Between bursts it lets the scheduler settle and checks
// the heap: exactly the live tasks with eager cancel, at most 1.25 entries
// per live task with lazy cancel. Every ID handed out must be unique.
func TestHeapStaysBoundedUnderHeartbeatChurn(t *testing.T) {
	cfg := soakConfig()
	for _, st := range schedtest.Strategies {
		t.Run(st.String(), func(t *testing.T) {
			soak(t, st, cfg)
		})
	}
}

func soak(t *testing.T, st schedtest.Strategy, cfg soakSize) {
	s := st.Start(t, 4)
	var err error

	// Device timeouts: mixed, and all far beyond the soak so that no device
	// task fires; the churn is in the re-arming.
	base := max(time.Hour, 4*cfg.duration)
	timeouts := []time.Duration{base, 2 * base, 3 * base, 5 * base, 8 * base}

	n := cfg.devices
	ids := make([]schedule.TaskID, n)
	timeout := make([]uint8, n)
	repeating := make([]bool, n)
	r := rand.New(rand.NewPCG(7, 7))
	schedule1 := func(i int) (schedule.TaskID, error) {
		if repeating[i] {
			return s.Schedule(nop, timeouts[timeout[i]])
		}
		return s.ScheduleOne(nop, timeouts[timeout[i]])
	}
	for i := range n {
		timeout[i] = uint8(r.IntN(len(timeouts)))
		repeating[i] = i%10 == 0
		ids[i], err = schedule1(i)
		require.NoError(t, err)
	}

	const mutators = 4
	issued := make([][]schedule.TaskID, mutators) // every new ID, by mutator
	issued[0] = slices.Clone(ids)
	var shortsScheduled, shortsFired, ops atomic.Int64
	short := func() { shortsFired.Add(1) }

	mutate := func(g int, until time.Time, seed uint64) {
		r := rand.New(rand.NewPCG(seed, uint64(g)))
		lo, hi := g*n/mutators, (g+1)*n/mutators
		for k := 0; ; k++ {
			if k%64 == 0 && time.Now().After(until) {
				return
			}
			ops.Add(1)
			i := lo + r.IntN(hi-lo)
			switch p := r.IntN(100); {
			case p < 70: // heartbeat
				if !s.Reset(ids[i], timeouts[timeout[i]]) {
					assert.Failf(t, "heartbeat", "Reset of pending device %d failed", i)
					return
				}
			case p < 85: // the device gets another timeout
				timeout[i] = uint8(r.IntN(len(timeouts)))
				if !s.Reset(ids[i], timeouts[timeout[i]]) {
					assert.Failf(t, "timeout change", "Reset of pending device %d failed", i)
					return
				}
			case p < 95: // the device reconnects
				if !s.CancelTask(ids[i]) {
					assert.Failf(t, "reconnect", "CancelTask of pending device %d failed", i)
					return
				}
				id, err := schedule1(i)
				if !assert.NoError(t, err) {
					return
				}
				ids[i] = id
				issued[g] = append(issued[g], id)
			default: // a short job that fires
				shortsScheduled.Add(1)
				id, err := s.ScheduleOne(short, time.Duration(r.IntN(20_000))*time.Microsecond)
				if !assert.NoError(t, err) {
					return
				}
				issued[g] = append(issued[g], id)
			}
		}
	}

	start := time.Now()
	worst, worstInFlight := 0.0, 0.0
	for phase := 0; time.Since(start) < cfg.duration && !t.Failed(); phase++ {
		var wg sync.WaitGroup
		until := time.Now().Add(cfg.phase)
		// While the mutators run, the owner lags behind them, so only a
		// loose bound holds: the tight one is checked after each burst.
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(until) {
				stats := s.Stats()
				ratio := float64(stats.HeapEntries) / float64(max(stats.Pending, 1))
				worstInFlight = max(worstInFlight, ratio)
				if st.Kind == schedule.EagerCancel {
					assert.Zero(t, stats.Tombstones, "eager cancel leaves no tombstones")
				}
				if !assert.LessOrEqual(t, ratio, 2.0, "phase %d: heap %d for %d live while re-arming", phase, stats.HeapEntries, stats.Pending) {
					return
				}
				time.Sleep(2 * time.Millisecond)
			}
		}()
		for g := range mutators {
			wg.Add(1)
			go func() {
				defer wg.Done()
				mutate(g, until, uint64(phase))
			}()
		}
		wg.Wait()

		// Quiesce: the short jobs have run, the owner has caught up.
		for wait := time.Now(); shortsFired.Load() < shortsScheduled.Load(); {
			require.Less(t, time.Since(wait), 30*time.Second, "short jobs never ran")
			time.Sleep(time.Millisecond)
		}
		s.Settle()
		s.Settle()
		stats := s.Stats()
		require.Equal(t, n, stats.Pending, "phase %d: every device is pending", phase)
		ratio := float64(stats.HeapEntries) / float64(stats.Pending)
		worst = max(worst, ratio)
		if st.Kind == schedule.EagerCancel {
			assert.Equal(t, stats.Pending, stats.HeapEntries, "phase %d: eager heap holds exactly the live tasks", phase)
			assert.Zero(t, stats.Tombstones, "phase %d", phase)
		} else {
			assert.LessOrEqual(t, stats.HeapEntries, stats.Pending*5/4,
				"phase %d: lazy heap holds %.3f entries per live task", phase, ratio)
			assert.Equal(t, stats.Pending+stats.Tombstones, stats.HeapEntries, "phase %d", phase)
		}
	}
	t.Logf("%v: %d devices, %d operations in %v, worst heap/live %.3f settled, %.3f while re-arming",
		st, n, ops.Load(), time.Since(start).Round(time.Millisecond), worst, worstInFlight)

	var all []schedule.TaskID
	for _, ids := range issued {
		all = append(all, ids...)
	}
	assertUniqueIDs(t, all)
}
