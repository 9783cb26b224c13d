package ensure_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/go-schedule/schedule/presence/embedded"
	"github.com/go-schedule/schedule/presence/ensure"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// A process that needs a bucket at start binds to it, or creates it if no
// other process has, and converges with the others that start with it.
// The context bounds the whole start; each request inside it has a short
// deadline of its own.
func ExampleKeyValue() {
	dir, _ := os.MkdirTemp("", "ensure-example-")
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
	js, _ := jetstream.New(nc)

	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	kv, err := ensure.KeyValue(ctx, js, jetstream.KeyValueConfig{Bucket: "jobs", History: 1})
	if err != nil {
		panic(err)
	}
	fmt.Println(kv.Bucket())
	// Output: jobs
}
