package gnetidle

import "github.com/panjf2000/gnet/v2"

// Wrap returns h with idle detection added: every connection is watched
// with the default timeouts from OnOpen to OnClose, by a Watch the
// Detector keeps (WatchOf returns it). Pass the result to gnet.Run in place
// of h. The connections' Context stays h's.
//
// In the wrapped handler:
//   - OnOpen starts the watch, then calls h's OnOpen, which may give the
//     connection timeouts of its own with WatchOf(c).SetTimeouts; data it
//     returns to send counts as a write. A connection that cannot be
//     watched (the scheduler is shut down) is served unwatched.
//   - OnTraffic counts a read when the connection has inbound data, then
//     calls h's. (A Conn.Wake with nothing to read does not count.)
//   - OnClose stops the watch, then calls h's.
//
// Everything else is h's own. Writes count when h reports them with
// WatchOf(c).Wrote().
func (d *Detector) Wrap(h gnet.EventHandler) gnet.EventHandler {
	return &wrapped{EventHandler: h, d: d}
}

type wrapped struct {
	gnet.EventHandler
	d *Detector
}

func (h *wrapped) OnOpen(c gnet.Conn) ([]byte, gnet.Action) {
	_ = h.d.Start(c, new(Watch))
	out, action := h.EventHandler.OnOpen(c)
	if len(out) > 0 {
		h.d.WatchOf(c).Wrote()
	}
	return out, action
}

func (h *wrapped) OnTraffic(c gnet.Conn) gnet.Action {
	if c.InboundBuffered() > 0 {
		h.d.WatchOf(c).Read()
	}
	return h.EventHandler.OnTraffic(c)
}

func (h *wrapped) OnClose(c gnet.Conn, err error) gnet.Action {
	h.d.WatchOf(c).Stop()
	return h.EventHandler.OnClose(c, err)
}
