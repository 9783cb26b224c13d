package mqtt_test

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net"
	"time"

	"github.com/go-schedule/schedule"
	"github.com/go-schedule/schedule/mqtt"
	mochi "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/hooks/auth"
	"github.com/mochi-mqtt/server/v2/listeners"
	"github.com/mochi-mqtt/server/v2/packets"
)

// A broker whose connections keep their deadlines on go-schedule: mochi's
// own keep-alive, unchanged, on the listener NewTCP returns. A device
// connects with a Keep Alive of 2 s and a will, then sends nothing more:
// 3 s later its read fails, and the broker publishes its will.
func ExampleNewTCP() {
	s, err := schedule.New(4)
	if err != nil {
		panic(err)
	}
	defer s.Shutdown() // after the broker has closed

	srv := mochi.New(&mochi.Options{
		InlineClient: true, // for the inline subscription below
		Logger:       slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	_ = srv.AddHook(new(auth.AllowHook), nil)
	tcp := mqtt.NewTCP(listeners.Config{ID: "tcp", Address: "127.0.0.1:0"}, s)
	if err := srv.AddListener(tcp); err != nil {
		panic(err)
	}
	wills := make(chan string, 1)
	_ = srv.Subscribe("devices/+/status", 1, func(_ *mochi.Client, _ packets.Subscription, pk packets.Packet) {
		wills <- pk.TopicName + " " + string(pk.Payload)
	})
	if err := srv.Serve(); err != nil {
		panic(err)
	}

	// The device: a bare CONNECT, since MQTT client libraries ping by
	// themselves and never fall silent.
	conn, err := net.Dial("tcp", tcp.Address())
	if err != nil {
		panic(err)
	}
	defer conn.Close()
	connect := packets.Packet{
		FixedHeader:     packets.FixedHeader{Type: packets.Connect},
		ProtocolVersion: 4,
		Connect: packets.ConnectParams{
			ProtocolName:     []byte("MQTT"),
			ClientIdentifier: "sensor-1",
			Clean:            true,
			Keepalive:        2, // seconds: mochi allows 3 s of silence
			WillFlag:         true,
			WillTopic:        "devices/sensor-1/status",
			WillPayload:      []byte("offline"),
		},
	}
	var buf bytes.Buffer
	_ = connect.ConnectEncode(&buf)
	_, _ = conn.Write(buf.Bytes())

	fmt.Println("will:", <-wills)
	_, _ = io.Copy(io.Discard, conn) // CONNACK, then the end of the connection
	fmt.Println("expiry jobs run:", s.Stats().Started)

	for srv.Clients.Len() > 1 { // the inline client stays; see mochi's Close
		time.Sleep(10 * time.Millisecond)
	}
	_ = srv.Close()
	// Output:
	// will: devices/sensor-1/status offline
	// expiry jobs run: 1
}
