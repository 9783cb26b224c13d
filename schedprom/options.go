package schedprom

import (
	"maps"

	"github.com/prometheus/client_golang/prometheus"
)

// DefaultNamespace is the namespace every metric name starts with unless
// WithNamespace says otherwise: schedule_tasks_pending, and so on.
const DefaultNamespace = "schedule"

// Option configures a collector.
type Option func(*options)

type options struct {
	namespace string
	subsystem string
	labels    prometheus.Labels
}

func newOptions(opts []Option) options {
	o := options{namespace: DefaultNamespace}
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// name returns the fully qualified name of a metric.
func (o options) name(name string) string {
	return prometheus.BuildFQName(o.namespace, o.subsystem, name)
}

// desc returns the description of a metric with the variable labels given.
func (o options) desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(o.name(name), help, labels, o.labels)
}

// WithNamespace sets the first part of every metric name (DefaultNamespace,
// "schedule", if not given; "" leaves it out). Keep to letters, digits and
// underscores, which every Prometheus server and the classic text format
// take; a name client_golang refuses (one that is not UTF-8) makes Register
// fail.
func WithNamespace(ns string) Option { return func(o *options) { o.namespace = ns } }

// WithSubsystem sets the part of every metric name between the namespace
// and the metric's own name (none if not given): with "gateway",
// schedule_gateway_tasks_pending.
func WithSubsystem(sub string) Option { return func(o *options) { o.subsystem = sub } }

// WithConstLabels adds labels with fixed values to every metric of the
// collector. They tell apart several schedulers (or monitors, hooks,
// detectors) in one registry: collectors whose metric names are the same
// register side by side as long as their constant label values differ.
// The map is copied; a label name client_golang refuses makes Register
// fail.
func WithConstLabels(labels prometheus.Labels) Option {
	return func(o *options) { o.labels = maps.Clone(labels) }
}
