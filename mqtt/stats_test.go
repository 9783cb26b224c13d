package mqtt_test

import "github.com/go-schedule/schedule/mqtt"

// The schedprom module exports the hook's metrics through its Watcher
// interface, Len and Expired, without importing this module (so that
// neither module's users download the other's dependencies). This line
// fails to compile if the hook stops offering them.
var _ interface {
	Len() int
	Expired() uint64
} = (*mqtt.KeepAlive)(nil)
