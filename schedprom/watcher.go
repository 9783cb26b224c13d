package schedprom

import (
	"reflect"
	"strings"

	"github.com/go-schedule/schedule/heartbeat"

	"github.com/prometheus/client_golang/prometheus"
)

// Watcher is what [NewWatcherCollector] reads: the keys watched now and the
// watches that expired so far. A [heartbeat.Monitor] of any key type
// satisfies it, and so does the mqtt module's keep-alive hook
// (*mqtt.KeepAlive), as they are: schedprom names neither the MQTT broker
// nor its module, and those users need no adapter.
type Watcher interface {
	// Len returns the number watched now.
	Len() int
	// Expired returns the number of watches that ended because their key
	// fell silent. It only grows.
	Expired() uint64
}

// A Monitor is a Watcher as it is, whatever its key type.
var _ Watcher = (*heartbeat.Monitor[string])(nil)

// watcherStats is one reading of a Watcher.
type watcherStats struct {
	watched int
	expired uint64
}

// NewWatcherCollector returns a collector of w's two figures, named after
// what w watches: <namespace>_<name>_watched, a gauge ([Watcher.Len]), and
// <namespace>_<name>_expired_total, a counter ([Watcher.Expired]). The
// project's own dashboards and docs use these names:
//
//	schedprom.NewWatcherCollector(monitor, "heartbeat_keys") // a *heartbeat.Monitor[K]
//	schedprom.NewWatcherCollector(hook, "mqtt_clients")      // the mqtt module's *mqtt.KeepAlive
//
// These two names have help texts of their own; any other name gets help
// texts made from it. name is lower case with underscores, as Prometheus
// names are; with a subsystem ([WithSubsystem]) it comes after it.
// Register several collectors of one name side by side with
// [WithConstLabels].
//
// Collect reads Expired, then Len, and changes nothing: a key that expires
// between the two reads counts in neither for that scrape, never in both.
// With a nil w (a nil interface, or a nil pointer in one), Register
// returns ErrNilSource; with an empty name, ErrEmptyName.
func NewWatcherCollector(w Watcher, name string, opts ...Option) prometheus.Collector {
	if isNil(w) {
		return invalid(ErrNilSource)
	}
	if name == "" {
		return invalid(ErrEmptyName)
	}
	o := newOptions(opts)
	help, ok := watcherHelp[name]
	if !ok {
		what := strings.ReplaceAll(name, "_", " ")
		help = [2]string{"Number of " + what + " watched now.", "Number of " + what + " whose watch expired: silent for their whole timeout."}
	}
	vs := values(o, []valueDef[watcherStats]{
		{name + "_watched", help[0], prometheus.GaugeValue,
			func(s *watcherStats) float64 { return float64(s.watched) }},
		{name + "_expired_total", help[1], prometheus.CounterValue,
			func(s *watcherStats) float64 { return float64(s.expired) }},
	})
	return &collector{
		descs: descsOf(vs),
		collect: func(ch chan<- prometheus.Metric) {
			st := watcherStats{expired: w.Expired()}
			st.watched = w.Len()
			send(ch, vs, &st)
		},
	}
}

// watcherHelp holds the help texts of the project's own watcher names,
// watched then expired; the root module's demo writes the same texts for
// heartbeat_keys. Other names get texts made from the name.
var watcherHelp = map[string][2]string{
	"heartbeat_keys": {"Keys the heartbeat Monitor watches now.",
		"Keys declared dead: watches that ended in a call of the expired function."},
	"mqtt_clients": {"MQTT clients whose keep-alive the hook watches now.",
		"MQTT clients disconnected because their keep-alive ran out."},
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
