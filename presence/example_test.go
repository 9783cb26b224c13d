package presence_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/go-schedule/schedule"
	"github.com/go-schedule/schedule/heartbeat"
	"github.com/go-schedule/schedule/presence"
	"github.com/go-schedule/schedule/presence/embedded"
	"github.com/nats-io/nats.go"
)

// A gateway records a device online when it says hello, watches its
// heartbeats locally with a heartbeat.Monitor, and records it offline from
// the Monitor's expiry callback. Heartbeats (Beat) never reach the engine.
func ExampleNode_Connect() {
	dir, _ := os.MkdirTemp("", "presence-example-")
	defer os.RemoveAll(dir)
	srv, err := embedded.Start(embedded.Options{StoreDir: dir})
	if err != nil {
		panic(err)
	}
	defer func() { srv.Shutdown(); srv.WaitForShutdown() }()
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		panic(err)
	}
	defer nc.Close()

	ctx := context.Background()
	node, err := presence.Open(ctx, nc, presence.Config{Node: "gw1", Lease: time.Second})
	if err != nil {
		panic(err)
	}
	s, _ := schedule.New(4)
	defer s.Shutdown()

	expired := make(chan struct{})
	mon, _ := heartbeat.New(s, 100*time.Millisecond, func(c *presence.Conn) {
		// The device went silent: record it (unless a newer connection
		// took over, which Offline detects), then close its socket.
		err := c.Offline(ctx, presence.ReasonTimeout)
		fmt.Println("offline recorded:", err == nil)
		close(expired)
	})

	c, err := node.Connect(ctx, "sensor/42", func(err error) {
		// The node ended the connection (a newer one won, or the node lost
		// its lease): close the socket; nothing more is recorded for it.
	})
	if err != nil {
		panic(err)
	}
	for range 3 {
		_ = mon.Beat(c) // on every packet: local only
		time.Sleep(30 * time.Millisecond)
	}
	<-expired
	r, _ := node.Lookup(ctx, "sensor/42")
	fmt.Println(r.Device, r.State, r.Reason, r.Node)
	_, _ = node.Close(ctx)
	// Output:
	// offline recorded: true
	// sensor/42 offline timeout gw1
}

// A consumer follows the fleet: the current state first, then each change.
func ExampleStore_Watch() {
	dir, _ := os.MkdirTemp("", "presence-example-")
	defer os.RemoveAll(dir)
	srv, err := embedded.Start(embedded.Options{StoreDir: dir})
	if err != nil {
		panic(err)
	}
	defer func() { srv.Shutdown(); srv.WaitForShutdown() }()
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		panic(err)
	}
	defer nc.Close()
	ctx := context.Background()
	node, err := presence.Open(ctx, nc, presence.Config{Node: "gw1", Lease: time.Second})
	if err != nil {
		panic(err)
	}
	defer func() { _, _ = node.Close(ctx) }()
	_, _ = node.Connect(ctx, "a", nil)

	wctx, cancel := context.WithCancel(ctx)
	seen := 0
	_ = node.Watch(wctx, func(r presence.Record) {
		fmt.Println(r.Device, r.State, r.Reason)
		if seen++; seen == 2 {
			cancel()
		}
	}, func(n int) {
		fmt.Println("replayed", n)
		_, _ = node.Connect(ctx, "b", nil)
	})
	// Output:
	// a online connect
	// replayed 1
	// b online connect
}
