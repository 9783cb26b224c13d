package schedprom

import (
	"reflect"

	"github.com/prometheus/client_golang/prometheus"
)

// Watcher is what the heartbeat and MQTT keep-alive collectors read: the
// keys watched now and the watches that expired so far. A
// *heartbeat.Monitor[K] of any K satisfies it, and so does the mqtt
// module's *mqtt.KeepAlive hook, as they are: schedprom names neither the
// MQTT broker nor its module, and those users need no adapter.
type Watcher interface {
	// Len returns the number watched now.
	Len() int
	// Expired returns the number of watches that ended because their key
	// fell silent. It only grows.
	Expired() uint64
}

// watcherStats is one reading of a Watcher.
type watcherStats struct {
	watched int
	expired uint64
}

// NewMonitorCollector returns a collector of a heartbeat.Monitor's metrics:
// <namespace>_heartbeat_keys_watched, a gauge, and
// <namespace>_heartbeat_keys_expired_total, a counter. Collect changes
// nothing. With a nil m, Register returns ErrNilSource.
func NewMonitorCollector(m Watcher, opts ...Option) prometheus.Collector {
	return newWatcherCollector(m, "heartbeat_keys",
		"Keys the heartbeat Monitor watches now.",
		"Keys declared dead: watches that ended in a call of the expired function.", opts)
}

// NewKeepAliveCollector returns a collector of the mqtt module's keep-alive
// hook: <namespace>_mqtt_clients_watched, a gauge (clients connected with a
// Keep Alive other than zero), and <namespace>_mqtt_clients_expired_total,
// a counter (clients disconnected because their keep-alive ran out). Pass
// the *mqtt.KeepAlive itself. Collect changes nothing. With a nil k,
// Register returns ErrNilSource.
func NewKeepAliveCollector(k Watcher, opts ...Option) prometheus.Collector {
	return newWatcherCollector(k, "mqtt_clients",
		"MQTT clients whose keep-alive the hook watches now.",
		"MQTT clients disconnected because their keep-alive ran out.", opts)
}

func newWatcherCollector(w Watcher, prefix, watchedHelp, expiredHelp string, opts []Option) prometheus.Collector {
	if isNil(w) {
		return invalid(ErrNilSource)
	}
	o := newOptions(opts)
	vs := values(o, []valueDef[watcherStats]{
		{prefix + "_watched", watchedHelp, prometheus.GaugeValue,
			func(s *watcherStats) float64 { return float64(s.watched) }},
		{prefix + "_expired_total", expiredHelp, prometheus.CounterValue,
			func(s *watcherStats) float64 { return float64(s.expired) }},
	})
	return &collector{
		descs: descsOf(vs),
		collect: func(ch chan<- prometheus.Metric) {
			// Two reads, not one snapshot: a key that expires between
			// them counts in neither for this scrape, never in both.
			st := watcherStats{expired: w.Expired()}
			st.watched = w.Len()
			send(ch, vs, &st)
		},
	}
}

// isNil reports whether w is nil, or a nil pointer in a Watcher: a nil
// *heartbeat.Monitor passed as a Watcher is not == nil, and would make
// every scrape of the registry fail rather than Register this one.
func isNil(w Watcher) bool {
	if w == nil {
		return true
	}
	v := reflect.ValueOf(w)
	return v.Kind() == reflect.Pointer && v.IsNil()
}
