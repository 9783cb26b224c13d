package heartbeat_test

import (
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/go-schedule/schedule"
	"github.com/go-schedule/schedule/heartbeat"
	"github.com/go-schedule/schedule/internal/schedtest"
)

// The model test: goroutines make random Beat, Watch and Forget calls on a
// set of keys while expiries run on the workers, and every outcome is
// checked against a model of each key's watch.
//
// It runs in a synctest bubble, so fake time moves only when every
// goroutine is blocked. Calls are made at whole milliseconds and every
// timeout is a whole number of milliseconds, so deadlines, and the
// expiries that keep to them, also fall on whole milliseconds, and the
// expiries due at an instant run while calls are made at that instant.
// From time to time the test holds every worker with a job that sleeps
// from one half millisecond to another: deadlines that pass meanwhile wait
// in the queue, calls made meanwhile meet those queued expiries, and the
// queue drains at the end of the hold, when no call is being made.
//
// Each key's model and its calls are serialized by the key's mutex, which
// expired also takes. Every outcome is then determined, except for a call
// on a key whose deadline is that very instant outside a hold (the expiry
// may or may not have taken the key yet); such calls are skipped.
// TestBeatsAtTheDeadlineInstantNeitherLoseAWatchNorExpireItTwice covers
// that instant.

const (
	modelKeys       = 64
	modelGoroutines = 8
	modelDuration   = 2 * time.Second
	modelTimeout    = 12 * time.Millisecond
	modelWorkers    = 2
	// betweenInstants is a quarter millisecond: calls and on-time expiries
	// happen at whole milliseconds, holds start and end half a millisecond
	// after one, and the checks run a quarter millisecond after one, when
	// nothing else does.
	betweenInstants = 250 * time.Microsecond
)

var modelOwnTimeouts = []time.Duration{3 * time.Millisecond, 7 * time.Millisecond, modelTimeout, 25 * time.Millisecond}

func TestModelConcurrentBeatsWatchesAndForgets(t *testing.T) {
	t.Run("uint64", func(t *testing.T) {
		runModel(t, func(i int) uint64 { return uint64(i) * 0x9e3779b97f4a7c15 })
	})
	t.Run("string", func(t *testing.T) {
		runModel(t, func(i int) string { return "device-" + strconv.Itoa(i) })
	})
}

// watchModel is the expected state of one key.
type watchModel struct {
	mu       sync.Mutex
	watched  bool
	deadline time.Time
	timeout  time.Duration // of the current watch
	rng      *rand.Rand    // for decisions inside expired

	// Watches of the key: started, and ended by expiry or by Forget.
	started, expired, forgotten int
}

// hold is a span of fake time during which every worker was busy.
type hold struct{ start, end time.Time }

type model[K comparable] struct {
	t     *testing.T
	m     *heartbeat.Monitor[K]
	keys  []K
	index map[K]int
	state []watchModel

	holdMu sync.Mutex
	holds  []hold

	// What the run exercised, to show it covered the interesting cases.
	skipped, wonInHold, forgotInHold, lateExpiries, rewatched atomic.Int64
}

func runModel[K comparable](t *testing.T, key func(int) K) {
	schedtest.EachStrategy(t, modelWorkers, func(t *testing.T, s *schedule.Scheduler) {
		md := &model[K]{t: t, index: map[K]int{}, state: make([]watchModel, modelKeys)}
		for i := range modelKeys {
			md.keys = append(md.keys, key(i))
			md.index[key(i)] = i
			md.state[i].rng = rand.New(rand.NewPCG(uint64(i), 1))
		}
		md.m = newMonitor(t, s, modelTimeout, md.expired)
		start := time.Now()

		var wg sync.WaitGroup
		for g := range modelGoroutines {
			r := rand.New(rand.NewPCG(uint64(g), 2))
			wg.Go(func() {
				for time.Since(start) < modelDuration {
					time.Sleep(time.Duration(r.IntN(5)) * time.Millisecond)
					md.call(r)
				}
			})
		}

		// This goroutine checks Len between instants and starts the holds,
		// one at a time.
		r := rand.New(rand.NewPCG(99, 3))
		var lastEnd time.Time
		time.Sleep(betweenInstants)
		for time.Since(start) < modelDuration {
			md.checkLen(s)
			if time.Now().After(lastEnd) && r.IntN(30) == 0 {
				time.Sleep(betweenInstants) // to half a millisecond past
				d := time.Duration(3+r.IntN(25)) * time.Millisecond
				lastEnd = time.Now().Add(d)
				md.holdMu.Lock()
				md.holds = append(md.holds, hold{time.Now(), lastEnd})
				md.holdMu.Unlock()
				for range modelWorkers {
					_, err := s.ScheduleOne(func() { time.Sleep(d) }, 0)
					assert.NoError(t, err)
				}
				synctest.Wait()
				assert.Equal(t, modelWorkers, s.Stats().Running, "the hold occupies every worker")
				time.Sleep(3 * betweenInstants) // to the next quarter past
				continue
			}
			time.Sleep(time.Millisecond)
		}
		wg.Wait()
		schedtest.Advance(100 * time.Millisecond) // past every deadline and every hold
		md.checkLen(s)

		var total struct{ started, expired, forgotten int }
		for i := range md.state {
			st := &md.state[i]
			st.mu.Lock()
			assert.False(t, st.watched, "key %v still watched", md.keys[i])
			assert.Equal(t, st.started, st.expired+st.forgotten,
				"key %v: every watch ends exactly one way", md.keys[i])
			total.started += st.started
			total.expired += st.expired
			total.forgotten += st.forgotten
			st.mu.Unlock()
		}
		assert.Equal(t, 0, md.m.Len())
		assert.Equal(t, 0, s.Len())
		t.Logf("watches %d: expired %d, forgotten %d; Beat or Watch won over a queued expiry %d, Forget %d; late expiries %d; re-watched from expired %d; calls skipped %d; holds %d",
			total.started, total.expired, total.forgotten, md.wonInHold.Load(), md.forgotInHold.Load(),
			md.lateExpiries.Load(), md.rewatched.Load(), md.skipped.Load(), len(md.holds))
		for name, n := range map[string]int64{
			"expiries":                   int64(total.expired),
			"forgotten watches":          int64(total.forgotten),
			"wins over a queued expiry":  md.wonInHold.Load(),
			"forgets of a queued expiry": md.forgotInHold.Load(),
			"late expiries":              md.lateExpiries.Load(),
			"re-watches from expired":    md.rewatched.Load(),
		} {
			assert.Positive(t, n, "the run must exercise %s", name)
		}
	})
}

