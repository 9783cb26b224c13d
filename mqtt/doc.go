// Package mqtt serves MQTT keep-alive in a mochi-mqtt broker
// (github.com/mochi-mqtt/server/v2) from a go-schedule
// [schedule.Scheduler].
//
// MQTT 3.1.1 and 5 (§3.1.2.10) say that when the Keep Alive of a
// connection is not zero and the server receives no control packet from
// the client within one and a half times that Keep Alive, the server must
// disconnect the client, as if the network had failed: its will message is
// published. mochi does it with a deadline on each connection's socket,
// moved before every packet it reads, a move of a runtime timer each time.
// The package offers two ways to put those deadlines on a Scheduler.
//
// [NewTCP] is for clients over TCP (or TLS on TCP): mochi's TCP listener
// with every connection wrapped by package
// [github.com/go-schedule/schedule/netdeadline]. mochi's keep-alive stays
// exactly as it is, and each of its deadline moves becomes a
// [schedule.Scheduler.Reset] of the connection's own task. Nothing is
// added per packet. Use it whenever the broker's clients come over TCP.
//
//	s, _ := schedule.New(4)
//	defer s.Shutdown() // after the broker is closed
//	srv := mochi.New(nil)
//	_ = srv.AddHook(new(auth.AllowHook), nil)
//	_ = srv.AddListener(mqtt.NewTCP(listeners.Config{ID: "tcp", Address: ":1883"}, s))
//
// [NewKeepAlive] is a hook, for what the listener cannot serve: clients
// that come through any other listener (mochi's WebSocket or Unix-socket
// listener, or one of the program's own), whose sockets NewTCP never
// sees; a Keep Alive enforced at exactly 1.5 times, where mochi rounds
// down to whole seconds (1 s for a Keep Alive of 1 s); and counts of the
// clients watched and timed out ([KeepAlive.Len], [KeepAlive.Expired]),
// which the schedprom module exports. It takes the keep-alive over from
// mochi whatever the transport: it watches each client with a
// [heartbeat.Monitor], refreshed by every packet (mochi's OnPacketRead),
// turns mochi's deadline off, and stops a silent client with the cause
// packets.ErrKeepAliveTimeout. In return each packet costs a copy into
// the hook and a lookup by client.
package mqtt
