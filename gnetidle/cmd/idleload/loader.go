package main

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"syscall"
	"time"

	"github.com/go-schedule/schedule/bench/loadtest"
)

// loader is a load process's state: raw TCP clients that send a byte
// every beat, the silent ones until they fall silent.
type loader struct {
	*loadtest.Loader
	beat time.Duration
}

// runLoader runs one load process, whose servers close a connection idle
// for idle, and whose clients send a byte every beat: it connects its
// clients, which start sending at once, reports when all are connected,
// starts the window on the parent's go, reports at its end, and returns at
// the end of its standard input, leaving the connections for the system to
// close.
func runLoader(ctx context.Context, c loadtest.LoadConfig, idle, beat time.Duration, out *emitter, cmds <-chan string) error {
	lt, err := loadtest.NewLoader(c, idle)
	if err != nil {
		return err
	}
	if idle <= 0 || beat <= 0 {
		return errors.New("-idle and -beat must be positive")
	}
	l := &loader{Loader: lt, beat: beat}
	r := rand.New(rand.NewPCG(c.Seed, uint64(c.Index)))
	n := c.Live + c.Silent
	phases := make([]time.Duration, n) // when in its beat each client sends
	falls := make([]time.Duration, n)  // when after the start a silent one stops
	for k := range n {
		phases[k] = time.Duration(r.Int64N(int64(beat)))
		if k >= c.Live && c.Fall > 0 {
			falls[k] = time.Duration(r.Int64N(int64(c.Fall)))
		}
	}
	return loadtest.RunLoader(ctx, l.Loader, out, cmds, func(k int) {
		l.connect(k, k >= c.Live, phases[k], falls[k])
	})
}

// connect connects client k and starts it.
func (l *loader) connect(k int, silent bool, phase, fall time.Duration) {
	conn, err := l.Dialer.Dial("tcp", l.Server(k))
	if err != nil {
		l.Failed.Add(1)
		l.Note("client %d: %v", k, err)
		return
	}
	if silent {
		l.SilentConnected.Add(1)
	} else {
		l.LiveConnected.Add(1)
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
	started := l.Started()
	var quiet time.Time // when a silent client stops; zero until the window starts
	for {
		if started != nil {
			select {
			case <-started:
				started = nil
				if silent {
					quiet = l.Start().Add(fall)
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
				next = next.Add(l.beat)
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
	_ = conn.SetReadDeadline(l.SilentDeadline())
	for {
		_, err := conn.Read(buf)
		if err == nil {
			continue
		}
		if !closedByServer(err) {
			return // still open at the end: counted as not disconnected
		}
		if took := time.Since(lastWrite); l.Closed(took) {
			l.Note("a silent client was disconnected %v after its last byte, before the timeout of %v", took, l.Timeout)
		}
		return
	}
}

// lost counts a client that the server disconnected while it still sent.
func (l *loader) lost(silent bool, err error) {
	if silent {
		l.SilentLostEarly.Add(1)
	} else {
		l.LiveLost.Add(1)
	}
	l.Note("a client still sending was disconnected: %v", err)
}

// closedByServer reports whether a read error means the server closed the
// connection.
func closedByServer(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)
}
