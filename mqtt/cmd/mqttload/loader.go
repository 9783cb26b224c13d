package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
	"github.com/go-schedule/schedule/mqtt"
	"github.com/go-schedule/schedule/mqtt/internal/wire"
)

// loaderConfig is one load process's.
type loaderConfig struct {
	Index     int
	Brokers   []string
	Live      int // paho clients
	Silent    int // bare clients that fall silent
	KeepAlive int // seconds
	Fall      time.Duration
	Grace     time.Duration
	Source    string // IP address to dial from
	Dialers   int
	Seed      uint64
}

// loaderCounts is a load process's progress.
type loaderCounts struct {
	LiveConnected   int64 `json:"live_connected"`
	SilentConnected int64 `json:"silent_connected"`
	Failed          int64 `json:"failed"` // connections that could not be made
	// Silent clients whose connection the broker closed after they fell
	// silent, and before.
	SilentClosed    int64 `json:"silent_closed"`
	SilentLostEarly int64 `json:"silent_lost_early"`
	LiveLost        int64 `json:"live_lost"` // paho clients whose connection was lost
}

// loaderResult is what a load process reports at the end of the window.
type loaderResult struct {
	loaderCounts
	// Silent clients disconnected before 1.5 × Keep Alive had passed
	// since their last packet (included in SilentClosed).
	Early int64 `json:"early"`
	// Lateness of each silent client's disconnection past 1.5 × Keep
	// Alive after its last packet, in microseconds.
	Lateness []int64 `json:"lateness_us"`
	// Errors is a sample of what went wrong.
	Errors []string `json:"errors,omitempty"`
}

// loader is a load process's state.
type loader struct {
	cfg     loaderConfig
	timeout time.Duration
	dialer  *net.Dialer
	c       struct {
		liveConnected, silentConnected, failed  atomic.Int64
		silentClosed, silentLostEarly, liveLost atomic.Int64
		early                                   atomic.Int64
	}
	started chan struct{} // closed when the window starts
	start   time.Time     // when it started; read after started is closed

	mu       sync.Mutex
	lateness []int64
	errors   []string
}

// note keeps a sample of errors.
func (l *loader) note(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.errors) < 5 {
		l.errors = append(l.errors, fmt.Sprintf(format, args...))
	}
}

func (l *loader) counts() loaderCounts {
	return loaderCounts{
		LiveConnected:   l.c.liveConnected.Load(),
		SilentConnected: l.c.silentConnected.Load(),
		Failed:          l.c.failed.Load(),
		SilentClosed:    l.c.silentClosed.Load(),
		SilentLostEarly: l.c.silentLostEarly.Load(),
		LiveLost:        l.c.liveLost.Load(),
	}
}

// runLoader runs one load process: it connects its clients, reports when
// they are, starts the window on the parent's go, reports at the end of
// the window, and returns at the end of its standard input, leaving its
// connections for the system to close.
func runLoader(ctx context.Context, c loaderConfig, out *emitter, cmds <-chan string) error {
	if len(c.Brokers) == 0 {
		return errors.New("no -broker")
	}
	src := net.ParseIP(c.Source)
	if c.Source != "" && src == nil {
		return fmt.Errorf("-source %q is not an IP address", c.Source)
	}
	l := &loader{
		cfg:     c,
		timeout: mqtt.Timeout(uint16(c.KeepAlive)),
		dialer:  &net.Dialer{Timeout: time.Minute},
		started: make(chan struct{}),
	}
	if src != nil {
		l.dialer.LocalAddr = &net.TCPAddr{IP: src}
	}
	r := rand.New(rand.NewPCG(c.Seed, uint64(c.Index)))
	falls := make([]time.Duration, c.Silent)
	for i := range falls {
		if c.Fall > 0 {
			falls[i] = time.Duration(r.Int64N(int64(c.Fall)))
		}
	}

	progressDone := make(chan struct{})
	defer close(progressDone)
	go func() {
		t := time.NewTicker(500 * time.Millisecond)
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

	// Connect: the paho clients first, then the silent ones.
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range c.Dialers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range jobs {
				if k < c.Live {
					l.connectLive(k)
				} else {
					l.connectSilent(k-c.Live, falls[k-c.Live])
				}
			}
		}()
	}
	for k := range c.Live + c.Silent {
		select {
		case jobs <- k:
		case <-ctx.Done():
			close(jobs)
			return ctx.Err()
		}
	}
	close(jobs)
	wg.Wait()
	p := l.counts()
	out.emit(message{Event: "connected", Progress: &p})

	// Wait for the window.
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
	end := l.start.Add(c.Fall + l.timeout + c.Grace)
	select {
	case <-time.After(time.Until(end)):
	case <-ctx.Done():
		return ctx.Err()
	}
	res := loaderResult{loaderCounts: l.counts(), Early: l.c.early.Load()}
	l.mu.Lock()
	res.Lateness = append([]int64(nil), l.lateness...)
	res.Errors = append([]string(nil), l.errors...)
	l.mu.Unlock()
	out.emit(message{Event: "result", Loader: &res})
	for range cmds { // until the end of standard input
	}
	return nil
}

