package main

import (
	"container/heap"
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-schedule/schedule/bench/loadtest"
	"github.com/go-schedule/schedule/gnetidle/internal/gnetutil"
	"github.com/panjf2000/gnet/v2"
)

// tickServer is gnet with what its maintainer suggested in gnet#635: the
// server keeps a min-heap of the connections' expiry times, and OnTick
// closes the connections at the top that have expired and returns the
// delay until the next expiry, so that gnet calls it again then.
//
// It is written as a careful gnet user would write it:
//   - OnTick runs on gnet's ticker goroutine, the connections' events on
//     their event loops: the heap is guarded by a mutex.
//   - A read does not touch the heap. It stores the time in the
//     connection (atomically: OnTick reads it), and an expiry found at the
//     top of the heap is first checked against that time and, if the
//     connection has read since, pushed down to its real expiry. The heap
//     is thus fixed about once per connection per timeout, not once per
//     read.
//   - OnTick does not close a connection from the ticker goroutine on the
//     strength of a check made there: a read may be on its way. It hands
//     the connection to its event loop (EventLoop.Execute), which checks
//     again and closes it there, or puts it back into the heap.
//   - With nothing in the heap, OnTick sleeps one timeout: a connection
//     that opens meanwhile expires no earlier than that.
//
// With fixOnRead (mode tickfix) it is written the plain way instead: each
// read takes the mutex and moves the connection down the heap to its new
// expiry, which is what the design costs without the trick above.
type tickServer struct {
	gnet.BuiltinEventEngine
	srv       *gnetutil.Server
	idle      int64     // the timeout, in nanoseconds
	epoch     time.Time // times are nanoseconds since epoch
	fixOnRead bool

	mu   sync.Mutex
	heap expiryHeap

	expired []*tickConn // OnTick's, reused from one call to the next
	conns   atomic.Int64
	closed  atomic.Int64 // closed for idleness
	late    loadtest.Lateness
}

// tickConn is what the server keeps per connection, in its Context.
type tickConn struct {
	c    gnet.Conn
	loop gnet.EventLoop
	srv  *tickServer
	// lastRead is written by the connection's event loop and read by OnTick.
	lastRead atomic.Int64
	// Guarded by the server's mu.
	expires int64
	index   int // in the heap; -1 when not in it
	// Its event loop's.
	closed bool
}

func newTickServer(idle time.Duration, fixOnRead bool) *tickServer {
	return &tickServer{idle: int64(idle), epoch: time.Now(), fixOnRead: fixOnRead}
}

func (s *tickServer) now() int64 { return int64(time.Since(s.epoch)) }

func (s *tickServer) OnOpen(c gnet.Conn) ([]byte, gnet.Action) {
	tc := &tickConn{c: c, loop: c.EventLoop(), srv: s, index: -1}
	now := s.now()
	tc.lastRead.Store(now)
	c.SetContext(tc)
	s.mu.Lock()
	tc.expires = now + s.idle
	heap.Push(&s.heap, tc)
	s.mu.Unlock()
	s.conns.Add(1)
	return nil, gnet.None
}

func (s *tickServer) OnTraffic(c gnet.Conn) gnet.Action {
	tc := c.Context().(*tickConn)
	now := s.now()
	tc.lastRead.Store(now)
	if s.fixOnRead {
		s.mu.Lock()
		if tc.index >= 0 {
			tc.expires = now + s.idle
			heap.Fix(&s.heap, tc.index)
		}
		s.mu.Unlock()
	}
	_, _ = c.Discard(-1)
	return gnet.None
}

func (s *tickServer) OnClose(c gnet.Conn, _ error) gnet.Action {
	tc := c.Context().(*tickConn)
	tc.closed = true
	s.mu.Lock()
	if tc.index >= 0 {
		heap.Remove(&s.heap, tc.index)
	}
	s.mu.Unlock()
	s.conns.Add(-1)
	return gnet.None
}

// OnTick takes the expired connections off the heap, hands each to its
// event loop to be closed, and returns the delay to the next expiry.
func (s *tickServer) OnTick() (time.Duration, gnet.Action) {
	now := s.now()
	s.expired = s.expired[:0]
	s.mu.Lock()
	for s.heap.Len() > 0 {
		top := s.heap[0]
		if top.expires > now {
			break
		}
		if due := top.lastRead.Load() + s.idle; due > now {
			top.expires = due // it has read since it was pushed
			heap.Fix(&s.heap, 0)
			continue
		}
		heap.Pop(&s.heap)
		s.expired = append(s.expired, top)
	}
	delay := s.idle
	if s.heap.Len() > 0 {
		delay = s.heap[0].expires - now
	}
	s.mu.Unlock()
	for i, tc := range s.expired {
		// Execute fails only while the engine shuts down, which closes
		// every connection anyway.
		_ = tc.loop.Execute(context.Background(), tc)
		s.expired[i] = nil
	}
	return time.Duration(delay), gnet.None
}

// Run closes the connection on its event loop if it is still idle, or
// puts it back into the heap if it has read since OnTick looked.
func (tc *tickConn) Run(context.Context) error {
	if tc.closed {
		return nil
	}
	s := tc.srv
	now := s.now()
	if due := tc.lastRead.Load() + s.idle; due > now {
		s.mu.Lock()
		tc.expires = due
		heap.Push(&s.heap, tc)
		s.mu.Unlock()
		return nil
	}
	s.closed.Add(1)
	s.late.Add(time.Duration(now - tc.lastRead.Load() - s.idle))
	return tc.loop.Close(tc.c) // on its own loop: OnClose runs now
}

func (s *tickServer) addr() string      { return s.srv.Addr }
func (s *tickServer) open() int64       { return s.conns.Load() }
func (s *tickServer) idleClosed() int64 { return s.closed.Load() }
func (s *tickServer) lateness() []int64 { return s.late.Micros() }

// expiryHeap is a min-heap of connections by expiry, for container/heap.
type expiryHeap []*tickConn

func (h expiryHeap) Len() int           { return len(h) }
func (h expiryHeap) Less(i, j int) bool { return h[i].expires < h[j].expires }
func (h expiryHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}

func (h *expiryHeap) Push(x any) {
	tc := x.(*tickConn)
	tc.index = len(*h)
	*h = append(*h, tc)
}

func (h *expiryHeap) Pop() any {
	old := *h
	tc := old[len(old)-1]
	old[len(old)-1] = nil
	tc.index = -1
	*h = old[:len(old)-1]
	return tc
}
