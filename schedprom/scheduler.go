package schedprom

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/go-schedule/schedule"
)

// The scheduler's metrics, from schedule.Stats. The names are what they
// are after the namespace and subsystem; cmd/heartbeat writes the same
// names, help texts and types (a test compares them).
var schedulerValues = []valueDef[schedule.Stats]{
	{"tasks_pending", "Tasks scheduled and not yet run for the last time, nor cancelled.", prometheus.GaugeValue,
		func(s *schedule.Stats) float64 { return float64(s.Pending) }},
	{"tasks_scheduled_total", "Tasks ever scheduled.", prometheus.CounterValue,
		func(s *schedule.Stats) float64 { return float64(s.Scheduled) }},
	{"tasks_cancelled_total", "Successful CancelTask calls.", prometheus.CounterValue,
		func(s *schedule.Stats) float64 { return float64(s.Cancelled) }},
	{"jobs_started_total", "Job runs started.", prometheus.CounterValue,
		func(s *schedule.Stats) float64 { return float64(s.Started) }},
	{"jobs_panicked_total", "Job runs that panicked.", prometheus.CounterValue,
		func(s *schedule.Stats) float64 { return float64(s.Panics) }},
	{"jobs_dropped_total", "Jobs that will never run although nobody cancelled them (shutdown, released pool).", prometheus.CounterValue,
		func(s *schedule.Stats) float64 { return float64(s.Dropped) }},
	{"jobs_skipped_total", "Runs of repeating tasks skipped because the previous run was still going or no worker was free.", prometheus.CounterValue,
		func(s *schedule.Stats) float64 { return float64(s.Skipped) }},
	{"jobs_waiting", "Due jobs waiting for a free worker.", prometheus.GaugeValue,
		func(s *schedule.Stats) float64 { return float64(s.Waiting) }},
	{"workers_busy", "Workers the scheduler occupies.", prometheus.GaugeValue,
		func(s *schedule.Stats) float64 { return float64(s.Running) }},
	{"heap_entries", "Entries in the deadline heap: pending tasks plus tombstones.", prometheus.GaugeValue,
		func(s *schedule.Stats) float64 { return float64(s.HeapEntries) }},
	{"heap_tombstones", "Tombstones in the deadline heap: entries that no longer stand for a pending task, left by lazy cancels and deadlines moved earlier.", prometheus.GaugeValue,
		func(s *schedule.Stats) float64 { return float64(s.Tombstones) }},
	{"owner_wakeups_total", "Times the scheduler's goroutine woke up.", prometheus.CounterValue,
		func(s *schedule.Stats) float64 { return float64(s.Wakeups) }},
	{"job_start_lateness_max_seconds", "Largest delay from a deadline to the start of its job since the scheduler started.", prometheus.GaugeValue,
		func(s *schedule.Stats) float64 { return s.MaxLateness.Seconds() }},
}

// The lateness histogram's name and help text.
const (
	latenessName = "job_start_lateness_seconds"
	latenessHelp = "Delay from a job's deadline to the moment a worker started it."
)

// NewCollector returns a collector of s's metrics (see the package
// documentation for the list). Each Collect reads one
// [schedule.Scheduler.Stats] snapshot and resets nothing: any number of
// registries and scrapers may read s at once, each seeing every count. A
// Collect costs s what a Stats call costs, and may itself count in
// owner_wakeups_total, as Stats may wake the scheduler (see
// [schedule.Stats]). It allocates only on the scraping goroutine.
//
// Options set the namespace (default "schedule"), a subsystem and
// constant labels. With a nil s, Register returns ErrNilScheduler.
func NewCollector(s *schedule.Scheduler, opts ...Option) prometheus.Collector {
	if s == nil {
		return invalid(ErrNilScheduler)
	}
	o := newOptions(opts)
	vs := values(o, schedulerValues)
	lateness := o.desc(latenessName, latenessHelp)
	bounds := latenessBoundsSeconds()
	return &collector{
		descs: append(descsOf(vs), lateness),
		collect: func(ch chan<- prometheus.Metric) {
			st := s.Stats()
			send(ch, vs, &st)
			count, buckets := cumulative(&st, bounds)
			ch <- prometheus.MustNewConstHistogram(lateness, count, st.LatenessSum.Seconds(), buckets)
		},
	}
}

// latenessBoundsSeconds returns schedule.LatenessBounds in seconds.
func latenessBoundsSeconds() []float64 {
	bs := schedule.LatenessBounds()
	out := make([]float64, len(bs))
	for i, b := range bs {
		out[i] = b.Seconds()
	}
	return out
}

// cumulative turns st.Lateness into a Prometheus histogram: the number of
// starts, and for each bound the starts at most that late. The count is
// the sum of the buckets (Stats.Started, read later, may be ahead of it), so
// that the +Inf bucket always equals it.
func cumulative(st *schedule.Stats, bounds []float64) (uint64, map[float64]uint64) {
	buckets := make(map[float64]uint64, len(bounds))
	var n uint64
	for i, b := range bounds {
		n += st.Lateness[i]
		buckets[b] = n
	}
	return n + st.Lateness[len(bounds)], buckets
}
