package schedule_test

import (
	"testing"
	"time"

	"github.com/go-schedule/schedule"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPostponedDeadlinesDoNotWakeTheOwner runs heartbeats only: 1,000 keys,
// each reset every 2 s with a 3 s timeout, for one minute of fake time, so
// that no deadline ever comes due. Every Reset postpones a deadline the heap
// still holds at its old instant; the owner may wake to fix such entries in
// bulk, at most 20 times a second, but not once per stale entry that reaches
// the top.
func TestPostponedDeadlinesDoNotWakeTheOwner(t *testing.T) {
	const (
		keys     = 1000
		timeout  = 3 * time.Second
		every    = 2 * time.Second
		step     = 10 * time.Millisecond // the driver resets keys/(every/step) keys per step
		duration = time.Minute
		maxRate  = 20 // wake-ups a second
	)
	bubblePerStrategy(t, func(t *testing.T, strategy schedule.CancelStrategy) {
		s := newBubbleScheduler(t, strategy, 4)
		expired := 0
		ids := make([]schedule.TaskID, keys)
		for i := range ids {
			id, err := s.ScheduleOne(func() { expired++ }, timeout)
			require.NoError(t, err)
			ids[i] = id
		}
		perStep := keys / int(every/step)
		before := s.Stats().Wakeups
		next := 0
		for elapsed := time.Duration(0); elapsed < duration; elapsed += step {
			time.Sleep(step)
			for range perStep {
				require.True(t, s.Reset(ids[next], timeout), "key %d is pending", next)
				next = (next + 1) % keys
			}
		}
		wakeups := s.Stats().Wakeups - before
		assert.Zero(t, expired, "no key fell silent")
		assert.LessOrEqual(t, wakeups, uint64(maxRate*duration/time.Second),
			"owner wake-ups over %v of heartbeats", duration)
		t.Logf("%s: %d wake-ups in %v", strategy, wakeups, duration)
	})
}
