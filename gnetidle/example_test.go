package gnetidle_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/go-schedule/schedule"
	"github.com/go-schedule/schedule/gnetidle"
	"github.com/go-schedule/schedule/gnetidle/internal/gnetutil"
	"github.com/panjf2000/gnet/v2"
)

// gateway is a gnet server that keeps a struct per connection in the
// Context, with a Watch in it: one line in each of OnOpen, OnTraffic and
// OnClose adds idle detection.
type gateway struct {
	gnet.BuiltinEventEngine
	idle *gnetidle.Detector
}

type device struct {
	idle gnetidle.Watch
	// ... the server's own state of the connection
}

func (g *gateway) OnOpen(c gnet.Conn) ([]byte, gnet.Action) {
	d := new(device)
	c.SetContext(d)
	if err := g.idle.Start(c, &d.idle); err != nil {
		return nil, gnet.Close // the scheduler is shut down
	}
	return nil, gnet.None
}

func (g *gateway) OnTraffic(c gnet.Conn) gnet.Action {
	d := c.Context().(*device)
	d.idle.Read()
	_, _ = c.Discard(-1) // any bytes are a heartbeat here
	return gnet.None
}

func (g *gateway) OnClose(c gnet.Conn, _ error) gnet.Action {
	c.Context().(*device).idle.Stop()
	return gnet.None
}

// A gateway that drops devices silent for 30 seconds, and pings those it
// has sent nothing to for 10 (Netty's IdleStateHandler example).
func Example() {
	s, err := schedule.New(4)
	if err != nil {
		panic(err)
	}
	defer s.Shutdown() // after gnet.Run has returned
	g := new(gateway)
	g.idle, err = gnetidle.New(s, gnetidle.Timeouts{Reader: 30 * time.Second, Writer: 10 * time.Second},
		func(c gnet.Conn, e gnetidle.Event) gnet.Action {
			if e.State == gnetidle.WriterIdle {
				if _, err := c.Write([]byte("ping\n")); err != nil { // on the event loop: allowed
					return gnet.Close
				}
				c.Context().(*device).idle.Wrote()
				return gnet.None
			}
			return gnet.Close
		})
	if err != nil {
		panic(err)
	}
	_ = gnet.Run(g, "tcp://:7070", gnet.WithMulticore(true))
}

// quietHandler is a handler that knows nothing of idleness.
type quietHandler struct{ gnet.BuiltinEventEngine }

func (*quietHandler) OnTraffic(c gnet.Conn) gnet.Action {
	_, _ = c.Discard(-1)
	return gnet.None
}

// Wrap adds idle detection to a handler as it is.
func ExampleDetector_Wrap() {
	s, err := schedule.New(4)
	if err != nil {
		panic(err)
	}
	defer s.Shutdown()
	idle, err := gnetidle.New(s, gnetidle.Timeouts{Reader: 100 * time.Millisecond}, nil)
	if err != nil {
		panic(err)
	}
	// gnetutil.Serve runs gnet.Run(handler, "tcp://127.0.0.1:0", ...) in a
	// goroutine and returns once it listens; its logger keeps gnet's log
	// off standard output.
	srv, err := gnetutil.Serve(idle.Wrap(new(quietHandler)), "127.0.0.1:0", gnet.WithLogger(gnetutil.Logger(os.Stderr, "gnet: ")))
	if err != nil {
		panic(err)
	}
	defer srv.Stop(context.Background())

	c, err := net.Dial("tcp", srv.Addr)
	if err != nil {
		panic(err)
	}
	defer c.Close()
	_, _ = c.Write([]byte("hello"))
	sent := time.Now()
	_, err = c.Read(make([]byte, 1)) // until the server closes the connection
	fmt.Println("closed by the server:", err != nil)
	fmt.Println("after the timeout:", time.Since(sent) >= 100*time.Millisecond)
	fmt.Println("closed for idleness:", idle.Stats().Closed)
	// Output:
	// closed by the server: true
	// after the timeout: true
	// closed for idleness: 1
}