// heldAt returns the hold that spans the instant at, if any.
func (md *model[K]) heldAt(at time.Time) (hold, bool) {
	md.holdMu.Lock()
	defer md.holdMu.Unlock()
	for _, h := range md.holds {
		if h.start.Before(at) && at.Before(h.end) {
			return h, true
		}
	}
	return hold{}, false
}

// call makes one random call on a random key and checks it against the model.
func (md *model[K]) call(r *rand.Rand) {
	i := r.IntN(len(md.keys))
	key, st := md.keys[i], &md.state[i]
	now := time.Now()
	st.mu.Lock()
	defer st.mu.Unlock()

	h, held := md.heldAt(now)
	queued := st.watched && !st.deadline.After(now) // its expiry is due
	switch {
	case !queued:
	case !held && st.deadline.Equal(now):
		md.skipped.Add(1) // the expiry may or may not have taken the key yet
		return
	case !held || st.deadline.Before(h.start):
		md.t.Errorf("key %v: deadline passed %v ago without expiry", key, now.Sub(st.deadline))
		return
	}
	switch p := r.IntN(10); {
	case p < 6:
		if err := md.m.Beat(key); err != nil {
			md.t.Errorf("Beat(%v): %v", key, err)
			return
		}
		if !st.watched {
			st.begin(now, modelTimeout)
		} else {
			st.deadline = now.Add(st.timeout)
		}
	case p < 8:
		timeout := modelOwnTimeouts[r.IntN(len(modelOwnTimeouts))]
		if err := md.m.Watch(key, timeout); err != nil {
			md.t.Errorf("Watch(%v): %v", key, err)
			return
		}
		if !st.watched {
			st.begin(now, timeout)
		} else {
			st.timeout, st.deadline = timeout, now.Add(timeout)
		}
	default:
		if got := md.m.Forget(key); got != st.watched {
			md.t.Errorf("Forget(%v) = %v, want %v", key, got, st.watched)
		}
		if st.watched {
			st.watched = false
			st.forgotten++
		}
		if queued {
			md.forgotInHold.Add(1)
		}
		return
	}
	if queued {
		md.wonInHold.Add(1)
	}
}

func (st *watchModel) begin(now time.Time, timeout time.Duration) {
	st.watched = true
	st.started++
	st.timeout, st.deadline = timeout, now.Add(timeout)
}

// expired is the Monitor's expired function: the key must be watched and
// due, either at exactly its deadline or, for a deadline that passed
// during a hold, at the end of the hold.
func (md *model[K]) expired(key K) {
	now := time.Now()
	st := &md.state[md.index[key]]
	st.mu.Lock()
	defer st.mu.Unlock()
	if !st.watched {
		md.t.Errorf("expired(%v) with no watch, or twice for one", key)
		return
	}
	if now.Before(st.deadline) {
		md.t.Errorf("expired(%v) %v before its deadline", key, st.deadline.Sub(now))
		return
	}
	if now.After(st.deadline) {
		h, held := md.heldAt(st.deadline)
		if !held || !now.Equal(h.end) {
			md.t.Errorf("expired(%v) %v late, not at the end of a hold", key, now.Sub(st.deadline))
		}
		md.lateExpiries.Add(1)
	}
	st.watched = false
	st.expired++
	if now.Equal(st.deadline) && st.rng.IntN(4) == 0 {
		// Watch the key again from inside expired (only on a whole
		// millisecond, so that its next deadline is one too).
		if err := md.m.Beat(key); err != nil {
			md.t.Errorf("Beat(%v) inside expired: %v", key, err)
			return
		}
		st.begin(now, modelTimeout)
		md.rewatched.Add(1)
	}
}

// checkLen compares Len with the model at an instant when no call is made
// and no expiry runs.
func (md *model[K]) checkLen(s *schedule.Scheduler) {
	now := time.Now()
	watched, pending := 0, 0
	for i := range md.state {
		st := &md.state[i]
		st.mu.Lock()
		if st.watched {
			watched++
			if st.deadline.After(now) {
				pending++
			}
		}
		st.mu.Unlock()
	}
	assert.Equal(md.t, watched, md.m.Len(), "Len")
	assert.Equal(md.t, pending, s.Len(), "the scheduler's pending tasks: one per watch not yet due")
}
