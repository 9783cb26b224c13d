package mqtt_test

import (
	"fmt"
	"math/rand/v2"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-schedule/schedule/mqtt"
	"github.com/go-schedule/schedule/mqtt/internal/wire"
)

// watched counts the clients whose keep-alive is watched: by the hook, or
// as a task of the wrapped listener's connections.
func watched(b *broker) int {
	if b.ka != nil {
		return b.ka.Len()
	}
	return b.sched.Len()
}

// TestManyClientsExactCounts connects a few thousand clients (fewer under
// the race detector) with a Keep Alive of 1 s. Every client pings every
// 500 ms; a fifth of them, chosen at random, stop at a random moment in
// their first 2 s and then send nothing. Exactly those must be
// disconnected, none before 1.5 s after the last packet it sent, each
// with its will published, and no other client disconnected or will
// published. Lateness is logged, not checked: timing belongs to the load
// command (cmd/mqttload).
func TestManyClientsExactCounts(t *testing.T) {
	manyClientsExactCounts(t, brokerOptions{}, keepAlive)
}

// TestListenerManyClientsExactCounts is TestManyClientsExactCounts with
// mochi's own keep-alive on the wrapped listener, and a Keep Alive of 2 s,
// for which mochi's whole-second deadline is exactly 1.5 × Keep Alive.
// Every silent client costs exactly one expiry job, and no live client any.
func TestListenerManyClientsExactCounts(t *testing.T) {
	manyClientsExactCounts(t, brokerOptions{listener: true}, 2)
}

func manyClientsExactCounts(t *testing.T, opts brokerOptions, keepAlive uint16) {
	timeout := mqtt.Timeout(keepAlive)
	n := 2000
	if raceEnabled {
		n = 800
	}
	if testing.Short() {
		n = 200
	}
	const (
		pingEvery = 500 * time.Millisecond
		fallMax   = 2 * time.Second
		dialers   = 32
		seed      = 1
		topicFmt  = "will/%d"
	)
	b := startBroker(t, opts)
	r := rand.New(rand.NewPCG(seed, 0))
	silent := make([]bool, n)
	for _, i := range r.Perm(n)[:n/5] {
		silent[i] = true
	}
	fall := make([]time.Duration, n)
	for i := range fall {
		fall[i] = time.Duration(r.Int64N(int64(fallMax)))
	}

	type outcome struct {
		dialErr   error
		lost      error         // a live client's connection ended
		closedIn  time.Duration // a silent client: from its last write to the end of the connection
		notClosed error         // a silent client still connected at the end
	}
	out := make([]outcome, n)
	stop := make(chan struct{}) // the silent clients are done: live ones may leave
	var wg, silentWG sync.WaitGroup
	sem := make(chan struct{}, dialers)
	for i := range n {
		wg.Add(1)
		if silent[i] {
			silentWG.Add(1)
		}
		go func() {
			defer wg.Done()
			if silent[i] {
				defer silentWG.Done()
			}
			o := &out[i]
			sem <- struct{}{}
			c, err := net.Dial("tcp", b.addr)
			lastWrite := time.Now() // of the CONNECT
			var w *wire.Conn
			if err == nil {
				w, err = wire.Connect(c, wire.Options{ClientID: fmt.Sprint(i), KeepAlive: keepAlive, WillTopic: fmt.Sprintf(topicFmt, i)})
				if err != nil {
					c.Close()
				}
			}
			<-sem
			if err != nil {
				o.dialErr = err
				return
			}
			defer w.Close()
			// ping writes a PINGREQ and reads the PINGRESP.
			ping := func() error {
				lastWrite = time.Now()
				if err := w.Ping(); err != nil {
					return err
				}
				_ = w.SetReadDeadline(time.Now().Add(patience))
				_, _, err := w.ReadPacket()
				return err
			}
			tick := time.NewTicker(pingEvery)
			defer tick.Stop()
			if silent[i] {
				quiet := time.After(fall[i])
			pinging:
				for {
					select {
					case <-quiet:
						break pinging
					case <-tick.C:
						if err := ping(); err != nil {
							o.notClosed = fmt.Errorf("disconnected while pinging: %w", err)
							return
						}
					}
				}
				_ = w.SetReadDeadline(time.Now().Add(patience))
				if err := w.WaitClosed(); err != nil {
					o.notClosed = err
					return
				}
				o.closedIn = time.Since(lastWrite)
				return
			}
			for {
				select {
				case <-stop:
					if o.lost = ping(); o.lost == nil { // still connected at the end
						_ = w.Disconnect() // no will
					}
					return
				case <-tick.C:
					if err := ping(); err != nil {
						o.lost = err
						return
					}
				}
			}
		}()
	}
	silentWG.Wait()
	live := n - n/5
	// Every live client is watched (has a task); none of the silent ones is.
	if got := watched(b); got != live {
		t.Errorf("watching %d clients with the silent ones gone, want %d", got, live)
	}
	var want []string
	for i := range n {
		if silent[i] {
			want = append(want, fmt.Sprintf(topicFmt, i))
		}
	}
	got := b.waitWills(len(want), patience)
	close(stop)
	wg.Wait()

	var disconnected, early, lost int
	var lateness []time.Duration
	for i, o := range out {
		switch {
		case o.dialErr != nil:
			t.Fatalf("client %d: %v", i, o.dialErr)
		case silent[i] && o.notClosed != nil:
			t.Errorf("silent client %d: %v", i, o.notClosed)
		case silent[i]:
			disconnected++
			lateness = append(lateness, o.closedIn-timeout)
			if o.closedIn < timeout {
				early++
				t.Errorf("silent client %d disconnected %v after its last packet, before 1.5 × keep-alive", i, o.closedIn)
			}
		case o.lost != nil:
			lost++
			if lost <= 5 {
				t.Errorf("live client %d disconnected: %v", i, o.lost)
			}
		}
	}
	if disconnected != n/5 {
		t.Errorf("%d silent clients disconnected, want %d", disconnected, n/5)
	}
	if lost > 0 {
		t.Errorf("%d live clients disconnected, want 0", lost)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("%d wills published with the silent clients gone, want exactly the %d silent clients'", len(got), len(want))
	}
	if all := b.willTopics(); len(all) != len(want) {
		t.Errorf("%d wills published in all, want %d: live clients' among them", len(all), len(want))
	}
	if b.ka != nil {
		if e := b.ka.Expired(); e != uint64(n/5) {
			t.Errorf("Expired() = %d, want %d", e, n/5)
		}
	} else if fired := b.sched.Stats().Started; fired != uint64(n/5) {
		t.Errorf("%d expiry jobs ran, want one per silent client: %d", fired, n/5)
	}
	slices.Sort(lateness)
	if len(lateness) > 0 {
		t.Logf("%d clients, %d silent: detected %d, early %d, live lost %d; lateness past 1.5 × keep-alive p50 %v p99 %v max %v",
			n, n/5, disconnected, early, lost,
			lateness[len(lateness)/2], lateness[len(lateness)*99/100], lateness[len(lateness)-1])
	}
}