// broker returns the address client k connects to.
func (l *loader) broker(k int) string {
	return l.cfg.Brokers[(k+l.cfg.Index)%len(l.cfg.Brokers)]
}

// connectLive connects paho client k, which then pings by itself.
func (l *loader) connectLive(k int) {
	id := fmt.Sprintf("live-%d-%d", l.cfg.Index, k)
	opts := paho.NewClientOptions().
		AddBroker("tcp://"+l.broker(k)).
		SetClientID(id).
		SetCleanSession(true).
		SetKeepAlive(time.Duration(l.cfg.KeepAlive)*time.Second).
		SetAutoReconnect(false).
		SetConnectRetry(false).
		SetConnectTimeout(time.Minute).
		SetWill("will/live/"+id, "offline", 0, false).
		SetDialer(l.dialer).
		SetConnectionLostHandler(func(_ paho.Client, err error) {
			l.c.liveLost.Add(1)
			l.note("live client %s lost: %v", id, err)
		})
	cl := paho.NewClient(opts)
	tok := cl.Connect()
	if !tok.WaitTimeout(2 * time.Minute) {
		l.c.failed.Add(1)
		l.note("live client %s: connect timed out", id)
		return
	}
	if err := tok.Error(); err != nil {
		l.c.failed.Add(1)
		l.note("live client %s: %v", id, err)
		return
	}
	l.c.liveConnected.Add(1)
}

// connectSilent connects bare client k, which pings every half Keep Alive
// until fall after the window starts, then sends nothing.
func (l *loader) connectSilent(k int, fall time.Duration) {
	id := fmt.Sprintf("silent-%d-%d", l.cfg.Index, k)
	conn, err := l.dialer.Dial("tcp", l.broker(k))
	if err != nil {
		l.c.failed.Add(1)
		l.note("silent client %s: %v", id, err)
		return
	}
	lastWrite := time.Now() // of the CONNECT
	w, err := wire.Connect(conn, wire.Options{ClientID: id, KeepAlive: uint16(l.cfg.KeepAlive), WillTopic: "will/silent/" + id})
	if err != nil {
		conn.Close()
		l.c.failed.Add(1)
		l.note("silent client %s: %v", id, err)
		return
	}
	l.c.silentConnected.Add(1)
	go l.silent(w, id, fall, lastWrite)
}

// silent runs a connected silent client.
func (l *loader) silent(w *wire.Conn, id string, fall time.Duration, lastWrite time.Time) {
	defer w.Close()
	every := time.Duration(l.cfg.KeepAlive) * time.Second / 2
	tick := time.NewTicker(every)
	defer tick.Stop()
	// Ping until fall after the window starts. A nil channel never
	// delivers: quiet waits for the start.
	var quiet <-chan time.Time
	started := l.started
pinging:
	for {
		select {
		case <-started:
			started = nil
			quiet = time.After(time.Until(l.start.Add(fall)))
		case <-quiet:
			break pinging
		case <-tick.C:
			lastWrite = time.Now()
			err := w.Ping()
			if err == nil {
				_ = w.SetReadDeadline(time.Now().Add(time.Minute))
				_, _, err = w.ReadPacket() // PINGRESP
			}
			if err != nil {
				l.c.silentLostEarly.Add(1)
				l.note("silent client %s disconnected before falling silent: %v", id, err)
				return
			}
		}
	}
	// Silent from now on: wait for the broker to close the connection.
	_ = w.SetReadDeadline(time.Now().Add(l.cfg.Fall + l.timeout + l.cfg.Grace + time.Minute))
	if err := w.WaitClosed(); err != nil {
		return // still open at the end: counted as not disconnected
	}
	took := time.Since(lastWrite)
	l.c.silentClosed.Add(1)
	if took < l.timeout {
		l.c.early.Add(1)
		l.note("silent client %s disconnected %v after its last packet, before %v", id, took, l.timeout)
	}
	l.mu.Lock()
	l.lateness = append(l.lateness, (took - l.timeout).Microseconds())
	l.mu.Unlock()
}
