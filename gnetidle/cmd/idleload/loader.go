package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// loaderConfig is one load process's.
type loaderConfig struct {
	Index   int
	Servers []string
	Live    int // clients that keep sending
	Silent  int // clients that fall silent
	Idle    time.Duration
	Beat    time.Duration
	Fall    time.Duration
	Grace   time.Duration
	Source  string // IP address to dial from
	Dialers int
	Seed    uint64
}

// clientCounts is a load process's progress.
type clientCounts struct {
	LiveConnected   int64 `json:"live_connected"`
	SilentConnected int64 `json:"silent_connected"`
	Failed          int64 `json:"failed"` // connections that could not be made
	// Silent clients that the server disconnected after they fell silent,
	// and those it disconnected before, while they still sent.
	SilentClosed    int64 `json:"silent_closed"`
	SilentLostEarly int64 `json:"silent_lost_early"`
	LiveLost        int64 `json:"live_lost"` // live clients the server disconnected
	// Silent clients disconnected less than the timeout after their last
	// byte (included in SilentClosed).
	Early int64 `json:"early"`
}

func (c *clientCounts) add(o clientCounts) {
	c.LiveConnected += o.LiveConnected
	c.SilentConnected += o.SilentConnected
	c.Failed += o.Failed
	c.SilentClosed += o.SilentClosed
	c.SilentLostEarly += o.SilentLostEarly
	c.LiveLost += o.LiveLost
	c.Early += o.Early
}

// loaderResult is what a load process reports at the end of the window.
type loaderResult struct {
	clientCounts
	// Lateness of each disconnected silent client, in microseconds: from
	// its last byte plus the timeout to the end of its connection, as it
	// saw it.
	Lateness []int64 `json:"lateness_us"`
	// Errors is a sample of what went wrong.
	Errors []string `json:"errors,omitempty"`
}

// progressEvery is how often a load process reports its counts to the
// parent, which prints them every second.
const progressEvery = 500 * time.Millisecond

// loader is a load process's state.
type loader struct {
	cfg    loaderConfig
	dialer net.Dialer
	c      struct {
		liveConnected, silentConnected, failed  atomic.Int64
		silentClosed, silentLostEarly, liveLost atomic.Int64
		early                                   atomic.Int64
	}
	started chan struct{} // closed when the window starts
	start   time.Time     // when it started; read once started is closed

	mu       sync.Mutex
	lateness []int64
	errors   []string
}

func (l *loader) counts() clientCounts {
	return clientCounts{
		LiveConnected:   l.c.liveConnected.Load(),
		SilentConnected: l.c.silentConnected.Load(),
		Failed:          l.c.failed.Load(),
		SilentClosed:    l.c.silentClosed.Load(),
		SilentLostEarly: l.c.silentLostEarly.Load(),
		LiveLost:        l.c.liveLost.Load(),
		Early:           l.c.early.Load(),
	}
}

// note keeps the first few errors.
func (l *loader) note(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.errors) < 5 {
		l.errors = append(l.errors, fmt.Sprintf(format, args...))
	}
}

// runLoader runs one load process: it connects its clients, which start
// sending at once, reports when all are connected, starts the window on
// the parent's go, reports at its end, and returns at the end of its
// standard input, leaving the connections for the system to close.
func runLoader(ctx context.Context, c loaderConfig, out *emitter, cmds <-chan string) error {
	switch {
	case len(c.Servers) == 0:
		return errors.New("no -server")
	case c.Idle <= 0 || c.Beat <= 0:
		return errors.New("-idle and -beat must be positive")
	}
	l := &loader{cfg: c, started: make(chan struct{})}
	l.dialer.Timeout = time.Minute
	if c.Source != "" {
		ip := net.ParseIP(c.Source)
		if ip == nil {
			return fmt.Errorf("-source %q is not an IP address", c.Source)
		}
		l.dialer.LocalAddr = &net.TCPAddr{IP: ip}
	}
	r := rand.New(rand.NewPCG(c.Seed, uint64(c.Index)))
	n := c.Live + c.Silent
	phases := make([]time.Duration, n) // when in its beat each client sends
	falls := make([]time.Duration, n)  // when after the start a silent one stops
	for k := range n {
		phases[k] = time.Duration(r.Int64N(int64(c.Beat)))
		if k >= c.Live && c.Fall > 0 {
			falls[k] = time.Duration(r.Int64N(int64(c.Fall)))
		}
	}

	progressDone := make(chan struct{})
	defer close(progressDone)
	go func() {
		t := time.NewTicker(progressEvery)
		defer t.Stop()
		for {
			select {
			case <-progressDone:
				return
			case <-t.C:
				p := l.counts()
				out.emit(message{Event: "progress", Progress: &p})
			}
		}
	}()

	jobs := make(chan int)
	var wg sync.WaitGroup
	for range c.Dialers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range jobs {
				l.connect(k, k >= c.Live, phases[k], falls[k])
			}
		}()
	}
	for k := range n {
		select {
		case jobs <- k:
		case <-ctx.Done():
			close(jobs)
			wg.Wait()
			return ctx.Err()
		}
	}
	close(jobs)
	wg.Wait()
	p := l.counts()
	out.emit(message{Event: "connected", Progress: &p})

	for cmd := range cmds {
		if cmd == cmdGo {
			l.start = time.Now()
			close(l.started)
			break
		}
	}
	select {
	case <-l.started:
	default:
		return nil // the parent gave up
	}
	select {
	case <-time.After(time.Until(l.start.Add(c.Fall + c.Idle + c.Grace))):
	case <-ctx.Done():
		return ctx.Err()
	}
	res := loaderResult{clientCounts: l.counts()}
	l.mu.Lock()
	res.Lateness = append([]int64(nil), l.lateness...)
	res.Errors = append([]string(nil), l.errors...)
	l.mu.Unlock()
	out.emit(message{Event: "result", Loader: &res})
	for range cmds { // until the end of standard input
	}
	return nil
}

