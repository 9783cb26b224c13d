package mqtt_test

import (
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/go-schedule/schedule"
	"github.com/go-schedule/schedule/heartbeat"
	"github.com/go-schedule/schedule/mqtt"
	"github.com/go-schedule/schedule/netdeadline"
	mochi "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/hooks/auth"
	"github.com/mochi-mqtt/server/v2/packets"
)

// What a keep-alive costs a mochi v2.7.9 broker for each packet it reads,
// measured piece by piece in one run:
//
//	go test -run '^$' -bench PacketRead -count 5 .
//
// Before it reads each packet, mochi's read loop sets the socket's
// deadline: now plus 1.5 × Keep Alive, or, with a Keep Alive of 0 (which
// the hook sets once it watches a client), no deadline. After decoding the
// packet it calls OnPacketRead on every hook that provides it, copying the
// packet (a struct of several hundred bytes) in and out. The rows:
//
//   - deadline=mochi: Conn.SetDeadline(now + 6 s), mochi's own keep-alive
//     at a Keep Alive of 4 s: a postponed runtime timer;
//   - deadline=off: Conn.SetDeadline of the zero time, what mochi still
//     does for a client whose keep-alive the hook enforces;
//   - hooks=allow: the OnPacketRead dispatch with auth.AllowHook alone,
//     which does not provide it (every broker pays this);
//   - hooks=allow+noop: the same plus a hook that provides OnPacketRead
//     and does nothing: the price of mochi's hook interface itself;
//   - hooks=allow+keepalive: the same with the KeepAlive hook, the client
//     watched: the interface plus Monitor.Refresh;
//   - deadline=listener: the same SetDeadline on the connection wrapped by
//     the listener NewTCP returns: a Reset of the connection's task;
//   - packet=mochi, packet=listener and packet=hook: the whole per-packet
//     keep-alive work of each, deadline and hooks together. packet=listener
//     and packet=hook report their ns/op as a ratio to packet=mochi's
//     (x-mochi).
//
// Each iteration works on a random one of benchConns connections (or
// clients), each with its deadline pending, as in a broker. That many fit
// in the processor's caches, which a broker's do not keep between two
// packets of a client: BenchmarkRefresh measures the lookup with more
// clients than the caches hold.

// benchConns is how many connections the benchmarks spread packets over:
// loopback TCP connections for the deadline rows (two open files each),
// watched clients for the hook rows.
const benchConns = 2000

// benchKeepAlive is the Keep Alive of the benchmarks' clients, in seconds:
// mqttload's default.
const benchKeepAlive = 4

// noopHook provides OnPacketRead and does nothing else.
type noopHook struct{ mochi.HookBase }

func (*noopHook) ID() string            { return "noop" }
func (*noopHook) Provides(b byte) bool  { return b == mochi.OnPacketRead }
func (*noopHook) Init(config any) error { return nil }
func (*noopHook) OnPacketRead(_ *mochi.Client, pk packets.Packet) (packets.Packet, error) {
	return pk, nil
}

// loopbackConns returns the server ends of n loopback TCP connections; the
// benchmark's cleanup closes both ends.
func loopbackConns(b *testing.B, n int) []net.Conn {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	conns := make([]net.Conn, 0, n)
	b.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	for range n {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			b.Fatal(err)
		}
		conns = append(conns, c)
		s, err := ln.Accept()
		if err != nil {
			b.Fatal(err)
		}
		conns = append(conns, s)
	}
	servers := make([]net.Conn, 0, n)
	for i := 1; i < len(conns); i += 2 {
		servers = append(servers, conns[i])
	}
	return servers
}

// hooks returns mochi's hook list with auth.AllowHook and then extra.
func hooks(b *testing.B, extra ...mochi.Hook) *mochi.Hooks {
	b.Helper()
	h := &mochi.Hooks{Log: quiet}
	for _, hook := range append([]mochi.Hook{new(auth.AllowHook)}, extra...) {
		if err := h.Add(hook, nil); err != nil {
			b.Fatal(err)
		}
	}
	return h
}

// xorshift is a cheap random index.
type xorshift uint64

func (r *xorshift) intn(n int) int {
	*r ^= *r << 13
	*r ^= *r >> 7
	*r ^= *r << 17
	return int(uint64(*r) % uint64(n))
}

