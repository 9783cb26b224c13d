// Package gnetutil runs gnet engines for the module's commands and tests: in
// a goroutine of their own, on an address whose port may be 0, with gnet's
// log kept off standard output.
package gnetutil

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"strings"
	"syscall"

	"github.com/panjf2000/gnet/v2"
	errorx "github.com/panjf2000/gnet/v2/pkg/errors"
	"github.com/panjf2000/gnet/v2/pkg/logging"
)

// Server is a gnet engine running in a goroutine of its own.
type Server struct {
	// Engine is the running engine.
	Engine gnet.Engine
	// Addr is the address it listens on, host:port, with the port the
	// system chose when the one asked for was 0.
	Addr string

	done   chan struct{} // closed once gnet.Run has returned
	runErr error         // gnet.Run's result, set before done is closed
}

// booting is the handler Serve runs: h, with OnBoot reporting the engine.
type booting struct {
	gnet.EventHandler
	booted chan<- gnet.Engine
}

func (b *booting) OnBoot(e gnet.Engine) gnet.Action {
	action := b.EventHandler.OnBoot(e)
	b.booted <- e
	return action
}

// Serve starts gnet.Run(h, "tcp://"+addr, opts...) in a goroutine and
// returns once the engine has booted: its listener accepts connections from
// then on. It returns Run's error if the engine fails to start.
func Serve(h gnet.EventHandler, addr string, opts ...gnet.Option) (*Server, error) {
	booted := make(chan gnet.Engine, 1)
	s := &Server{done: make(chan struct{})}
	go func() {
		s.runErr = gnet.Run(&booting{EventHandler: h, booted: booted}, "tcp://"+addr, opts...)
		close(s.done)
	}()
	select {
	case s.Engine = <-booted:
	case <-s.done:
		err := s.runErr
		if err == nil {
			err = errors.New("gnet engine stopped while booting")
		}
		return nil, err
	}
	var err error
	if s.Addr, err = BoundAddr(s.Engine); err != nil {
		_ = s.Stop(context.Background())
		return nil, err
	}
	return s, nil
}

// Stop stops the engine, which closes every connection (their OnClose
// runs), and waits until gnet.Run has returned, or until ctx ends. It
// returns Run's error, or ctx's. Stop is idempotent: once the engine has
// stopped, on its own or through Stop, it returns Run's error at once.
func (s *Server) Stop(ctx context.Context) error {
	select {
	case <-s.done:
		return s.runErr
	default:
	}
	stopped := make(chan error, 1)
	go func() { stopped <- s.Engine.Stop(ctx) }()
	select {
	case <-s.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	err := s.runErr
	// Engine.Stop returns once it sees the engine shut down; a Stop that
	// came second finds it shut down already.
	if e := <-stopped; e != nil && err == nil && !errors.Is(e, context.Canceled) && !errors.Is(e, errorx.ErrEngineInShutdown) {
		err = e
	}
	return err
}

// Done returns a channel that is closed once the engine has stopped, on
// its own or through Stop; Err then returns gnet.Run's result.
func (s *Server) Done() <-chan struct{} { return s.done }

// Err returns gnet.Run's result once Done is closed, and nil before.
func (s *Server) Err() error {
	select {
	case <-s.done:
		return s.runErr
	default:
		return nil
	}
}

// BoundAddr returns the address the engine's listener is bound to.
func BoundAddr(e gnet.Engine) (string, error) {
	fd, err := e.Dup()
	if err != nil {
		return "", fmt.Errorf("listener of the engine: %w", err)
	}
	defer syscall.Close(fd)
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		return "", fmt.Errorf("address of the listener: %w", err)
	}
	switch a := sa.(type) {
	case *syscall.SockaddrInet4:
		return net.JoinHostPort(net.IP(a.Addr[:]).String(), fmt.Sprint(a.Port)), nil
	case *syscall.SockaddrInet6:
		return net.JoinHostPort(net.IP(a.Addr[:]).String(), fmt.Sprint(a.Port)), nil
	}
	return "", fmt.Errorf("listener bound to %T, not TCP", sa)
}

// Logger returns a gnet logger that writes warnings and errors to w, one a
// line, prefixed with prefix, and drops the rest. gnet's own logger writes
// to standard output, which the commands keep for their results.
func Logger(w io.Writer, prefix string) logging.Logger {
	return &logger{l: log.New(w, prefix, log.LstdFlags)}
}

type logger struct{ l *log.Logger }

func (*logger) Debugf(string, ...any)               {}
func (*logger) Infof(string, ...any)                {}
func (l *logger) Warnf(format string, args ...any)  { l.print("warning: ", format, args) }
func (l *logger) Errorf(format string, args ...any) { l.print("error: ", format, args) }
func (l *logger) Fatalf(format string, args ...any) { l.print("fatal: ", format, args) }

func (l *logger) print(level, format string, args []any) {
	l.l.Print(level + strings.TrimSuffix(fmt.Sprintf(format, args...), "\n"))
}
