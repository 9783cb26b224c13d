package schedule

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// White-box tests of the inbox (inbox.go): which requests wake the owner,
// and deadlines moved earlier far ahead, which need no request at all.

// TestRequestsWakeTheOwnerOnlyWhenTheyCannotWait checks the inbox
// handshake: while the owner sleeps on a timer, requests for later
// deadlines leave it asleep, one for an earlier deadline wakes it, and
// Stats has it apply what was left waiting.
func TestRequestsWakeTheOwnerOnlyWhenTheyCannotWait(t *testing.T) {
	eachCancelStrategy(t, func(t *testing.T, strategy CancelStrategy) {
		synctest.Test(t, func(t *testing.T) {
			s, err := New(1, WithCancelStrategy(strategy))
			require.NoError(t, err)
			defer s.Shutdown()
			fired := make(chan time.Duration, 2)
			start := time.Now()
			job := func() { fired <- time.Since(start) }
			_, err = s.ScheduleOne(job, time.Hour)
			require.NoError(t, err)
			synctest.Wait()
			require.Equal(t, time.Hour.Nanoseconds(), s.inbox.sleepUntil.Load())
			wakeups := s.owner.wakeups.Load()

			later, err := s.ScheduleOne(nop, 2*time.Hour)
			require.NoError(t, err)
			require.True(t, s.Reset(later, 3*time.Hour))
			require.True(t, s.Reset(later, 90*time.Minute)) // earlier, but after the timer
			synctest.Wait()
			assert.Equal(t, wakeups, s.owner.wakeups.Load(), "requests after the owner's timer woke it")
			assert.Equal(t, 2, s.Len())

			_, err = s.ScheduleOne(job, time.Minute)
			require.NoError(t, err)
			synctest.Wait()
			assert.Greater(t, s.owner.wakeups.Load(), wakeups, "a nearer deadline did not wake the owner")
			assert.Equal(t, time.Minute.Nanoseconds(), s.inbox.sleepUntil.Load())
			assert.Equal(t, 3, s.Stats().HeapEntries-s.Stats().Tombstones, "every request applied")

			time.Sleep(time.Hour)
			synctest.Wait()
			assert.Equal(t, time.Minute, <-fired)
			assert.Equal(t, time.Hour, <-fired)
		})
	})
}

// TestFarEarlierResetsWaitForOnePassOverTheHeap checks deferMoves: a move
// earlier to a second or more out sends the owner no request and leaves
// the heap as it was, and the owner fixes every such entry once the
// earliest comes due, so that the tasks run in deadline order.
func TestFarEarlierResetsWaitForOnePassOverTheHeap(t *testing.T) {
	eachCancelStrategy(t, func(t *testing.T, strategy CancelStrategy) {
		s := bare(strategy)
		var ids []TaskID
		for range 5 {
			id, err := s.ScheduleOne(nop, 3*time.Hour)
			require.NoError(t, err)
			ids = append(ids, id)
		}
		s.step(0)
		require.Equal(t, never, s.inbox.movedEarlier.Load())

		require.True(t, s.Reset(ids[3], 2*time.Hour))
		require.True(t, s.Reset(ids[1], time.Hour))
		assert.False(t, s.inbox.waiting(), "a far move sent a request")
		assert.InDelta(t, int64(time.Hour), s.inbox.movedEarlier.Load(), float64(time.Minute))
		s.step(0)
		assert.Equal(t, 5, s.owner.heap.len(), "entries added for far moves")
		assert.GreaterOrEqual(t, s.owner.heap.top().when, int64(3*time.Hour), "the heap was fixed before a move came due")

		s.step(int64(time.Hour) + int64(time.Minute))
		assert.Equal(t, never, s.inbox.movedEarlier.Load())
		s.step(int64(4 * time.Hour))
		var got []TaskID
		for _, d := range s.runner.q.items[s.runner.q.head:] {
			got = append(got, s.slab.id(d.slot, s.slab.at(d.slot).gen.Load()))
		}
		require.Len(t, got, 5)
		assert.Equal(t, []TaskID{ids[1], ids[3]}, got[:2])
	})
}
