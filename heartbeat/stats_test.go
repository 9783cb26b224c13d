package heartbeat_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-schedule/schedule"
	"github.com/go-schedule/schedule/internal/schedtest"
)

// Expired counts the watches that ended in a call of expired, and nothing
// else: not the keys forgotten, not the deadlines a Beat overtook.
func TestExpiredCountsOnlyTheCallsOfExpired(t *testing.T) {
	const timeout = time.Second
	schedtest.EachStrategy(t, 2, func(t *testing.T, s *schedule.Scheduler) {
		rec := newExpiries[int]()
		m := newMonitor(t, s, timeout, rec.expired)
		for k := range 5 {
			require.NoError(t, m.Beat(k))
		}
		require.True(t, m.Forget(0))
		schedtest.Advance(timeout / 2)
		require.NoError(t, m.Beat(1)) // pushed out: expires half a timeout later
		assert.Zero(t, m.Expired(), "nothing expired yet")

		schedtest.Advance(timeout / 2)
		assert.Equal(t, uint64(3), m.Expired(), "keys 2, 3 and 4")
		assert.Len(t, rec.list(), 3)
		assert.Equal(t, 1, m.Len())

		schedtest.Advance(timeout / 2)
		assert.Equal(t, uint64(4), m.Expired(), "key 1 too")
		assert.Equal(t, uint64(4), m.Expired(), "reading changes nothing")
		assert.Zero(t, m.Len())
	})
}
