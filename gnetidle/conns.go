package gnetidle

import (
	"sync"
	"sync/atomic"

	"github.com/panjf2000/gnet/v2"
)

// Opened starts watching c with the default timeouts, counting it as
// active now: call it in OnOpen, and Closed in OnClose. The Detector keeps
// c's Watch itself, found by c's file descriptor, so c's Context stays the
// server's. It returns the errors of Start.
func (d *Detector) Opened(c gnet.Conn) error { return d.OpenedWith(c, d.def) }

// OpenedWith is Opened with timeouts of c's own in place of the defaults.
// It returns the errors of StartWith, and ErrWatchUsed when c is watched
// already.
func (d *Detector) OpenedWith(c gnet.Conn, t Timeouts) error {
	if d.lookup(c) != nil {
		return ErrWatchUsed
	}
	w := new(Watch)
	if err := d.StartWith(c, w, t); err != nil {
		return err
	}
	d.conns.store(c.Fd(), w)
	return nil
}

// Read counts a read on c, as Watch.Read does: call it in OnTraffic, once
// per call. It does nothing for a connection that is not watched.
func (d *Detector) Read(c gnet.Conn) {
	if w := d.lookup(c); w != nil {
		w.Read()
	}
}

// Wrote counts a write on c, as Watch.Wrote does. It does nothing for a
// connection that is not watched.
func (d *Detector) Wrote(c gnet.Conn) {
	if w := d.lookup(c); w != nil {
		w.Wrote()
	}
}

// SetTimeouts replaces c's timeouts, as Watch.SetTimeouts does. It returns
// ErrNotWatched for a connection that is not watched.
func (d *Detector) SetTimeouts(c gnet.Conn, t Timeouts) error {
	w := d.lookup(c)
	if w == nil {
		return ErrNotWatched
	}
	return w.SetTimeouts(t)
}

// Timeouts returns c's timeouts, and false when c is not watched.
func (d *Detector) Timeouts(c gnet.Conn) (Timeouts, bool) {
	w := d.lookup(c)
	if w == nil {
		return Timeouts{}, false
	}
	return w.Timeouts(), true
}

// Closed stops watching c and forgets it: call it in OnClose. Nothing of c
// stays behind. It does nothing for a connection that is not watched.
func (d *Detector) Closed(c gnet.Conn) {
	if c == nil {
		return
	}
	fd := c.Fd()
	w := d.conns.load(fd)
	if w == nil || w.conn != c {
		return
	}
	w.Stop()
	d.conns.remove(fd, w)
}

// lookup returns the Watch of c, or nil.
func (d *Detector) lookup(c gnet.Conn) *Watch {
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
// in its OnOpen and OnClose; the kernel hands a descriptor to a new
// connection only once the old one's OnClose has returned, so two event
// loops never use one slot at once. Reads and writes of slots take no
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
