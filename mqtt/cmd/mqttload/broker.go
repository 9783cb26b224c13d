package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-schedule/schedule"
	"github.com/go-schedule/schedule/bench/loadtest"
	"github.com/go-schedule/schedule/mqtt"
	mochi "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/hooks/auth"
	"github.com/mochi-mqtt/server/v2/listeners"
	"github.com/mochi-mqtt/server/v2/packets"
)

// brokerResult is what a broker reports at the end of the window.
type brokerResult struct {
	// What the broker process used over the window.
	loadtest.Usage
	// Wills published, by the kind of client that left them.
	WillsSilent int64 `json:"wills_silent"`
	WillsLive   int64 `json:"wills_live"`
	// Disconnects the broker put down to keep-alive: the hook's expiries,
	// or mochi's read deadlines (on either listener).
	KeepAliveDisconnects int64 `json:"keepalive_disconnects"`
	// GaveUp has, for each silent client disconnected for keep-alive, the
	// moment the broker's OnDisconnect saw it, by client ID, as wall-clock
	// time in Unix nanoseconds: the load processes' clock too.
	GaveUp map[string]int64 `json:"gave_up_ns,omitempty"`
	// Clients still watched: by the hook, or with a task of the listener.
	Watched int `json:"watched"`
	// Packets the broker read over the window.
	Packets int64 `json:"packets"`
	// Wake-ups of the scheduler's owner goroutine over the window, and
	// jobs it started (go-schedule only; see schedule.Stats).
	Wakeups uint64 `json:"wakeups"`
	Fired   uint64 `json:"fired"`
	// An upper bound of the largest delay over the window between a job's
	// deadline and its start on the scheduler's pool: the bound of the
	// highest lateness bucket with a start in the window, or, past the last
	// bound, the scheduler's largest lateness ever (go-schedule only).
	MaxJobLateness time.Duration `json:"max_job_lateness"`
	// Job starts over the window by lateness, in the buckets of
	// schedule.LatenessBounds (go-schedule only).
	Lateness [schedule.LatenessBuckets]uint64 `json:"lateness"`
}

// disconnects is a hook that counts keep-alive disconnects, for every
// keep-alive, and notes when each silent client's came.
//
// mochi (v2.7.9, Server.attachClient) calls OnDisconnect last, once the
// client's read loop has left its read: with a deadline (mochi's own, on
// either listener) the read times out, mochi publishes the will, then
// closes the connection, then calls OnDisconnect; with the hook, the
// hook's stop closes the connection first, which ends the read, and mochi
// then publishes the will and calls OnDisconnect. Either way, when it runs
// the will is out and the connection closed. It is added before the
// keep-alive hook, so that it runs first in every mode, and it costs the
// same in every mode, nothing for a client until it leaves.
type disconnects struct {
	mochi.HookBase
	keepAlive atomic.Int64

	mu     sync.Mutex
	gaveUp map[string]int64 // see brokerResult.GaveUp
}

func (d *disconnects) ID() string { return "mqttload-disconnects" }

func (d *disconnects) Provides(b byte) bool { return b == mochi.OnDisconnect }

func (d *disconnects) OnDisconnect(cl *mochi.Client, err error, expire bool) {
	now := time.Now()
	if !timedOut(cl, err) {
		return
	}
	d.keepAlive.Add(1)
	if strings.HasPrefix(cl.ID, silentID) {
		d.mu.Lock()
		if d.gaveUp == nil {
			d.gaveUp = make(map[string]int64)
		}
		d.gaveUp[cl.ID] = now.UnixNano()
		d.mu.Unlock()
	}
}

// timedOut reports whether cl, which left with err, was disconnected for
// its keep-alive: by the hook, which stops it with ErrKeepAliveTimeout, or
// by a read deadline, whose read fails with a timeout.
func timedOut(cl *mochi.Client, err error) bool {
	var code packets.Code
	var ne net.Error
	return errors.As(cl.StopCause(), &code) && code == packets.ErrKeepAliveTimeout ||
		errors.As(err, &ne) && ne.Timeout()
}

// gaveUpSoFar returns a copy of the moments noted so far.
func (d *disconnects) gaveUpSoFar() map[string]int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return maps.Clone(d.gaveUp)
}

// deadlineBack is a hook that, added after the keep-alive hook, turns
// mochi's own read deadline back on, for modeBoth: it restores the Keep
// Alive of the CONNECT, which the keep-alive hook has set to 0.
type deadlineBack struct{ mochi.HookBase }

func (*deadlineBack) ID() string { return "mqttload-deadline-back" }

func (*deadlineBack) Provides(b byte) bool { return b == mochi.OnSessionEstablished }

func (*deadlineBack) OnSessionEstablished(cl *mochi.Client, pk packets.Packet) {
	cl.State.Keepalive = pk.Connect.Keepalive
}

