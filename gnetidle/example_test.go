package gnetidle_test

import (
	"context"
	"fmt"
	"io"
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
	sent := time.Now()
	_, _ = c.Write([]byte("hello"))
	_, err = c.Read(make([]byte, 1)) // until the server closes the connection
	fmt.Println("closed by the server:", err != nil)
	fmt.Println("after the timeout:", time.Since(sent) >= 100*time.Millisecond)
	fmt.Println("closed for idleness:", idle.Stats().Closed)
	// Output:
	// closed by the server: true
	// after the timeout: true
	// closed for idleness: 1
}

// keepAlive is a wrapped handler whose clients choose their own timeout:
// the first byte is the number of tenths of a second it may stay silent.
// It answers every read, and reports each write.
type keepAlive struct {
	gnet.BuiltinEventEngine
	idle *gnetidle.Detector
}

func (k *keepAlive) OnTraffic(c gnet.Conn) gnet.Action {
	data, _ := c.Next(-1)
	w := k.idle.WatchOf(c) // nil if unwatched: its methods then do nothing
	if w.Timeouts().Reader == time.Minute && len(data) > 0 {
		if err := w.SetTimeouts(gnetidle.Timeouts{Reader: time.Duration(data[0]) * 100 * time.Millisecond}); err != nil {
			return gnet.Close
		}
	}
	if _, err := c.Write([]byte("ok\n")); err != nil {
		return gnet.Close
	}
	w.Wrote()
	return gnet.None
}

// WatchOf is the handle on a wrapped connection: here it sets the timeout
// the client asked for and reports the server's writes.
func ExampleDetector_WatchOf() {
	s, err := schedule.New(4)
	if err != nil {
		panic(err)
	}
	defer s.Shutdown()
	k := new(keepAlive)
	k.idle, err = gnetidle.New(s, gnetidle.Timeouts{Reader: time.Minute}, nil)
	if err != nil {
		panic(err)
	}
	srv, err := gnetutil.Serve(k.idle.Wrap(k), "127.0.0.1:0", gnet.WithLogger(gnetutil.Logger(os.Stderr, "gnet: ")))
	if err != nil {
		panic(err)
	}
	defer srv.Stop(context.Background())

	c, err := net.Dial("tcp", srv.Addr)
	if err != nil {
		panic(err)
	}
	defer c.Close()
	sent := time.Now()
	_, _ = c.Write([]byte{2})   // silent for 200 ms at most
	reply, err := io.ReadAll(c) // until the server closes the connection
	fmt.Printf("reply: %q, err: %v\n", reply, err)
	fmt.Println("after the client's timeout:", time.Since(sent) >= 200*time.Millisecond)
	fmt.Println("well before the default:", time.Since(sent) < time.Minute)
	fmt.Println("closed for idleness:", k.idle.Stats().Closed)
	// Output:
	// reply: "ok\n", err: <nil>
	// after the client's timeout: true
	// well before the default: true
	// closed for idleness: 1
}