// BenchmarkPacketRead: see above.
func BenchmarkPacketRead(b *testing.B) {
	timeout := time.Duration(benchKeepAlive+benchKeepAlive/2) * time.Second // mochi's
	conns := loopbackConns(b, benchConns)
	for _, c := range conns {
		if err := c.SetDeadline(time.Now().Add(timeout)); err != nil {
			b.Fatal(err)
		}
	}

	s, err := schedule.New(4)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(s.Shutdown)
	ka := mqtt.NewKeepAlive(s)
	clients := make([]*mochi.Client, benchConns)
	for i := range clients {
		cl := new(mochi.Client)
		cl.State.Keepalive = benchKeepAlive
		clients[i] = cl
	}
	withHook := hooks(b, ka)
	for _, cl := range clients {
		withHook.OnSessionEstablished(cl, packets.Packet{})
	}
	if ka.Len() != benchConns {
		b.Fatalf("%d clients watched, want %d", ka.Len(), benchConns)
	}
	allow := hooks(b)
	noop := hooks(b, new(noopHook))
	ping := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Pingreq}}

	wrapped := make([]net.Conn, benchConns)
	for i, c := range conns {
		w, err := netdeadline.NewConn(c, s)
		if err != nil {
			b.Fatal(err)
		}
		if err := w.SetDeadline(time.Now().Add(timeout)); err != nil {
			b.Fatal(err)
		}
		wrapped[i] = w
	}

	var base float64 // packet=mochi's ns/op
	run := func(name string, f func(i int) error) float64 {
		var ns float64
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			r := xorshift(1)
			for b.Loop() {
				if err := f(r.intn(benchConns)); err != nil {
					b.Fatal(err)
				}
			}
			ns = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
			if base > 0 {
				b.ReportMetric(ns/base, "x-mochi")
			}
		})
		return ns
	}
	dispatch := func(h *mochi.Hooks, i int) error {
		_, err := h.OnPacketRead(clients[i], ping)
		return err
	}
	run("deadline=mochi", func(i int) error { return conns[i].SetDeadline(time.Now().Add(timeout)) })
	run("deadline=off", func(i int) error { return conns[i].SetDeadline(time.Time{}) })
	run("deadline=listener", func(i int) error { return wrapped[i].SetDeadline(time.Now().Add(timeout)) })
	// The deadline rows leave every connection without a deadline; the
	// packet rows set them again, as each keep-alive would.
	for _, c := range conns {
		if err := c.SetDeadline(time.Now().Add(timeout)); err != nil {
			b.Fatal(err)
		}
	}
	run("hooks=allow", func(i int) error { return dispatch(allow, i) })
	run("hooks=allow+noop", func(i int) error { return dispatch(noop, i) })
	run("hooks=allow+keepalive", func(i int) error { return dispatch(withHook, i) })
	base = run("packet=mochi", func(i int) error {
		if err := conns[i].SetDeadline(time.Now().Add(timeout)); err != nil {
			return err
		}
		return dispatch(allow, i)
	})
	run("packet=listener", func(i int) error {
		if err := wrapped[i].SetDeadline(time.Now().Add(timeout)); err != nil {
			return err
		}
		return dispatch(allow, i)
	})
	for _, c := range conns {
		if err := c.SetDeadline(time.Time{}); err != nil {
			b.Fatal(err)
		}
	}
	run("packet=hook", func(i int) error {
		if err := conns[i].SetDeadline(time.Time{}); err != nil {
			return err
		}
		return dispatch(withHook, i)
	})
}

// BenchmarkRefresh measures Monitor.Refresh of random watched clients, as
// the hook calls it for every packet, in the two ways a Monitor can hold a
// client's timeout: as the Monitor's own timeout (timeout=monitor's), or as
// a timeout of the key's own, given by Watch to a Monitor with another
// timeout (timeout=key's, what the hook does for every Keep Alive but
// 60 s), which the Monitor keeps in the key's slot of its index. With
// clients=2000 everything stays in the caches; with clients=250000 it
// does not, as in a broker between two packets of a client. The
// timeout=key's rows report their ns/op as a ratio to the timeout=monitor's
// row of the same size (x-monitor).
//
//	go test -run '^$' -bench Refresh -count 5 .
func BenchmarkRefresh(b *testing.B) {
	const clientTimeout = 6 * time.Second // Keep Alive 4 s
	for _, n := range []int{benchConns, 250_000} {
		clients := make([]mochi.Client, n) // only their addresses matter
		var base float64
		for _, own := range []bool{false, true} {
			name := fmt.Sprintf("clients=%d/timeout=monitor's", n)
			monitorTimeout := clientTimeout
			if own {
				name = fmt.Sprintf("clients=%d/timeout=key's", n)
				monitorTimeout = 90 * time.Second
			}
			b.Run(name, func(b *testing.B) {
				s, err := schedule.New(4)
				if err != nil {
					b.Fatal(err)
				}
				defer s.Shutdown()
				m, err := heartbeat.New(s, monitorTimeout, func(*mochi.Client) {})
				if err != nil {
					b.Fatal(err)
				}
				for i := range clients {
					if err := m.Watch(&clients[i], clientTimeout); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportAllocs()
				r := xorshift(1)
				for b.Loop() {
					if !m.Refresh(&clients[r.intn(n)]) {
						b.Fatal("a watched client is not watched")
					}
				}
				ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
				if !own {
					base = ns
				} else if base > 0 {
					b.ReportMetric(ns/base, "x-monitor")
				}
			})
		}
	}
}
