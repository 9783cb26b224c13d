package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"strings"
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
	// Clients still watched: by the hook, or with a task of the listener.
	Watched int `json:"watched"`
	// Packets the broker read over the window.
	Packets int64 `json:"packets"`
	// Wake-ups of the scheduler's owner goroutine over the window, and
	// jobs it started (go-schedule only; see schedule.Stats).
	Wakeups uint64 `json:"wakeups"`
	Fired   uint64 `json:"fired"`
	// The largest delay over the window between a job's deadline and its
	// start on the scheduler's pool (go-schedule only).
	MaxJobLateness time.Duration `json:"max_job_lateness"`
	// Job starts over the window by lateness, in the buckets of
	// schedule.LatenessBounds (go-schedule only).
	Lateness [schedule.LatenessBuckets]uint64 `json:"lateness"`
}

// disconnects is a hook that counts keep-alive disconnects, for either
// keep-alive.
type disconnects struct {
	mochi.HookBase
	keepAlive atomic.Int64
}

func (d *disconnects) ID() string { return "mqttload-disconnects" }

func (d *disconnects) Provides(b byte) bool { return b == mochi.OnDisconnect }

func (d *disconnects) OnDisconnect(cl *mochi.Client, err error, expire bool) {
	var code packets.Code
	var ne net.Error
	cause := cl.StopCause()
	if errors.As(cause, &code) && code == packets.ErrKeepAliveTimeout ||
		errors.As(err, &ne) && ne.Timeout() {
		d.keepAlive.Add(1)
	}
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
	dc := new(disconnects)
	if err := srv.AddHook(dc, nil); err != nil {
		return err
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
				sched.TakeMaxLateness()
			}
		},
		End: func(u loadtest.Usage) brokerResult {
			res := brokerResult{
				Usage:                u,
				Packets:              atomic.LoadInt64(&srv.Info.PacketsReceived) - packets0,
				WillsSilent:          willsSilent.Load(),
				WillsLive:            willsLive.Load(),
				KeepAliveDisconnects: dc.keepAlive.Load(),
			}
			if sched != nil {
				st := sched.Stats()
				res.Wakeups, res.Fired = st.Wakeups-sched0.Wakeups, st.Fired-sched0.Fired
				for i := range res.Lateness {
					res.Lateness[i] = st.Lateness[i] - sched0.Lateness[i]
				}
				res.MaxJobLateness = sched.TakeMaxLateness()
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
