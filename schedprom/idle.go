package schedprom

import "github.com/prometheus/client_golang/prometheus"

// IdleStats is what the idle collector reads: a snapshot of a gnetidle
// Detector. Its fields are those of gnetidle.Stats, in the same order and
// of the same types, so that the conversion IdleStats(d.Stats()) adapts a
// Detector in one line without this module naming gnet:
//
//	schedprom.NewIdleCollector(func() schedprom.IdleStats { return schedprom.IdleStats(d.Stats()) })
type IdleStats struct {
	// Watched is the number of connections watched now.
	Watched int
	// Events counts the idle events raised, indexed by gnetidle.State:
	// reader idle, writer idle, all idle.
	Events [3]uint64
	// Closed counts the idle events whose Handler returned gnet.Close.
	Closed uint64
}

// idleStates are the values of the state label, in the order of
// IdleStats.Events.
var idleStates = [3]string{"reader", "writer", "all"}

// NewIdleCollector returns a collector of a gnetidle Detector's metrics,
// read from stats on each Collect: <namespace>_gnetidle_connections_watched,
// a gauge; <namespace>_gnetidle_idle_events_total, a counter with a label
// state ("reader", "writer", "all"); and
// <namespace>_gnetidle_connections_closed_total, a counter. stats must be
// safe for concurrent use and change nothing (Detector.Stats is and does).
// With a nil stats, Register returns ErrNilSource.
func NewIdleCollector(stats func() IdleStats, opts ...Option) prometheus.Collector {
	if stats == nil {
		return invalid(ErrNilSource)
	}
	o := newOptions(opts)
	vs := values(o, []valueDef[IdleStats]{
		{"gnetidle_connections_watched", "Connections the idle Detector watches now.", prometheus.GaugeValue,
			func(s *IdleStats) float64 { return float64(s.Watched) }},
		{"gnetidle_connections_closed_total", "Connections closed because their idle Handler returned gnet.Close.", prometheus.CounterValue,
			func(s *IdleStats) float64 { return float64(s.Closed) }},
	})
	events := o.desc("gnetidle_idle_events_total", "Idle events raised, by idle state.", "state")
	return &collector{
		descs: append(descsOf(vs), events),
		collect: func(ch chan<- prometheus.Metric) {
			st := stats()
			send(ch, vs, &st)
			for i, n := range st.Events {
				ch <- prometheus.MustNewConstMetric(events, prometheus.CounterValue, float64(n), idleStates[i])
			}
		},
	}
}
