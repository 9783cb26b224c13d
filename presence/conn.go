package presence

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"
)

// Conn is one device connection recorded online by its Node.
type Conn struct {
	n      *Node
	device string
	key    string
	num    uint64
	onEnd  func(error)

	mu    sync.Mutex // serialises Offline
	epoch string
	rev   uint64 // revision of this connection's online record

	endOnce sync.Once
	endErr  error // why the node ended it, or nil
	done    chan struct{}
}

// Device returns the device id.
func (c *Conn) Device() string { return c.device }

// Revision returns the revision of the connection's online record.
func (c *Conn) Revision() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rev
}

// retryWait is the pause between attempts of a write the engine did not
// answer: short against the 3 s a moved connection has to close, long
// against a busy engine.
const retryWait = 250 * time.Millisecond

// attemptWithin bounds one request to the engine: a request in flight
// when the connection drops gets no answer, and waiting less than the
// caller's whole context lets the retry go out on the new connection.
const attemptWithin = 2 * time.Second

// Connect records device online at this node, for a new connection, and
// returns it once the engine holds the record. While the engine is
// unreachable, the node's lease is unconfirmed, the node is recording the
// devices of a lease it lost node_lost, or 64 of its writes are in flight
// already, it waits, as long as ctx allows. The newest connection wins:
// the device's connection before it, here or at another node, is ended
// (its end function gets [ErrSuperseded]) and records nothing more.
//
// end is called once, from a node goroutine, when the node ends the
// connection: ErrSuperseded (a newer connection of the device),
// [ErrLeaseLost] (the node lost its lease; the device was recorded
// node_lost), or [ErrClosed] ([Node.Close] ended it, having recorded it
// offline with reason shutdown if the engine answered in time). The
// caller then closes the device's
// connection. end is not called after the caller's own Offline. It may be
// nil. Connect returns [ErrInvalidDeviceID], [ErrClosed], [ErrSuperseded]
// when a still newer connection won meanwhile or the node's lease was lost
// while it wrote (the record is then not this node's to keep), or ctx's
// error.
func (n *Node) Connect(ctx context.Context, device string, end func(error)) (*Conn, error) {
	if !ValidDeviceID(device) {
		return nil, ErrInvalidDeviceID
	}
	if end == nil {
		end = func(error) {}
	}
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return nil, ErrClosed
	}
	n.seq++
	c := &Conn{n: n, device: device, key: EncodeKey(device), num: n.seq, onEnd: end, done: make(chan struct{})}
	n.conns[c.num] = c // before the write, so that a kick that follows it finds c
	n.inflight[device]++
	n.mu.Unlock()

	prev, err := c.online(ctx)
	if err == nil && prev != nil && prev.State == Online && prev.Node != n.cfg.Node {
		// The write that replaced prev owes its node the kick, whether or
		// not c itself is still the newest by the time it returns.
		b, _ := json.Marshal(kickMsg{Device: device, Epoch: prev.Epoch, Conn: prev.Conn, Rev: c.rev})
		_ = n.nc.Publish(n.kickSubject(prev.Node), b) // a lost kick is repaired when the node reconnects (verifyLocal)
	}
	n.mu.Lock()
	old := n.byDevice[device]
	var endOld bool
	stale := false
	if err == nil {
		// top is the newest revision of the device's record known here.
		top := max(c.rev, n.floor[device])
		if old != nil {
			top = max(top, old.rev)
		}
		stale = c.ended() || c.rev < top || c.epoch != n.epoch
		if old != nil && old.rev < top {
			endOld = true // older than what is known now, whoever wins
			delete(n.byDevice, device)
		}
		if !stale {
			n.raiseFloor(device, c.rev)
			n.byDevice[device] = c
		}
	}
	if n.inflight[device]--; n.inflight[device] == 0 {
		delete(n.inflight, device)
		delete(n.floor, device)
	}
	n.mu.Unlock()
	if endOld {
		n.forget(old)
		old.end(ErrSuperseded)
	}
	if err != nil || stale {
		n.forget(c)
		if err == nil {
			err = ErrSuperseded
		}
		return nil, err
	}
	return c, nil
}

