package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
	"github.com/go-schedule/schedule/bench/loadtest"
	"github.com/go-schedule/schedule/mqtt"
	"github.com/go-schedule/schedule/mqtt/internal/wire"
)

// loader is a load process's state: paho clients that ping by themselves,
// and bare clients that ping until they fall silent.
type loader struct {
	*loadtest.Loader
	keepAlive int // seconds

	mu        sync.Mutex
	lastWrite map[string]time.Time // of each silent client, by client ID, until its will arrives
}

// runLoader runs one load process: it connects its clients, reports when
// they are, starts the window on the parent's go, reports at the end of
// the window, and returns at the end of its standard input, leaving its
// connections for the system to close.
func runLoader(ctx context.Context, c loadtest.LoadConfig, keepAlive int, out *emitter, cmds <-chan string) error {
	lt, err := loadtest.NewLoader(c, mqtt.Timeout(uint16(keepAlive)))
	if err != nil {
		return err
	}
	l := &loader{Loader: lt, keepAlive: keepAlive, lastWrite: make(map[string]time.Time)}
	// One subscriber per broker receives the silent clients' wills, so
	// that the report can say when a will's subscribers learn of the
	// disconnection, besides when the client does.
	for _, server := range c.Servers {
		if err := l.watchWills(server); err != nil {
			return err
		}
	}
	r := rand.New(rand.NewPCG(c.Seed, uint64(c.Index)))
	falls := make([]time.Duration, c.Silent)
	for i := range falls {
		if c.Fall > 0 {
			falls[i] = time.Duration(r.Int64N(int64(c.Fall)))
		}
	}
	// The paho clients first, then the silent ones.
	return loadtest.RunLoader(ctx, l.Loader, out, cmds, func(k int) {
		if k < c.Live {
			l.connectLive(k)
		} else {
			l.connectSilent(k-c.Live, falls[k-c.Live])
		}
	})
}

// watchWills subscribes to the silent clients' wills on server.
func (l *loader) watchWills(server string) error {
	id := fmt.Sprintf("wills-%d-%s", l.Config.Index, server)
	opts := paho.NewClientOptions().
		AddBroker("tcp://" + server).
		SetClientID(id).
		SetCleanSession(true).
		SetKeepAlive(time.Duration(l.keepAlive) * time.Second).
		SetAutoReconnect(false).
		SetConnectTimeout(time.Minute).
		SetDialer(l.Dialer)
	cl := paho.NewClient(opts)
	if tok := cl.Connect(); !tok.WaitTimeout(2*time.Minute) || tok.Error() != nil {
		return fmt.Errorf("will subscriber on %s: %v", server, tok.Error())
	}
	tok := cl.Subscribe(silentWills+"#", 0, func(_ paho.Client, m paho.Message) {
		arrived := time.Now()
		client := strings.TrimPrefix(m.Topic(), silentWills)
		l.mu.Lock()
		last, ok := l.lastWrite[client]
		delete(l.lastWrite, client)
		l.mu.Unlock()
		if ok {
			l.WillArrived(arrived.Sub(last))
		}
	})
	if !tok.WaitTimeout(time.Minute) || tok.Error() != nil {
		return fmt.Errorf("will subscriber on %s: subscribe: %v", server, tok.Error())
	}
	return nil
}

// The prefixes of the silent clients' IDs and of their wills' topics.
const (
	silentID    = "silent-"
	silentWills = "will/silent/"
)

// wrote records a silent client's last write so far.
func (l *loader) wrote(id string, at time.Time) {
	l.mu.Lock()
	l.lastWrite[id] = at
	l.mu.Unlock()
}

// connectLive connects paho client k, which then pings by itself.
func (l *loader) connectLive(k int) {
	id := fmt.Sprintf("live-%d-%d", l.Config.Index, k)
	opts := paho.NewClientOptions().
		AddBroker("tcp://"+l.Server(k)).
		SetClientID(id).
		SetCleanSession(true).
		SetKeepAlive(time.Duration(l.keepAlive)*time.Second).
		SetAutoReconnect(false).
		SetConnectRetry(false).
		SetConnectTimeout(time.Minute).
		SetWill("will/live/"+id, "offline", 0, false).
		SetDialer(l.Dialer).
		SetConnectionLostHandler(func(_ paho.Client, err error) {
			l.LiveLost.Add(1)
			l.Note("live client %s lost: %v", id, err)
		})
	cl := paho.NewClient(opts)
	tok := cl.Connect()
	if !tok.WaitTimeout(2 * time.Minute) {
		l.Failed.Add(1)
		l.Note("live client %s: connect timed out", id)
		return
	}
	if err := tok.Error(); err != nil {
		l.Failed.Add(1)
		l.Note("live client %s: %v", id, err)
		return
	}
	l.LiveConnected.Add(1)
}

// connectSilent connects bare client k, which pings every half Keep Alive
// until fall after the window starts, then sends nothing.
func (l *loader) connectSilent(k int, fall time.Duration) {
	id := fmt.Sprintf("%s%d-%d", silentID, l.Config.Index, k)
	conn, err := l.Dialer.Dial("tcp", l.Server(k))
	if err != nil {
		l.Failed.Add(1)
		l.Note("silent client %s: %v", id, err)
		return
	}
	lastWrite := time.Now() // of the CONNECT
	l.wrote(id, lastWrite)
	w, err := wire.Connect(conn, wire.Options{ClientID: id, KeepAlive: uint16(l.keepAlive), WillTopic: silentWills + id})
	if err != nil {
		conn.Close()
		l.Failed.Add(1)
		l.Note("silent client %s: %v", id, err)
		return
	}
	l.SilentConnected.Add(1)
	go l.silent(w, id, fall, lastWrite)
}

// silent runs a connected silent client.
func (l *loader) silent(w *wire.Conn, id string, fall time.Duration, lastWrite time.Time) {
	defer w.Close()
	every := time.Duration(l.keepAlive) * time.Second / 2
	tick := time.NewTicker(every)
	defer tick.Stop()
	// Ping until fall after the window starts. A nil channel never
	// delivers: quiet waits for the start.
	var quiet <-chan time.Time
	started := l.Started()
pinging:
	for {
		select {
		case <-started:
			started = nil
			quiet = time.After(time.Until(l.Start().Add(fall)))
		case <-quiet:
			break pinging
		case <-tick.C:
			lastWrite = time.Now()
			l.wrote(id, lastWrite)
			err := w.Ping()
			if err == nil {
				_ = w.SetReadDeadline(time.Now().Add(time.Minute))
				_, _, err = w.ReadPacket() // PINGRESP
			}
			if err != nil {
				l.SilentLostEarly.Add(1)
				l.Note("silent client %s disconnected before falling silent: %v", id, err)
				return
			}
		}
	}
	// Silent from now on: wait for the broker to close the connection.
	l.FellSilent(id, lastWrite)
	_ = w.SetReadDeadline(l.SilentDeadline())
	if err := w.WaitClosed(); err != nil {
		return // still open at the end: counted as not disconnected
	}
	if took := time.Since(lastWrite); l.Closed(took) {
		l.Note("silent client %s disconnected %v after its last packet, before %v", id, took, l.Timeout)
	}
}
