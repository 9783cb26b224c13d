package heartbeat

import "sync/atomic"

// counter is a count that only grows, read while it is written.
type counter struct{ n atomic.Uint64 }

func (c *counter) add()         { c.n.Add(1) }
func (c *counter) load() uint64 { return c.n.Load() }

// Expired returns the number of times the Monitor has called expired: the
// watches that ended because their key fell silent. It only grows, and
// reading it changes nothing. It counts a call as it starts, so a key whose
// expired function is still running counts already.
//
// With [Monitor.Len], it is what a metrics exporter reads (the schedprom
// module exports both); the mqtt module's KeepAlive hook offers the same
// pair.
func (m *Monitor[K]) Expired() uint64 { return m.expiries.load() }