// connect connects client k and starts it.
func (l *loader) connect(k int, silent bool, phase, fall time.Duration) {
	addr := l.cfg.Servers[(k+l.cfg.Index)%len(l.cfg.Servers)]
	conn, err := l.dialer.Dial("tcp", addr)
	if err != nil {
		l.c.failed.Add(1)
		l.note("client %d: %v", k, err)
		return
	}
	if silent {
		l.c.silentConnected.Add(1)
	} else {
		l.c.liveConnected.Add(1)
	}
	go l.client(conn, silent, time.Now().Add(phase), fall)
}

// client sends a byte at once and every beat from next on, and watches for the server
// closing the connection; a silent client stops sending fall after the
// window starts and then waits for the server to close it. One goroutine
// does both: its read deadline is the time of its next byte.
func (l *loader) client(conn net.Conn, silent bool, next time.Time, fall time.Duration) {
	defer conn.Close()
	buf := make([]byte, 1)
	beat := []byte{'.'}
	// A first byte at once: the server counts a connection that has sent
	// nothing from when it accepted it, which the client cannot see, so
	// that every silence is counted here from a byte.
	lastWrite := time.Now()
	if _, err := conn.Write(beat); err != nil {
		l.lost(silent, err)
		return
	}
	started := l.started
	var quiet time.Time // when a silent client stops; zero until the window starts
	for {
		if started != nil {
			select {
			case <-started:
				started = nil
				if silent {
					quiet = l.start.Add(fall)
				}
			default:
			}
		}
		now := time.Now()
		if !quiet.IsZero() && !now.Before(quiet) {
			break // silent from now on
		}
		if !now.Before(next) {
			lastWrite = now
			if _, err := conn.Write(beat); err != nil {
				l.lost(silent, err)
				return
			}
			for !next.After(now) {
				next = next.Add(l.cfg.Beat)
			}
		}
		wake := next
		if !quiet.IsZero() && quiet.Before(wake) {
			wake = quiet
		}
		_ = conn.SetReadDeadline(wake)
		if _, err := conn.Read(buf); err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
			l.lost(silent, err)
			return
		}
	}

	// Silent: only the server can end the connection now.
	_ = conn.SetReadDeadline(time.Now().Add(l.cfg.Fall + l.cfg.Idle + l.cfg.Grace + time.Minute))
	for {
		_, err := conn.Read(buf)
		if err == nil {
			continue
		}
		if !closedByServer(err) {
			return // still open at the end: counted as not disconnected
		}
		took := time.Since(lastWrite)
		l.c.silentClosed.Add(1)
		if took < l.cfg.Idle {
			l.c.early.Add(1)
			l.note("a silent client was disconnected %v after its last byte, before the timeout of %v", took, l.cfg.Idle)
		}
		l.mu.Lock()
		l.lateness = append(l.lateness, (took - l.cfg.Idle).Microseconds())
		l.mu.Unlock()
		return
	}
}

// lost counts a client that the server disconnected while it still sent.
func (l *loader) lost(silent bool, err error) {
	if silent {
		l.c.silentLostEarly.Add(1)
	} else {
		l.c.liveLost.Add(1)
	}
	l.note("a client still sending was disconnected: %v", err)
}

// closedByServer reports whether a read error means the server closed the
// connection.
func closedByServer(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)
}
