package netdeadline_test

import (
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-schedule/schedule/netdeadline"
)

// TestMillionsOfDeadlinesRetainNothing moves the deadlines of 100
// connections two million times in all (a fifth as many under the race
// detector), from four goroutines, as a server moving them per packet
// would. Each connection holds one task throughout, scheduled once; after
// Close the scheduler holds no task, no heap entry and no connection.
func TestMillionsOfDeadlinesRetainNothing(t *testing.T) {
	s := newScheduler(t)
	ln := listen(t)
	const conns, goroutines = 100, 4
	calls := 2_000_000
	if raceEnabled {
		calls /= 5
	}
	var collected atomic.Int64
	cs := make([]*netdeadline.Conn, conns)
	for i := range cs {
		client, _ := dialRaw(t, ln)
		c, err := netdeadline.NewConn(client, s)
		require.NoError(t, err)
		runtime.AddCleanup(c, func(*atomic.Int64) { collected.Add(1) }, &collected)
		cs[i] = c
	}
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(g), 0))
			for range calls / goroutines {
				c := cs[r.IntN(conns)]
				dl := time.Now().Add(time.Hour + time.Duration(r.IntN(1000))*time.Millisecond)
				var err error
				switch r.IntN(4) {
				case 0:
					err = c.SetReadDeadline(dl)
				case 1:
					err = c.SetWriteDeadline(dl)
				default:
					err = c.SetDeadline(dl)
				}
				if err != nil {
					assert.NoError(t, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	st := s.Stats()
	assert.Equal(t, conns, st.Pending)
	assert.Equal(t, uint64(conns), st.Scheduled, "one task per connection, however often it moves")

	for i, c := range cs {
		require.NoError(t, c.Close())
		cs[i] = nil
	}
	assert.Zero(t, s.Len())
	assert.Eventually(t, func() bool { return s.Stats().HeapEntries == 0 }, wait, time.Millisecond)
	assertCollected(t, &collected, conns)
}

func TestSetDeadlineAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	c, _ := pair(t, newScheduler(t))
	now := time.Now()
	i := 0
	allocs := testing.AllocsPerRun(10_000, func() {
		i++
		_ = c.SetDeadline(now.Add(time.Hour + time.Duration(i)))
	})
	assert.Zero(t, allocs)
}
