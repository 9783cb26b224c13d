package schedule_test

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-schedule/schedule"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
	for _, strategy := range bothStrategies {
		t.Run(strategy.String(), func(t *testing.T) {
			soak(t, strategy, cfg)
		})
	}
}

func soak(t *testing.T, strategy schedule.CancelStrategy, cfg soakSize) {
	s, err := newForStrategy(strategy, 4)
	require.NoError(t, err)
	defer func() { assert.NoError(t, s.ShutdownContext(context.Background())) }()

	// Device timeouts: mixed, and all far beyond the soak so that no device
	// task fires; the churn is in the re-arming.
	base := max(time.Hour, 4*cfg.duration)
	timeouts := []time.Duration{base, 2 * base, 3 * base, 5 * base, 8 * base}
	nop := func() {}

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
				st := s.Stats()
				ratio := float64(st.HeapEntries) / float64(max(st.Pending, 1))
				worstInFlight = max(worstInFlight, ratio)
				if strategy == schedule.EagerCancel {
					assert.Zero(t, st.Tombstones, "eager cancel leaves no tombstones")
				}
				if !assert.LessOrEqual(t, ratio, 2.0, "phase %d: heap %d for %d live while re-arming", phase, st.HeapEntries, st.Pending) {
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
		st := s.Stats()
		require.Equal(t, n, st.Pending, "phase %d: every device is pending", phase)
		ratio := float64(st.HeapEntries) / float64(st.Pending)
		worst = max(worst, ratio)
		if strategy == schedule.EagerCancel {
			assert.Equal(t, st.Pending, st.HeapEntries, "phase %d: eager heap holds exactly the live tasks", phase)
			assert.Zero(t, st.Tombstones, "phase %d", phase)
		} else {
			assert.LessOrEqual(t, st.HeapEntries, st.Pending*5/4,
				"phase %d: lazy heap holds %.3f entries per live task", phase, ratio)
			assert.Equal(t, st.Pending+st.Tombstones, st.HeapEntries, "phase %d", phase)
		}
	}
	t.Logf("%v: %d devices, %d operations in %v, worst heap/live %.3f settled, %.3f while re-arming",
		strategy, n, ops.Load(), time.Since(start).Round(time.Millisecond), worst, worstInFlight)

	var all []schedule.TaskID
	for _, ids := range issued {
		all = append(all, ids...)
	}
	assertUniqueIDs(t, all)
}

// assertUniqueIDs fails if any ID is 0 or appears twice.
func assertUniqueIDs(t *testing.T, ids []schedule.TaskID) {
	t.Helper()
	slices.Sort(ids)
	if len(ids) > 0 {
		assert.NotZero(t, ids[0], "TaskID 0 handed out")
	}
	for k := 1; k < len(ids); k++ {
		if ids[k] == ids[k-1] {
			assert.Failf(t, "TaskID reused", "%#x handed out twice", ids[k])
			return
		}
	}
}

// TestTaskIDsAreNeverReusedWhenSlotsAre churns one task at a time, so the
// scheduler recycles the same storage over and over, and checks every ID it
// hands out is new.
func TestTaskIDsAreNeverReusedWhenSlotsAre(t *testing.T) {
	n := 200_000
	if testing.Short() {
		n = 20_000
	}
	if *soakFull {
		n = 5_000_000
	}
	for _, strategy := range bothStrategies {
		t.Run(strategy.String(), func(t *testing.T) {
			s, err := newForStrategy(strategy, 1)
			require.NoError(t, err)
			defer func() { assert.NoError(t, s.ShutdownContext(context.Background())) }()
			ids := make([]schedule.TaskID, 0, n)
			for i := range n {
				id, err := s.ScheduleOne(func() {}, time.Hour)
				require.NoError(t, err)
				require.True(t, s.CancelTask(id))
				ids = append(ids, id)
				if i%1000 == 0 {
					s.Settle() // let freed storage be reused
				}
			}
			assertUniqueIDs(t, ids)
		})
	}
}

// TestLazyHeapStaysWithinAQuarterOverLive checks the lazy bound exactly, in
// fake time, once the owner has seen every change: the heap holds at most
// 1.25 entries per live task, however the tombstones came about.
func TestLazyHeapStaysWithinAQuarterOverLive(t *testing.T) {
	const live = 1000
	tests := []struct {
		name string
		// make leaves live pending tasks and some tombstones behind.
		make func(t *testing.T, s *schedule.Scheduler)
	}{
		{"deadlines moved earlier", func(t *testing.T, s *schedule.Scheduler) {
			ids := scheduleMany(t, s, live)
			for _, id := range ids[:330] {
				require.True(t, s.Reset(id, 30*time.Minute))
			}
		}},
		{"tasks cancelled", func(t *testing.T, s *schedule.Scheduler) {
			ids := scheduleMany(t, s, live+300)
			for _, id := range ids[:300] {
				require.True(t, s.CancelTask(id))
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := newBubbleScheduler(t, schedule.LazyCancel, 1)
				tc.make(t, s)
				synctest.Wait()
				// One more request makes sure the owner has run a full
				// iteration after the last change.
				_, err := s.ScheduleOne(func() {}, 2*time.Hour)
				require.NoError(t, err)
				st := settledStats(s)
				require.Equal(t, live+1, st.Pending)
				assert.LessOrEqual(t, st.HeapEntries, st.Pending*5/4,
					fmt.Sprintf("%d entries for %d live tasks (%d tombstones)", st.HeapEntries, st.Pending, st.Tombstones))
			})
		})
	}
}

// scheduleMany schedules n one-shots an hour out and waits for the owner to
// take them in, so that the tombstones made next are measured against a
// full heap.
func scheduleMany(t *testing.T, s *schedule.Scheduler, n int) []schedule.TaskID {
	ids := make([]schedule.TaskID, n)
	for i := range ids {
		var err error
		ids[i], err = s.ScheduleOne(func() {}, time.Hour)
		require.NoError(t, err)
	}
	synctest.Wait()
	return ids
}
