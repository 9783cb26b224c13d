package schedprom

import "github.com/prometheus/client_golang/prometheus"

// collector is what every constructor returns: fixed descriptions, and a
// function that reads one snapshot and sends the metrics made from it.
type collector struct {
	descs   []*prometheus.Desc
	collect func(ch chan<- prometheus.Metric)
}

// Describe sends the descriptions of every metric Collect sends.
func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

// Collect reads one snapshot and sends its metrics. It changes nothing.
func (c *collector) Collect(ch chan<- prometheus.Metric) { c.collect(ch) }

// invalid returns a collector that reports err: Register returns it, and
// so does a Gather of a registry it was added to unchecked.
func invalid(err error) prometheus.Collector {
	d := prometheus.NewInvalidDesc(err)
	return &collector{
		descs:   []*prometheus.Desc{d},
		collect: func(ch chan<- prometheus.Metric) { ch <- prometheus.NewInvalidMetric(d, err) },
	}
}

// value is a counter or a gauge read from a snapshot of type S.
type value[S any] struct {
	desc *prometheus.Desc
	typ  prometheus.ValueType
	get  func(*S) float64
}

// valueDef defines a value: its name after the namespace and subsystem,
// its help text, its type, and how to read it.
type valueDef[S any] struct {
	name string
	help string
	typ  prometheus.ValueType
	get  func(*S) float64
}

// values makes the values of defs under o.
func values[S any](o options, defs []valueDef[S]) []value[S] {
	vs := make([]value[S], len(defs))
	for i, d := range defs {
		vs[i] = value[S]{o.desc(d.name, d.help), d.typ, d.get}
	}
	return vs
}

// send sends each value as read from st.
func send[S any](ch chan<- prometheus.Metric, vs []value[S], st *S) {
	for _, v := range vs {
		ch <- prometheus.MustNewConstMetric(v.desc, v.typ, v.get(st))
	}
}

func descsOf[S any](vs []value[S]) []*prometheus.Desc {
	ds := make([]*prometheus.Desc, len(vs))
	for i, v := range vs {
		ds[i] = v.desc
	}
	return ds
}
