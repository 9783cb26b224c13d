// Package schedprom exports go-schedule's figures as Prometheus metrics: a
// [schedule.Scheduler]'s ([NewCollector]), a [heartbeat.Monitor]'s or the
// mqtt module's keep-alive hook's ([NewWatcherCollector]) and a gnetidle
// Detector's ([NewIdleCollector]).
//
// Each collector reads a snapshot the library already keeps, as
// client_golang's collectors.NewDBStatsCollector reads [database/sql.DBStats]: Collect
// sends constant metrics built from one reading and resets nothing, so two
// Prometheus servers scraping one process see the same counts. The one
// thing a Collect may change is a scheduler's wake-up count: it reads
// [schedule.Scheduler.Stats], which may wake the scheduler (see
// [NewCollector]). Counters end
// in _total, durations are in seconds, and job-start lateness is a
// histogram with its count, sum and cumulative buckets.
//
//	s, _ := schedule.New(8)
//	m, _ := heartbeat.New(s, 90*time.Second, expired)
//	reg := prometheus.NewRegistry()
//	reg.MustRegister(schedprom.NewCollector(s), schedprom.NewWatcherCollector(m, "heartbeat_keys"))
//	http.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
//
// # Metrics
//
// With the default namespace, "schedule" (see [WithNamespace],
// [WithSubsystem] and [WithConstLabels]), NewCollector exports these,
// read from [schedule.Stats]:
//
//	schedule_tasks_pending                        gauge      Stats.Pending
//	schedule_tasks_scheduled_total                counter    Stats.Scheduled
//	schedule_tasks_cancelled_total                counter    Stats.Cancelled
//	schedule_jobs_started_total                   counter    Stats.Started
//	schedule_jobs_panicked_total                  counter    Stats.Panics
//	schedule_jobs_dropped_total                   counter    Stats.Dropped
//	schedule_jobs_skipped_total                   counter    Stats.Skipped
//	schedule_jobs_waiting                         gauge      Stats.Waiting
//	schedule_workers_busy                         gauge      Stats.Running
//	schedule_heap_entries                         gauge      Stats.HeapEntries
//	schedule_heap_tombstones                      gauge      Stats.Tombstones
//	schedule_owner_wakeups_total                  counter    Stats.Wakeups
//	schedule_job_start_lateness_max_seconds       gauge      Stats.MaxLateness
//	schedule_job_start_lateness_seconds           histogram  Stats.Lateness, Stats.LatenessSum
//
// The histogram's buckets are [schedule.LatenessBounds]: 1, 2.5 and 5 per
// decade from 100 µs to 10 s. Its count is the sum of its buckets.
//
// NewWatcherCollector(w, name) exports schedule_<name>_watched (gauge,
// [Watcher.Len]) and schedule_<name>_expired_total (counter,
// [Watcher.Expired]): schedule_heartbeat_keys_watched and
// schedule_heartbeat_keys_expired_total for a heartbeat.Monitor with the
// name "heartbeat_keys", schedule_mqtt_clients_watched and
// schedule_mqtt_clients_expired_total for the mqtt keep-alive hook with
// "mqtt_clients". NewIdleCollector exports
// schedule_gnetidle_connections_watched,
// schedule_gnetidle_idle_events_total{state="reader"|"writer"|"all"} and
// schedule_gnetidle_connections_closed_total from a Detector's Stats.
//
// # Why the collectors take interfaces and functions
//
// This package is a module of its own, so that the library never downloads
// client_golang; and the mqtt and gnetidle modules do not require it either,
// nor does this module require them, so that a user of one never downloads
// the others' dependencies (a broker, an event-loop server, or
// client_golang). NewWatcherCollector therefore takes a [Watcher] (Len
// and Expired), which a heartbeat.Monitor and the *mqtt.KeepAlive hook
// satisfy as they are; NewIdleCollector takes a function returning
// [IdleStats], a struct with the fields of gnetidle.Stats, to which a
// Detector's Stats converts in one expression.
// The alternative, a small adapter module per integration, would add two
// modules to publish and version for what is one line in the caller's code.
//
// # Several schedulers
//
// Register one collector per scheduler, each with [WithConstLabels] (say,
// {"scheduler": "shard-0"}): the names are the same, the label values tell
// them apart.
//
// # OpenTelemetry
//
// A program that exports metrics with the OpenTelemetry SDK registers these
// collectors on a prometheus.Registry as above and hands the registry to
// the bridge in go.opentelemetry.io/contrib/bridges/prometheus: its
// NewMetricProducer(prometheus.WithGatherer(reg)) is an SDK metric producer,
// given to the SDK's reader (metric.WithProducer), which converts each
// gathered family into OpenTelemetry data on every collection: counters
// become sums, gauges gauges, and the lateness histogram an explicit-bucket
// histogram with the same bounds.
//
// This module needs Go 1.26, as client_golang v1.25 does; the library
// itself needs Go 1.25.
package schedprom
