package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-schedule/schedule"
	"github.com/go-schedule/schedule/gnetidle"
	"github.com/go-schedule/schedule/gnetidle/internal/gnetutil"
	"github.com/panjf2000/gnet/v2"
)

// serverConfig is one server process's.
type serverConfig struct {
	Mode    string
	Listen  string
	Idle    time.Duration
	Workers int    // go-schedule's pool (modeSchedule)
	Loops   int    // gnet event loops; 0: one per CPU
	Profile string // file for a CPU profile of the window, if any
}

// serverResult is what a server process reports at the end of the window.
type serverResult struct {
	// Connections open at the window's start, and on average over it.
	Conns    int64   `json:"conns"`
	AvgConns float64 `json:"avg_conns"`
	// Memory at the window's start, less the same before any connection:
	// the resident set, and the Go heap plus goroutine stacks after a
	// collection.
	RSSDelta  int64 `json:"rss_delta"`
	HeapDelta int64 `json:"heap_delta"`
	// Goroutines at the window's start, and the same less those before
	// any connection.
	Goroutines      int64 `json:"goroutines"`
	GoroutinesDelta int64 `json:"goroutines_delta"`
	// CPU time of the process over the window, and the window's length.
	CPU    time.Duration `json:"cpu"`
	Window time.Duration `json:"window"`
	// Connections the server closed for idleness, over its whole life,
	// and for each how late, in microseconds: from its last read plus the
	// timeout to the close, as the server saw it.
	IdleClosed int64   `json:"idle_closed"`
	Lateness   []int64 `json:"lateness_us"`
}

// lateness collects how late a server closed idle connections.
type lateness struct {
	mu sync.Mutex
	us []int64
}

func (l *lateness) add(d time.Duration) {
	l.mu.Lock()
	l.us = append(l.us, d.Microseconds())
	l.mu.Unlock()
}

func (l *lateness) get() []int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]int64(nil), l.us...)
}

// sampleEvery is how often a server samples its open connections over the
// window, for their average.
const sampleEvery = 100 * time.Millisecond

// idleServer is a server of one mode, seen by runServer.
type idleServer interface {
	// addr is the address it listens on.
	addr() string
	// open is the number of connections open now.
	open() int64
	// idleClosed is the number of connections it closed for idleness.
	idleClosed() int64
	// lateness is how late it closed each.
	lateness() []int64
}

// runServer runs one server process until the end of its standard input.
func runServer(ctx context.Context, c serverConfig, out *emitter, cmds <-chan string, stderr io.Writer) error {
	if c.Idle <= 0 {
		return errors.New("-idle must be positive")
	}
	var opts []gnet.Option
	if c.Mode != modeNet {
		opts = []gnet.Option{gnet.WithMulticore(true), gnet.WithLogger(gnetutil.Logger(stderr, "idleload server: gnet: "))}
		if c.Loops > 0 {
			opts = append(opts, gnet.WithNumEventLoop(c.Loops))
		}
	}
	var srv idleServer
	switch c.Mode {
	case modeSchedule:
		s, err := schedule.New(c.Workers)
		if err != nil {
			return err
		}
		defer s.Shutdown()
		h := &scheduleServer{idle: c.Idle}
		if h.d, err = gnetidle.New(s, gnetidle.Timeouts{Reader: c.Idle}, h.onIdle); err != nil {
			return err
		}
		if h.srv, err = gnetutil.Serve(h, c.Listen, opts...); err != nil {
			return err
		}
		srv = h
	case modeTick, modeTickFix:
		h := newTickServer(c.Idle, c.Mode == modeTickFix)
		var err error
		if h.srv, err = gnetutil.Serve(h, c.Listen, append(opts, gnet.WithTicker(true))...); err != nil {
			return err
		}
		srv = h
	case modeNet:
		h, err := startNetServer(c.Listen, c.Idle)
		if err != nil {
			return err
		}
		defer h.close()
		srv = h
	default:
		return fmt.Errorf("unknown mode %q", c.Mode)
	}

	base := sampleMemory()
	out.emit(message{Event: "ready", Addr: srv.addr()})
	var res serverResult
	var start time.Time
	var cpu0 time.Duration
	var connSum, connSamples atomic.Int64
	stopSampling, sampled := make(chan struct{}), make(chan struct{})
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
				// The process exits now; its connections close with it.
				return nil
			}
			switch cmd {
			case cmdGo:
				m := sampleMemory()
				res.Conns = srv.open()
				res.RSSDelta = m.rss - base.rss
				res.HeapDelta = m.heap - base.heap
				res.Goroutines = m.goroutines
				res.GoroutinesDelta = m.goroutines - base.goroutines
				if c.Profile != "" {
					if err := startProfile(c.Profile); err != nil {
						return err
					}
				}
				start, cpu0 = time.Now(), cpuTime()
				go func() {
					defer close(sampled)
					t := time.NewTicker(sampleEvery)
					defer t.Stop()
					for {
						connSum.Add(srv.open())
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
				res.Window = time.Since(start)
				pprof.StopCPUProfile()
				if n := connSamples.Load(); n > 0 {
					res.AvgConns = float64(connSum.Load()) / float64(n)
				}
				res.IdleClosed = srv.idleClosed()
				res.Lateness = srv.lateness()
				r := res
				out.emit(message{Event: "result", Server: &r})
			}
		}
	}
}

// scheduleServer is gnet with gnetidle: one go-schedule task per
// connection, pushed out by each read (a Watch in the connection's
// Context, as a server that keeps a struct per connection would).
type scheduleServer struct {
	gnet.BuiltinEventEngine
	d     *gnetidle.Detector
	srv   *gnetutil.Server
	idle  time.Duration
	conns atomic.Int64
	late  lateness
}

// onIdle is the Detector's Handler: close, as CloseIdle does, and note how
// late.
func (s *scheduleServer) onIdle(_ gnet.Conn, e gnetidle.Event) gnet.Action {
	s.late.add(e.Idle - s.idle)
	return gnet.Close
}

// session is what the server keeps per connection.
type session struct {
	idle gnetidle.Watch
}

func (s *scheduleServer) OnOpen(c gnet.Conn) ([]byte, gnet.Action) {
	ss := new(session)
	c.SetContext(ss)
	if err := s.d.Start(c, &ss.idle); err != nil {
		return nil, gnet.Close
	}
	s.conns.Add(1)
	return nil, gnet.None
}

func (s *scheduleServer) OnTraffic(c gnet.Conn) gnet.Action {
	c.Context().(*session).idle.Read()
	_, _ = c.Discard(-1)
	return gnet.None
}

func (s *scheduleServer) OnClose(c gnet.Conn, _ error) gnet.Action {
	c.Context().(*session).idle.Stop()
	s.conns.Add(-1)
	return gnet.None
}

func (s *scheduleServer) addr() string      { return s.srv.Addr }
func (s *scheduleServer) open() int64       { return s.conns.Load() }
func (s *scheduleServer) idleClosed() int64 { return int64(s.d.Stats().Closed) }
func (s *scheduleServer) lateness() []int64 { return s.late.get() }

// memory is a sample of the process's memory use.
type memory struct {
	rss, heap, goroutines int64
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
	}
}

// startProfile starts a CPU profile into the file name.
func startProfile(name string) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	return pprof.StartCPUProfile(f)
}
