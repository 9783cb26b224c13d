package schedprom_test

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/go-schedule/schedule"
	"github.com/go-schedule/schedule/heartbeat"
	"github.com/go-schedule/schedule/schedprom"
)

// A gateway registers its scheduler's and its Monitor's collectors, and
// serves the registry (promhttp.HandlerFor(reg, promhttp.HandlerOpts{})).
// Here the registry is gathered directly.
func ExampleNewCollector() {
	s, err := schedule.New(2)
	if err != nil {
		panic(err)
	}
	defer s.Shutdown()
	dead := make(chan string, 1)
	m, err := heartbeat.New(s, 10*time.Millisecond, func(dev string) { dead <- dev })
	if err != nil {
		panic(err)
	}

	reg := prometheus.NewRegistry()
	gateway := schedprom.WithConstLabels(prometheus.Labels{"gateway": "eu-1"})
	reg.MustRegister(schedprom.NewCollector(s, gateway), schedprom.NewWatcherCollector(m, "heartbeat_keys", gateway))

	_ = m.Beat("sensor-7") // and then nothing: it expires
	fmt.Println("expired:", <-dead)

	fams, err := reg.Gather()
	if err != nil {
		panic(err)
	}
	for _, f := range fams {
		switch f.GetName() {
		case "schedule_jobs_started_total", "schedule_heartbeat_keys_expired_total":
			fmt.Println(f.GetName(), f.GetMetric()[0].GetCounter().GetValue())
		case "schedule_job_start_lateness_seconds":
			fmt.Println(f.GetName(), "count", f.GetMetric()[0].GetHistogram().GetSampleCount())
		}
	}
	// Output:
	// expired: sensor-7
	// schedule_heartbeat_keys_expired_total 1
	// schedule_job_start_lateness_seconds count 1
	// schedule_jobs_started_total 1
}
