package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-schedule/schedule"
	"github.com/go-schedule/schedule/mqtt"
	mochi "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/hooks/auth"
	"github.com/mochi-mqtt/server/v2/listeners"
	"github.com/mochi-mqtt/server/v2/packets"
)

// brokerConfig is one broker process's.
type brokerConfig struct {
	Mode    string // modeSchedule, modeMochi or modeBoth
	Workers int
	Listen  string
	// CPUProfile, if not empty, is the file the broker writes a CPU profile
	// of the measured window to.
	CPUProfile string
}

// brokerResult is what a broker reports at the end of the window.
type brokerResult struct {
	// Connections open when the window started, and on average over it.
	Conns    int64   `json:"conns"`
	AvgConns float64 `json:"avg_conns"`
	// Memory at the start of the window, less the same before any client
	// connected: the resident set, and the Go heap plus goroutine stacks
	// after a collection.
	RSSDelta  int64 `json:"rss_delta"`
	HeapDelta int64 `json:"heap_delta"`
	// Goroutines at the start of the window, less those before.
	Goroutines int64 `json:"goroutines"`
	// CPU time of the process over the window, and the window's length.
	CPU    time.Duration `json:"cpu"`
	Window time.Duration `json:"window"`
	// Wills published, by the kind of client that left them.
	WillsSilent int64 `json:"wills_silent"`
	WillsLive   int64 `json:"wills_live"`
	// Disconnects the broker put down to keep-alive: the hook's expiries,
	// or mochi's read deadlines.
	KeepAliveDisconnects int64 `json:"keepalive_disconnects"`
	// Clients still watched by the hook (go-schedule only).
	Watched int `json:"watched"`
	// Packets the broker read over the window, and garbage collections.
	Packets int64  `json:"packets"`
	GCs     uint32 `json:"gcs"`
	// Context switches of the process's threads over the window.
	Switches int64 `json:"switches"`
	// Wake-ups of the scheduler's owner goroutine over the window, and
	// jobs it started (go-schedule only; see schedule.Stats).
	Wakeups uint64 `json:"wakeups"`
	Fired   uint64 `json:"fired"`
	// The largest delay over the window between a job's deadline and its
	// start on the scheduler's pool (go-schedule only).
	MaxJobLateness time.Duration `json:"max_job_lateness"`
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

// runBroker runs one broker process: a mochi broker with either
// keep-alive, until the end of its standard input.
func runBroker(ctx context.Context, c brokerConfig, out *emitter, cmds <-chan string) error {
	if c.Mode != modeSchedule && c.Mode != modeMochi && c.Mode != modeBoth {
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
	if c.Mode == modeSchedule || c.Mode == modeBoth {
		var err error
		if sched, err = schedule.New(c.Workers); err != nil {
			return err
		}
		defer sched.Shutdown()
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
	tcp := listeners.NewTCP(listeners.Config{ID: "tcp", Address: c.Listen})
	if err := srv.AddListener(tcp); err != nil {
		return err
	}
	if err := srv.Serve(); err != nil {
		return err
	}
	base := sampleMemory()
	out.emit(message{Event: "ready", Addr: tcp.Address()})

	var res brokerResult
	var start time.Time
	var cpu0 time.Duration
	var packets0, switches0 int64
	var gc0 uint32
	var sched0 schedule.Stats
	var profile *os.File
	stopProfile := func() error {
		if profile == nil {
			return nil
		}
		pprof.StopCPUProfile()
		err := profile.Close()
		profile = nil
		return err
	}
	defer stopProfile()
	var connSum, connSamples atomic.Int64
	stopSampling := make(chan struct{})
	sampled := make(chan struct{})
	connected := func() int64 { return atomic.LoadInt64(&srv.Info.ClientsConnected) }
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case cmd, ok := <-cmds:
			if !ok {
				if !start.IsZero() {
					close(stopSampling)
					<-sampled
				}
				return closeBroker(srv)
			}
			switch cmd {
			case cmdGo:
				m := sampleMemory()
				res.Conns = connected()
				res.RSSDelta = m.rss - base.rss
				res.HeapDelta = m.heap - base.heap
				res.Goroutines = m.goroutines - base.goroutines
				if c.CPUProfile != "" {
					if profile, err = startProfile(c.CPUProfile); err != nil {
						return err
					}
				}
				packets0, gc0 = atomic.LoadInt64(&srv.Info.PacketsReceived), m.gcs
				if sched != nil {
					sched0 = sched.Stats()
					sched.TakeMaxLateness()
				}
				start, cpu0, switches0 = time.Now(), cpuTime(), contextSwitches()
				go func() {
					defer close(sampled)
					t := time.NewTicker(100 * time.Millisecond)
					defer t.Stop()
					for {
						connSum.Add(connected())
						connSamples.Add(1)
						select {
						case <-t.C:
						case <-stopSampling:
							return
						}
					}
				}()
			case cmdReport:
				res.CPU = cpuTime() - cpu0
				res.Switches = contextSwitches() - switches0
				res.Window = time.Since(start)
				if err := stopProfile(); err != nil {
					return err
				}
				res.Packets = atomic.LoadInt64(&srv.Info.PacketsReceived) - packets0
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				res.GCs = ms.NumGC - gc0
				if sched != nil {
					st := sched.Stats()
					res.Wakeups, res.Fired = st.Wakeups-sched0.Wakeups, st.Fired-sched0.Fired
					res.MaxJobLateness = sched.TakeMaxLateness()
				}
				if n := connSamples.Load(); n > 0 {
					res.AvgConns = float64(connSum.Load()) / float64(n)
				}
				res.WillsSilent, res.WillsLive = willsSilent.Load(), willsLive.Load()
				res.KeepAliveDisconnects = dc.keepAlive.Load()
				if ka != nil {
					res.Watched = ka.Len()
				}
				r := res
				out.emit(message{Event: "result", Broker: &r})
			}
		}
	}
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

// startProfile starts a CPU profile written to path, creating its
// directory if need be.
func startProfile(path string) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// memory is a sample of the process's memory use.
type memory struct {
	rss, heap, goroutines int64
	gcs                   uint32 // collections so far
}

// sampleMemory collects garbage, then samples.
func sampleMemory() memory {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return memory{
		rss:        residentSet(int64(ms.Sys)),
		heap:       int64(ms.HeapAlloc + ms.StackInuse),
		goroutines: int64(runtime.NumGoroutine()),
		gcs:        ms.NumGC,
	}
}
