package gnetidle_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/go-schedule/schedule/gnetidle/internal/gnetutil"
	"github.com/panjf2000/gnet/v2"
	"github.com/stretchr/testify/require"
)

// closeOrderBroken names what a gnet upgrade broke when the test below
// fails, and where to look.
const closeOrderBroken = "gnet closed the connection's file descriptor before calling OnClose. " +
	"gnetidle keys its connection table by descriptor (conns.go) and relies on gnet calling OnClose " +
	"(where the Watch leaves its slot) before closing the descriptor, as gnet v2.9.7 does " +
	"(eventloop_unix.go: OnClose, then unix.Close): otherwise the kernel may give the descriptor to a " +
	"new connection while the old Watch still holds its slot, and Start refuses it or WatchOf returns " +
	"the old connection's Watch. Re-think conns.go before taking this gnet version"

// orderProbe is a gnet server that, in OnClose, checks that the
// connection's descriptor is still open and still the connection's socket:
// its peer is the connection's remote address.
type orderProbe struct {
	gnet.BuiltinEventEngine
	closes chan error // one per OnClose: nil when the descriptor was still the connection's
}

func (p *orderProbe) OnTraffic(c gnet.Conn) gnet.Action {
	buf, _ := c.Next(-1)
	switch string(buf) {
	case "action":
		return gnet.Close // the Action of an event handler
	case "loop":
		// What gnetidle does for an idle connection: EventLoop.Close from
		// a task run on the connection's event loop.
		_ = c.EventLoop().Execute(context.Background(), gnet.RunnableFunc(func(context.Context) error {
			return c.EventLoop().Close(c)
		}))
	}
	return gnet.None
}

func (p *orderProbe) OnClose(c gnet.Conn, _ error) gnet.Action {
	p.closes <- descriptorStillOf(c)
	return gnet.None
}

// descriptorStillOf returns nil if c's descriptor is open and connected to
// c's remote address, and what it found otherwise.
func descriptorStillOf(c gnet.Conn) error {
	sa, err := syscall.Getpeername(c.Fd())
	if err != nil {
		return fmt.Errorf("getpeername(fd %d): %w", c.Fd(), err)
	}
	in, ok := sa.(*syscall.SockaddrInet4)
	if !ok {
		return fmt.Errorf("fd %d is connected to %#v, not an IPv4 peer", c.Fd(), sa)
	}
	want, _ := c.RemoteAddr().(*net.TCPAddr)
	if want == nil || !want.IP.Equal(net.IP(in.Addr[:])) || want.Port != in.Port {
		return fmt.Errorf("fd %d is connected to %v:%d, not to the connection's peer %v", c.Fd(), net.IP(in.Addr[:]), in.Port, c.RemoteAddr())
	}
	return nil
}

// TestGnetCallsOnCloseBeforeClosingTheDescriptor pins the gnet behaviour
// gnetidle's connection table depends on, on a real gnet engine over real
// TCP, for each way a connection closes: the peer closes it, an event
// handler returns gnet.Close, and EventLoop.Close runs on the loop (the
// path of gnetidle's own idle close).
func TestGnetCallsOnCloseBeforeClosingTheDescriptor(t *testing.T) {
	p := &orderProbe{closes: make(chan error, 1)}
	g, err := gnetutil.Serve(p, "127.0.0.1:0", gnet.WithLogger(gnetutil.Logger(os.Stderr, "gnet: ")))
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(t, g.Stop(ctx))
	})
	for _, how := range []string{"peer", "action", "loop"} {
		c, err := net.Dial("tcp", g.Addr)
		require.NoError(t, err)
		if how == "peer" {
			require.NoError(t, c.Close())
		} else {
			_, err = c.Write([]byte(how))
			require.NoError(t, err)
		}
		select {
		case err := <-p.closes:
			require.NoError(t, err, "%s close: %s", how, closeOrderBroken)
		case <-time.After(15 * time.Second):
			t.Fatalf("%s close: no OnClose within 15 s", how)
		}
		_ = c.Close()
	}
}