// online writes c's online record and returns the record it replaced.
func (c *Conn) online(ctx context.Context) (*Record, error) {
	n := c.n
	for {
		epoch, err := n.waitLive(ctx)
		if err != nil {
			return nil, err
		}
		n.mu.Lock()
		c.epoch = epoch
		n.mu.Unlock()
		if err := n.acquire(ctx); err != nil {
			return nil, err
		}
		if !n.liveAt(epoch) {
			n.release()
			continue // the lease went while this write waited for a slot
		}
		rec := Record{State: Online, Node: n.cfg.Node, Reason: ReasonConnect, Epoch: epoch, Conn: c.num, At: time.Now().UTC()}
		actx, cancel := context.WithTimeout(ctx, attemptWithin)
		prev, found, err := n.get(actx, c.device, c.key)
		var rev uint64
		switch {
		case err != nil:
		case found && prev.sameConn(&rec) && prev.State == Online:
			cancel()
			n.release()
			c.rev = prev.Rev // our own write, whose acknowledgement was lost
			return nil, nil
		case found:
			rev, err = n.devices.Update(actx, c.key, rec.encode(), prev.Rev)
		default:
			rev, err = n.devices.Create(actx, c.key, rec.encode())
		}
		cancel()
		n.release()
		if err == nil {
			c.rev = rev
			if found {
				return &prev, nil
			}
			return nil, nil
		}
		if isConflict(err) {
			continue
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		n.log.Debug("online write failed, retrying", "device", c.device, "err", err)
		n.sleep(retryWait)
	}
}

// Offline records the device offline for reason (ReasonTimeout or
// ReasonClosed) if its record still belongs to this connection, and ends
// the connection. It returns nil once recorded; ErrSuperseded if a newer
// connection or a reaper wrote the record since (nothing recorded);
// ErrLeaseLost or ErrClosed if the node ended the connection first
// (nothing recorded by this call); ErrInvalidReason; or ctx's error, the
// record unchanged as far as this call knows. It waits for the engine as
// Connect does. Once a call has ended the connection, a later one records
// nothing and returns an error: the first call's, or [ErrAlreadyOffline]
// when the first recorded.
func (c *Conn) Offline(ctx context.Context, reason Reason) error {
	if reason != ReasonTimeout && reason != ReasonClosed {
		return ErrInvalidReason
	}
	return c.offline(ctx, reason, nil)
}

// offline writes the offline record; endWith is what the end function
// gets afterwards (nil: not called, the caller ends the connection).
func (c *Conn) offline(ctx context.Context, reason Reason, endWith error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended() {
		return c.endErr
	}
	n := c.n
	for {
		epoch, err := n.waitLive(ctx)
		if err != nil && !errors.Is(err, ErrClosed) {
			return err
		}
		if c.ended() {
			return c.endErr
		}
		if err != nil || epoch != c.epoch {
			c.finish(ErrLeaseLost, nil)
			return ErrLeaseLost
		}
		if err := n.acquire(ctx); err != nil {
			return err
		}
		if !n.liveAt(c.epoch) {
			n.release()
			continue // the lease went while this write waited for a slot
		}
		rec := Record{State: Offline, Node: n.cfg.Node, Reason: reason, Epoch: c.epoch, Conn: c.num, At: time.Now().UTC()}
		actx, cancel := context.WithTimeout(ctx, attemptWithin)
		var rev uint64
		rev, err = n.devices.Update(actx, c.key, rec.encode(), c.rev)
		cancel()
		n.release()
		if err == nil {
			n.mu.Lock()
			n.raiseFloor(c.device, rev)
			n.mu.Unlock()
			c.finish(nil, endWith)
			return nil
		}
		if isConflict(err) {
			if err := n.acquire(ctx); err != nil {
				return err
			}
			actx, cancel := context.WithTimeout(ctx, attemptWithin)
			cur, found, gerr := n.get(actx, c.device, c.key)
			cancel()
			n.release()
			if gerr == nil {
				if found && cur.sameConn(&rec) && cur.State == Offline && cur.Reason == reason {
					c.finish(nil, endWith) // our own write, whose acknowledgement was lost
					return nil
				}
				c.finish(ErrSuperseded, endWith)
				return ErrSuperseded
			}
			err = gerr
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		n.sleep(retryWait)
	}
}

// finish ends c after a write of its own: the node forgets it, and the
// end function gets endWith if that is not nil. c.mu must be held.
func (c *Conn) finish(err, endWith error) {
	c.n.forget(c)
	c.endOnce.Do(func() {
		c.endErr = err
		if err == nil {
			c.endErr = ErrAlreadyOffline
		}
		close(c.done)
		if endWith != nil {
			c.onEnd(endWith)
		}
	})
}

// end ends c from the node's side: the end function gets err.
func (c *Conn) end(err error) {
	c.endOnce.Do(func() {
		c.endErr = err
		close(c.done)
		c.onEnd(err)
	})
}

func (c *Conn) ended() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// Done is closed when the connection has ended, by the caller's Offline or
// by the node.
func (c *Conn) Done() <-chan struct{} { return c.done }

// forget removes c from the node's tables.
func (n *Node) forget(c *Conn) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.conns[c.num] == c {
		delete(n.conns, c.num)
	}
	if n.byDevice[c.device] == c {
		delete(n.byDevice, c.device)
	}
}

// kickMsg tells a node that a newer connection of the device won.
type kickMsg struct {
	Device string `json:"device"`
	Epoch  string `json:"epoch"`
	Conn   uint64 `json:"conn"`
	Rev    uint64 `json:"rev"` // the newer connection's record
}

// onKick ends the connection a kick names, if this node still holds it.
func (n *Node) onKick(m *natsMsg) {
	var k kickMsg
	if json.Unmarshal(m.Data, &k) != nil {
		return
	}
	n.mu.Lock()
	n.raiseFloor(k.Device, k.Rev)
	c := n.conns[k.Conn]
	ok := c != nil && c.device == k.Device && c.epoch == k.Epoch
	n.mu.Unlock()
	if ok {
		n.forget(c)
		c.end(ErrSuperseded)
	}
}

// liveAt reports whether writes may go for epoch.
func (n *Node) liveAt(epoch string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.live && n.epoch == epoch
}
