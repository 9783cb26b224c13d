package main

import (
	"context"
	"errors"
	"flag"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/go-schedule/schedule"
	"github.com/go-schedule/schedule/bench/loadtest"
	"github.com/go-schedule/schedule/netdeadline"
)

// serverResult is what a server reports at the end of the window.
type serverResult struct {
	loadtest.Usage
	Requests int64 `json:"requests"` // answered in the window
}

// emitter is a server's channel to the parent.
type emitter = loadtest.Emitter[serverResult]

// runChild runs a server process: args start with -role.
func runChild(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var readTimeout, idleTimeout time.Duration
	return loadtest.RunChild(ctx, args, stdin, stdout, stderr, loadtest.Roles[serverResult]{
		Name: "httpload server",
		Flags: func(fs *flag.FlagSet) {
			fs.DurationVar(&readTimeout, "read-timeout", 10*time.Second, "server: ReadTimeout")
			fs.DurationVar(&idleTimeout, "idle-timeout", 30*time.Second, "server: IdleTimeout")
		},
		Server: func(ctx context.Context, c loadtest.ServerConfig, out *emitter, cmds <-chan string) error {
			return runServer(ctx, c, readTimeout, idleTimeout, out, cmds)
		},
	})
}

// runServer serves HTTP on c.Listen, on a wrapped or a plain listener as
// c.Mode says, until the end of its standard input.
func runServer(ctx context.Context, c loadtest.ServerConfig, readTimeout, idleTimeout time.Duration, out *emitter, cmds <-chan string) error {
	ln, err := net.Listen("tcp", c.Listen)
	if err != nil {
		return err
	}
	switch c.Mode {
	case modePlain:
	case modeWrapped:
		s, err := schedule.New(c.Workers)
		if err != nil {
			ln.Close()
			return err
		}
		defer s.Shutdown() // after the server has closed its connections
		if ln, err = netdeadline.NewListener(ln, s); err != nil {
			return err
		}
	default:
		ln.Close()
		return errors.New("unknown mode " + c.Mode)
	}
	var requests, open atomic.Int64
	body := []byte("ok\n")
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			requests.Add(1)
			w.Write(body)
		}),
		ReadTimeout: readTimeout,
		IdleTimeout: idleTimeout,
		ConnState: func(_ net.Conn, s http.ConnState) {
			switch s {
			case http.StateNew:
				open.Add(1)
			case http.StateClosed, http.StateHijacked:
				open.Add(-1)
			}
		},
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	defer func() {
		srv.Close()
		<-served
	}()
	var requests0 int64
	return loadtest.Serve(ctx, out, cmds, loadtest.Server[serverResult]{
		Addr:    ln.Addr().String(),
		Open:    open.Load,
		Profile: c.Profile,
		Begin:   func() { requests0 = requests.Load() },
		End: func(u loadtest.Usage) serverResult {
			return serverResult{Usage: u, Requests: requests.Load() - requests0}
		},
	})
}