// runBroker runs one broker process: a mochi broker with the keep-alive
// c.Mode (one of modes), until the end of its standard input.
func runBroker(ctx context.Context, c loadtest.ServerConfig, out *emitter, cmds <-chan string) error {
	if !slices.Contains(modes, c.Mode) {
		return fmt.Errorf("unknown mode %q", c.Mode)
	}
	var sched *schedule.Scheduler
	var ka *mqtt.KeepAlive
	caps := mochi.NewDefaultServerCapabilities()
	caps.MaximumClientWritesPending = 64
	srv := mochi.New(&mochi.Options{
		InlineClient: true,
		Capabilities: caps,
		// mochi warns about every Keep Alive of 5 s or less.
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err := srv.AddHook(new(auth.AllowHook), nil); err != nil {
		return err
	}
	dc := new(disconnects)
	if err := srv.AddHook(dc, nil); err != nil {
		return err
	}
	if c.Mode != modeMochi {
		var err error
		if sched, err = schedule.New(c.Workers); err != nil {
			return err
		}
		defer sched.Shutdown()
	}
	if c.Mode == modeSchedule || c.Mode == modeBoth {
		ka = mqtt.NewKeepAlive(sched)
		if err := srv.AddHook(ka, nil); err != nil {
			return err
		}
	}
	if c.Mode == modeBoth {
		if err := srv.AddHook(new(deadlineBack), nil); err != nil {
			return err
		}
	}
	var willsSilent, willsLive atomic.Int64
	err := srv.Subscribe("will/#", 1, func(_ *mochi.Client, _ packets.Subscription, pk packets.Packet) {
		if strings.HasPrefix(pk.TopicName, "will/silent/") {
			willsSilent.Add(1)
		} else {
			willsLive.Add(1)
		}
	})
	if err != nil {
		return err
	}
	var tcp listeners.Listener = listeners.NewTCP(listeners.Config{ID: "tcp", Address: c.Listen})
	if c.Mode == modeListener {
		tcp = mqtt.NewTCP(listeners.Config{ID: "tcp", Address: c.Listen}, sched)
	}
	if err := srv.AddListener(tcp); err != nil {
		return err
	}
	if err := srv.Serve(); err != nil {
		return err
	}

	var packets0 int64
	var sched0 schedule.Stats
	err = loadtest.Serve(ctx, out, cmds, loadtest.Server[brokerResult]{
		Addr:    tcp.Address(),
		Open:    func() int64 { return atomic.LoadInt64(&srv.Info.ClientsConnected) },
		Profile: c.Profile,
		Begin: func() {
			packets0 = atomic.LoadInt64(&srv.Info.PacketsReceived)
			if sched != nil {
				sched0 = sched.Stats()
			}
		},
		End: func(u loadtest.Usage) brokerResult {
			res := brokerResult{
				Usage:                u,
				Packets:              atomic.LoadInt64(&srv.Info.PacketsReceived) - packets0,
				WillsSilent:          willsSilent.Load(),
				WillsLive:            willsLive.Load(),
				KeepAliveDisconnects: dc.keepAlive.Load(),
				GaveUp:               dc.gaveUpSoFar(),
			}
			if sched != nil {
				st := sched.Stats()
				res.Wakeups, res.Fired = st.Wakeups-sched0.Wakeups, st.Started-sched0.Started
				for i := range res.Lateness {
					res.Lateness[i] = st.Lateness[i] - sched0.Lateness[i]
				}
				res.MaxJobLateness = latenessBound(res.Lateness, st.MaxLateness)
			}
			switch {
			case ka != nil:
				res.Watched = ka.Len()
			case sched != nil:
				res.Watched = sched.Len()
			}
			return res
		},
	})
	if err != nil {
		return err
	}
	return closeBroker(srv)
}

// closeBroker waits for the clients to leave, then closes srv: mochi's
// Close can deadlock while clients disconnect.
func closeBroker(srv *mochi.Server) error {
	deadline := time.Now().Add(2 * time.Minute)
	for atomic.LoadInt64(&srv.Info.ClientsConnected) > 0 {
		if time.Now().After(deadline) {
			return fmt.Errorf("%d clients still connected 2 minutes after the end", atomic.LoadInt64(&srv.Info.ClientsConnected))
		}
		time.Sleep(20 * time.Millisecond)
	}
	return srv.Close()
}

// latenessBound returns an upper bound of the largest lateness counted in
// buckets (a window's share of schedule.Stats.Lateness): the bound of the
// highest bucket that counts a start, or, when that is the last bucket,
// which has no bound, maxEver; 0 when no job started.
func latenessBound(buckets [schedule.LatenessBuckets]uint64, maxEver time.Duration) time.Duration {
	bounds := schedule.LatenessBounds()
	for i := len(buckets) - 1; i >= 0; i-- {
		if buckets[i] == 0 {
			continue
		}
		if i == len(bounds) {
			return maxEver
		}
		return bounds[i]
	}
	return 0
}
