package mqtt

import (
	"crypto/tls"
	"log/slog"
	"net"
	"sync"

	"github.com/go-schedule/schedule"
	"github.com/go-schedule/schedule/netdeadline"
	"github.com/mochi-mqtt/server/v2/listeners"
)

// Listener is a mochi listener for MQTT over TCP, or over TLS on TCP, whose
// connections keep their deadlines on a go-schedule Scheduler: it is
// mochi's TCP listener with every accepted connection wrapped by
// netdeadline. mochi's own keep-alive stays as it is (before every packet
// it sets the connection's deadline to 1.5 × Keep Alive from now, in whole
// seconds), and each of those deadline moves becomes a Reset of the
// connection's one task, in place of a move of a runtime timer. When a
// client falls silent, its read fails with the socket's own timeout error,
// exactly as with mochi's listener, and mochi ends the client and publishes
// its will.
//
// Create it with NewTCP and add it with Server.AddListener. Its methods
// are safe for concurrent use.
type Listener struct {
	config listeners.Config
	s      *schedule.Scheduler

	mu     sync.Mutex
	ln     net.Listener // set by Init
	log    *slog.Logger
	closed bool
}

// NewTCP returns a listener for config (ID, Address and, for TLS,
// TLSConfig; Type is ignored) whose connections keep their deadlines on s.
// It replaces mochi's listeners.NewTCP(config). With a nil s, Init, and so
// Server.AddListener, returns netdeadline.ErrNilScheduler.
//
// The Scheduler must outlive the broker: once it is shut down, connections
// accepted afterwards, and deadlines set afterwards, fall back to the
// socket's own deadlines, but a deadline pending at the shutdown never
// passes.
func NewTCP(config listeners.Config, s *schedule.Scheduler) *Listener {
	return &Listener{config: config, s: s}
}

// ID returns the listener's ID, from its config.
func (l *Listener) ID() string { return l.config.ID }

// Protocol returns "tcp".
func (l *Listener) Protocol() string { return listeners.TypeTCP }

// Address returns the address the listener is bound to once Init has
// returned, and the configured one before.
func (l *Listener) Address() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ln != nil {
		return l.ln.Addr().String()
	}
	return l.config.Address
}

// Init binds the listener's address. mochi calls it from AddListener.
func (l *Listener) Init(log *slog.Logger) error {
	raw, err := net.Listen("tcp", l.config.Address)
	if err != nil {
		return err
	}
	wrapped, err := netdeadline.NewListener(raw, l.s)
	if err != nil {
		raw.Close()
		return err
	}
	// TLS on top of the wrapper: a tls.Conn sets its deadlines on the
	// connection beneath it.
	var ln net.Listener = wrapped
	if l.config.TLSConfig != nil {
		ln = tls.NewListener(wrapped, l.config.TLSConfig)
	}
	l.mu.Lock()
	l.ln, l.log = ln, log
	l.mu.Unlock()
	return nil
}

// Serve accepts connections until the listener is closed, and hands each
// to establish on a goroutine of its own, as mochi's listeners do.
func (l *Listener) Serve(establish listeners.EstablishFn) {
	l.mu.Lock()
	ln, log := l.ln, l.log
	l.mu.Unlock()
	if ln == nil {
		return // never initialised
	}
	for {
		c, err := ln.Accept()
		if err != nil {
			return // closed
		}
		l.mu.Lock()
		closed := l.closed
		l.mu.Unlock()
		if closed { // accepted as Close ran: its clients are closed already
			c.Close()
			return
		}
		go func() {
			if err := establish(l.config.ID, c); err != nil && log != nil {
				log.Warn("", "error", err)
			}
		}()
	}
}

// Close stops accepting connections and, the first time, has mochi close
// the listener's clients with closeClients.
func (l *Listener) Close(closeClients listeners.CloseFn) {
	l.mu.Lock()
	first := !l.closed
	l.closed = true
	ln := l.ln
	l.mu.Unlock()
	if first {
		closeClients(l.config.ID)
	}
	if ln != nil {
		_ = ln.Close()
	}
}
