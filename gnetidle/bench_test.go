package gnetidle

import (
	"context"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-schedule/schedule"
	"github.com/stretchr/testify/require"
)

// benchConns is how many connections the read benchmarks watch: enough
// that their state does not stay in the processor's caches, as on a busy
// server.
const benchConns = 100_000

// readOrders are the orders in which the read benchmarks visit the
// connections: in memory order, which the processor's prefetcher follows,
// and shuffled, as a server's reads come, so that each read finds its
// connection's state out of the caches.
var readOrders = []struct {
	name    string
	shuffle bool
}{{"in-order", false}, {"shuffled", true}}

// benchReads calls read for connection order[i], i = 0, 1, 2, ... in turn,
// once per iteration.
func benchReads(b *testing.B, shuffle bool, read func(i int)) {
	order := make([]int32, benchConns)
	for i := range order {
		order[i] = int32(i)
	}
	if shuffle {
		r := rand.New(rand.NewPCG(1, 2))
		r.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		read(int(order[i]))
		if i++; i == len(order) {
			i = 0
		}
	}
	b.ReportMetric(benchConns, "conns")
}

// benchScheduler returns a Scheduler shut down when b ends.
func benchScheduler(b *testing.B) *schedule.Scheduler {
	s, err := schedule.New(2)
	require.NoError(b, err)
	b.Cleanup(func() { require.NoError(b, s.ShutdownContext(context.Background())) })
	return s
}

// BenchmarkWatchRead measures the per-read cost, the heartbeat path: a
// Watch's Read, one Reset of the connection's task among many others
// pending.
func BenchmarkWatchRead(b *testing.B) {
	for _, o := range readOrders {
		b.Run(o.name, func(b *testing.B) {
			d, err := New(benchScheduler(b), Timeouts{Reader: time.Hour}, nil)
			require.NoError(b, err)
			l := &fakeLoop{h: &harness{}}
			ws := make([]*Watch, benchConns)
			for i := range ws {
				// One allocation each, as a server's sessions are.
				ws[i] = new(Watch)
				require.NoError(b, d.Start(&fakeConn{loop: l, fd: i}, ws[i]))
			}
			benchReads(b, o.shuffle, func(i int) { ws[i].Read() })
			for _, w := range ws {
				w.Stop()
			}
		})
	}
}

// bareConn is what a server that counts reads with go-schedule directly
// keeps per connection, as idleload's reset server does: the time of its
// last read and its task, beside what a read does not use (the server, the
// connection, its event loop and a flag), 64 bytes in all.
type bareConn struct {
	task     schedule.TaskID
	lastRead atomic.Int64
	_        [48]byte
}

// BenchmarkBareResetRead is BenchmarkWatchRead's baseline: the same read
// written directly on the Scheduler, a time stored and a Reset, with
// nothing of the Detector's.
func BenchmarkBareResetRead(b *testing.B) {
	for _, o := range readOrders {
		b.Run(o.name, func(b *testing.B) {
			s := benchScheduler(b)
			epoch := time.Now()
			cs := make([]*bareConn, benchConns)
			for i := range cs {
				cs[i] = new(bareConn)
				id, err := s.ScheduleWith(func(schedule.TaskID, any) {}, cs[i], time.Hour)
				require.NoError(b, err)
				cs[i].task = id
			}
			benchReads(b, o.shuffle, func(i int) {
				c := cs[i]
				c.lastRead.Store(int64(time.Since(epoch)))
				s.Reset(c.task, time.Hour)
			})
			for _, c := range cs {
				s.CancelTask(c.task)
			}
		})
	}
}
