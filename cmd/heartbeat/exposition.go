package main

import (
	"bufio"
	"io"
	"strconv"

	"github.com/go-schedule/schedule"
)

// The Prometheus text exposition of the run's scheduler and Monitor. This
// module depends on ants only, so it cannot use client_golang; these are
// the metric families the schedprom module's NewCollector and
// NewWatcherCollector (named "heartbeat_keys") export with the default namespace, with the same
// names, help texts and types, written with the standard library. A test
// in schedprom runs this program and checks its /metrics against the
// collectors with client_golang's parser and linter.

// A sample is one metric family with a single value.
type sample struct {
	name, help, typ string
	value           string
}

func counter(name, help string, v uint64) sample {
	return sample{name, help, "counter", strconv.FormatUint(v, 10)}
}

func gauge(name, help string, v float64) sample {
	return sample{name, help, "gauge", formatFloat(v)}
}

// The lateness histogram's family name and help text.
const (
	latenessName = "schedule_job_start_lateness_seconds"
	latenessHelp = "Delay from a job's deadline to the moment a worker started it."
)

// writeMetrics writes st, and the Monitor's watched and expired keys, in
// the text exposition format (version 0.0.4).
func writeMetrics(w io.Writer, st schedule.Stats, watched int, expired uint64) error {
	samples := []sample{
		gauge("schedule_tasks_pending", "Tasks scheduled and not yet run for the last time, nor cancelled.", float64(st.Pending)),
		counter("schedule_tasks_scheduled_total", "Tasks ever scheduled.", st.Scheduled),
		counter("schedule_tasks_cancelled_total", "Successful CancelTask calls.", st.Cancelled),
		counter("schedule_jobs_started_total", "Job runs started.", st.Started),
		counter("schedule_jobs_panicked_total", "Job runs that panicked.", st.Panics),
		counter("schedule_jobs_dropped_total", "Jobs that will never run although nobody cancelled them (shutdown, released pool).", st.Dropped),
		counter("schedule_jobs_skipped_total", "Runs of repeating tasks skipped because the previous run was still going or no worker was free.", st.Skipped),
		gauge("schedule_jobs_waiting", "Due jobs waiting for a free worker.", float64(st.Waiting)),
		gauge("schedule_workers_busy", "Workers the scheduler occupies.", float64(st.Running)),
		gauge("schedule_heap_entries", "Entries in the deadline heap: pending tasks plus tombstones.", float64(st.HeapEntries)),
		gauge("schedule_heap_tombstones", "Tombstones in the deadline heap: entries that no longer stand for a pending task, left by lazy cancels and deadlines moved earlier.", float64(st.Tombstones)),
		counter("schedule_owner_wakeups_total", "Times the scheduler's goroutine woke up.", st.Wakeups),
		gauge("schedule_job_start_lateness_max_seconds", "Largest delay from a deadline to the start of its job since the scheduler started.", st.MaxLateness.Seconds()),
		gauge("schedule_heartbeat_keys_watched", "Keys the heartbeat Monitor watches now.", float64(watched)),
		counter("schedule_heartbeat_keys_expired_total", "Keys declared dead: watches that ended in a call of the expired function.", expired),
	}
	bw := bufio.NewWriter(w)
	for _, s := range samples {
		header(bw, s.name, s.help, s.typ)
		bw.WriteString(s.name + " " + s.value + "\n")
	}

	// The histogram: cumulative buckets, then the sum and the count, which
	// is the sum of the buckets so that it equals the +Inf bucket.
	header(bw, latenessName, latenessHelp, "histogram")
	var n uint64
	for i, b := range schedule.LatenessBounds() {
		n += st.Lateness[i]
		bw.WriteString(latenessName + `_bucket{le="` + formatFloat(b.Seconds()) + `"} ` + strconv.FormatUint(n, 10) + "\n")
	}
	n += st.Lateness[len(st.Lateness)-1]
	bw.WriteString(latenessName + `_bucket{le="+Inf"} ` + strconv.FormatUint(n, 10) + "\n")
	bw.WriteString(latenessName + "_sum " + formatFloat(st.LatenessSum.Seconds()) + "\n")
	bw.WriteString(latenessName + "_count " + strconv.FormatUint(n, 10) + "\n")
	return bw.Flush()
}

func header(w *bufio.Writer, name, help, typ string) {
	w.WriteString("# HELP " + name + " " + help + "\n# TYPE " + name + " " + typ + "\n")
}

// formatFloat formats v as client_golang does: the shortest
// representation that reads back as v.
func formatFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
