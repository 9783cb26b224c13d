package gnetidle

import (
	"sync"
	"sync/atomic"

	"github.com/panjf2000/gnet/v2"
)

// WatchOf returns the Watch of c, from Start (or Wrap's OnOpen) to its Stop
// (or Wrap's OnClose), and nil when c is not watched: the handle through
// which a wrapped handler reports writes (WatchOf(c).Wrote()) and sets
// c's own timeouts. The methods of a nil Watch do nothing, so the result
// needs no check. Call it on c's event loop.
func (d *Detector) WatchOf(c gnet.Conn) *Watch {
	if c == nil {
		return nil
	}
	w := d.conns.load(c.Fd())
	if w == nil || w.conn != c {
		return nil
	}
	return w
}

// connTable holds the watches of connections, indexed by file descriptor:
// a slice of chunks of slots, grown as descriptors grow. Each slot is
// written by the event loop of the connection that holds the descriptor,
// in its OnOpen and OnClose. gnet calls OnClose before it closes the
// descriptor, and the kernel hands a descriptor to a new connection only
// once it is closed, so two event loops never use one slot at once.
// TestGnetCallsOnCloseBeforeClosingTheDescriptor pins that order of gnet's. Reads and writes of slots take no
// lock; growing the slice takes mu and publishes a new slice.
type connTable struct {
	mu     sync.Mutex
	chunks atomic.Pointer[[]atomic.Pointer[tableChunk]]
}

// chunkBits sets the slots per chunk: 1,024 slots, 8 KiB, so that a
// server with few connections pays little and one with many allocates a
// chunk per thousand descriptors.
const chunkBits = 10

type tableChunk [1 << chunkBits]atomic.Pointer[Watch]

// load returns the Watch stored for fd, or nil.
func (t *connTable) load(fd int) *Watch {
	if fd < 0 {
		return nil
	}
	cs := t.chunks.Load()
	if cs == nil || fd>>chunkBits >= len(*cs) {
		return nil
	}
	c := (*cs)[fd>>chunkBits].Load()
	if c == nil {
		return nil
	}
	return c[fd&(1<<chunkBits-1)].Load()
}

// store stores w for fd, growing the table as needed.
func (t *connTable) store(fd int, w *Watch) {
	if fd < 0 {
		return
	}
	t.chunk(fd >> chunkBits)[fd&(1<<chunkBits-1)].Store(w)
}

// remove clears fd's slot if it holds w.
func (t *connTable) remove(fd int, w *Watch) {
	cs := t.chunks.Load()
	if fd < 0 || cs == nil || fd>>chunkBits >= len(*cs) {
		return
	}
	if c := (*cs)[fd>>chunkBits].Load(); c != nil {
		c[fd&(1<<chunkBits-1)].CompareAndSwap(w, nil)
	}
}

// chunk returns chunk i, making it (and room for it) if needed.
func (t *connTable) chunk(i int) *tableChunk {
	if cs := t.chunks.Load(); cs != nil && i < len(*cs) {
		if c := (*cs)[i].Load(); c != nil {
			return c
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	cs := t.chunks.Load()
	if cs == nil || i >= len(*cs) {
		n := 0
		if cs != nil {
			n = len(*cs)
		}
		grown := make([]atomic.Pointer[tableChunk], max(i+1, 2*n))
		for j := range n {
			grown[j].Store((*cs)[j].Load())
		}
		t.chunks.Store(&grown)
		cs = &grown
	}
	c := (*cs)[i].Load()
	if c == nil {
		c = new(tableChunk)
		(*cs)[i].Store(c)
	}
	return c
}
