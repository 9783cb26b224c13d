// Package mqtt serves MQTT keep-alive in a mochi-mqtt broker
// (github.com/mochi-mqtt/server/v2) from go-schedule.
//
// MQTT 3.1.1 and 5 (§3.1.2.10) say that when the Keep Alive of a
// connection is not zero and the server receives no control packet from
// the client within one and a half times that Keep Alive, the server must
// disconnect the client, as if the network had failed: its will message is
// published. mochi does it with a deadline on each connection's socket,
// moved before every packet it reads, a move of a runtime timer each time.
// The package offers two ways to put those deadlines on a go-schedule
// Scheduler.
//
// NewTCP, the one to use, is mochi's TCP listener with every connection
// wrapped by package netdeadline: mochi's keep-alive stays exactly as it
// is, and each of its deadline moves becomes a Scheduler.Reset of the
// connection's own task. Nothing is added per packet.
//
//	s, _ := schedule.New(4)
//	defer s.Shutdown() // after the broker is closed
//	srv := mochi.New(nil)
//	_ = srv.AddHook(new(auth.AllowHook), nil)
//	_ = srv.AddListener(mqtt.NewTCP(listeners.Config{ID: "tcp", Address: ":1883"}, s))
//
// NewKeepAlive is a hook that takes the keep-alive over from mochi: it
// watches each client with a heartbeat.Monitor, refreshed by every packet
// (mochi's OnPacketRead), and turns mochi's deadline off. It enforces
// exactly 1.5 × Keep Alive where mochi rounds down to whole seconds (1 s
// for a Keep Alive of 1 s), and stops a silent client with the cause
// packets.ErrKeepAliveTimeout; in return each packet costs a copy into the
// hook and a lookup by client.
package mqtt
