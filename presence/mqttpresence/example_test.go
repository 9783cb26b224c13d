package mqttpresence_test

import (
	"context"

	"github.com/go-schedule/schedule/presence"
	"github.com/go-schedule/schedule/presence/mqttpresence"
	mochi "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/hooks/auth"
	"github.com/mochi-mqtt/server/v2/listeners"
	"github.com/nats-io/nats.go"
)

// A broker of a fleet records its clients' presence: the hook goes in
// before Serve, beside the broker's own keep-alive.
func ExampleNew() {
	nc, err := nats.Connect("nats://127.0.0.1:4222")
	if err != nil {
		return // no engine here
	}
	defer nc.Close()
	node, err := presence.Open(context.Background(), nc, presence.Config{Node: "broker-1"})
	if err != nil {
		return
	}
	defer func() { _, _ = node.Close(context.Background()) }()

	srv := mochi.New(nil)
	_ = srv.AddHook(new(auth.AllowHook), nil)
	_ = srv.AddHook(mqttpresence.New(node), nil)
	_ = srv.AddListener(listeners.NewTCP(listeners.Config{ID: "tcp", Address: ":1883"}))
	_ = srv.Serve()
	defer srv.Close()
}
