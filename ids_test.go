package schedule_test

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-schedule/schedule"
	"github.com/go-schedule/schedule/internal/schedtest"
)

// Tests of TaskIDs: never 0, never handed out twice, and meaningless to
// any other Scheduler. The soak (soak_test.go) and the model
// (model_test.go) check every ID they are handed too.

// assertUniqueIDs fails if any ID is 0 or appears twice. It sorts ids.
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

// TestTaskIDsAreNeverReusedWhenSlotsAre churns one task at a time, so that
// the scheduler recycles the same storage over and over: every other task
// runs at once and frees its slot when its run ends, the others are
// cancelled. Every ID handed out must be new, and none may be 0. It runs
// in real time, bounded by default and at full size with -soak.
func TestTaskIDsAreNeverReusedWhenSlotsAre(t *testing.T) {
	n := 200_000
	if testing.Short() {
		n = 20_000
	}
	if *soakFull {
		n = 5_000_000
	}
	for _, st := range schedtest.Strategies {
		t.Run(st.String(), func(t *testing.T) {
			s := st.Start(t, 1)
			ids := make([]schedule.TaskID, 0, n)
			for i := range n {
				if i%2 == 0 {
					id, err := s.ScheduleOne(nop, 0) // runs, and its run frees the slot
					require.NoError(t, err)
					ids = append(ids, id)
					continue
				}
				id, err := s.ScheduleOne(nop, time.Hour)
				require.NoError(t, err)
				require.True(t, s.CancelTask(id))
				ids = append(ids, id)
				if i%1000 == 1 {
					s.Settle() // let freed storage be reused
				}
			}
			assertUniqueIDs(t, ids)
		})
	}
}

func TestIDsOfOneSchedulerDoNotNameTasksOfAnother(t *testing.T) {
	for _, st := range schedtest.Strategies {
		t.Run(st.String(), func(t *testing.T) {
			a := st.Start(t, 1)
			b := st.Start(t, 1)
			const n = 1000
			idsA := make([]schedule.TaskID, n)
			for i := range n {
				var err error
				idsA[i], err = a.ScheduleOne(nop, time.Hour)
				require.NoError(t, err)
				_, err = b.ScheduleOne(nop, time.Hour)
				require.NoError(t, err)
			}
			for _, id := range idsA {
				assert.False(t, b.Reset(id, time.Minute), "b.Reset(%#x) of a's ID", id)
				assert.False(t, b.CancelTask(id), "b.CancelTask(%#x) of a's ID", id)
			}
			assert.Equal(t, n, b.Len())
			assert.Equal(t, n, a.Len())
		})
	}
}
