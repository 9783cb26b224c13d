package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/go-schedule/schedule"
	"github.com/go-schedule/schedule/bench/loadtest"
	"github.com/go-schedule/schedule/gnetidle"
	"github.com/go-schedule/schedule/gnetidle/internal/gnetutil"
	"github.com/panjf2000/gnet/v2"
)

// serverConfig is one server process's.
type serverConfig struct {
	loadtest.ServerConfig // Mode: one of the modes in main.go
	Idle                  time.Duration
	Loops                 int // gnet event loops; 0: one per CPU
}

// serverResult is what a server process reports at the end of the window.
type serverResult struct {
	// What the server process used over the window.
	loadtest.Usage
	// Connections the server closed for idleness, over its whole life,
	// and for each how late, in microseconds: from its last read plus the
	// timeout to the close, as the server saw it.
	IdleClosed int64   `json:"idle_closed"`
	Lateness   []int64 `json:"lateness_us"`
}

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
	case modeReset, modeStamp:
		s, err := schedule.New(c.Workers)
		if err != nil {
			return err
		}
		defer s.Shutdown()
		h := newResetServer(s, c.Idle, c.Mode == modeStamp)
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

	// Serve returns at the end of standard input, and the process exits:
	// its connections close with it.
	return loadtest.Serve(ctx, out, cmds, loadtest.Server[serverResult]{
		Addr:    srv.addr(),
		Open:    srv.open,
		Profile: c.Profile,
		End: func(u loadtest.Usage) serverResult {
			return serverResult{Usage: u, IdleClosed: srv.idleClosed(), Lateness: srv.lateness()}
		},
	})
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
	late  loadtest.Lateness
}

// onIdle is the Detector's Handler: close, as CloseIdle does, and note how
// late.
func (s *scheduleServer) onIdle(_ gnet.Conn, e gnetidle.Event) gnet.Action {
	s.late.Add(e.Idle - s.idle)
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
func (s *scheduleServer) lateness() []int64 { return s.late.Micros() }
