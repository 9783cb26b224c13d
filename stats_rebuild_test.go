package schedule_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-schedule/schedule"
)

// A lazy scheduler that rebuilds its heap to give slab chunks back
// publishes the rebuilt heap's size before it sleeps: with the owner
// asleep, HeapEntries less Tombstones is the pending count. Cancelling a
// batch of tasks that filled chunks of their own, round after round, makes
// the owner rebuild for the chunks (rather than for the tombstones' share)
// in some rounds; before the fix those rounds left HeapEntries at its size
// before the rebuild while Tombstones had dropped already.
func TestHeapEntriesCountTheHeapAfterARebuildForTrim(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const pending, batch, rounds = 3000, 3000, 20
		s, err := schedule.New(2, schedule.WithCancelStrategy(schedule.LazyCancel))
		require.NoError(t, err)
		defer s.Shutdown()
		for i := range pending {
			_, err := s.ScheduleOne(nop, time.Hour+time.Duration(i)*time.Millisecond)
			require.NoError(t, err)
		}
		ids := make([]schedule.TaskID, batch)
		for r := range rounds {
			for i := range ids {
				ids[i], err = s.ScheduleOne(nop, 2*time.Hour+time.Duration(i)*time.Millisecond)
				require.NoError(t, err)
			}
			settledStats(s)
			for _, id := range ids {
				require.True(t, s.CancelTask(id))
			}
			st := settledStats(s)
			require.Equal(t, pending, st.Pending, "round %d", r)
			require.Equal(t, st.Pending, st.HeapEntries-st.Tombstones,
				"round %d: heap entries %d, tombstones %d", r, st.HeapEntries, st.Tombstones)
		}
	})
}
