package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/go-schedule/schedule"
	"github.com/go-schedule/schedule/heartbeat"
)

// The exposition's histogram is cumulative, ends in +Inf, and its count is
// the sum of the buckets; every family has its HELP and TYPE lines.
func TestExpositionWritesACumulativeHistogram(t *testing.T) {
	var st schedule.Stats
	st.Lateness[0] = 2                          // at most 100 µs late
	st.Lateness[3] = 3                          // in (500 µs, 1 ms]
	st.Lateness[schedule.LatenessBuckets-1] = 1 // later than 10 s
	st.LatenessSum = 12*time.Second + 500*time.Microsecond
	st.Started = 7
	var b bytes.Buffer
	if err := writeMetrics(&b, st, 5, 4); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"# TYPE schedule_job_start_lateness_seconds histogram\n",
		`schedule_job_start_lateness_seconds_bucket{le="0.0001"} 2` + "\n",
		`schedule_job_start_lateness_seconds_bucket{le="0.0005"} 2` + "\n",
		`schedule_job_start_lateness_seconds_bucket{le="0.001"} 5` + "\n",
		`schedule_job_start_lateness_seconds_bucket{le="10"} 5` + "\n",
		`schedule_job_start_lateness_seconds_bucket{le="+Inf"} 6` + "\n",
		"schedule_job_start_lateness_seconds_sum 12.0005\n",
		"schedule_job_start_lateness_seconds_count 6\n",
		"# TYPE schedule_jobs_started_total counter\nschedule_jobs_started_total 7\n",
		"# TYPE schedule_heartbeat_keys_watched gauge\nschedule_heartbeat_keys_watched 5\n",
		"schedule_heartbeat_keys_expired_total 4\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("exposition lacks %q:\n%s", want, out)
		}
	}
	if h, ty := strings.Count(out, "# HELP "), strings.Count(out, "# TYPE "); h != 16 || ty != 16 {
		t.Errorf("%d HELP and %d TYPE lines, want 16 each", h, ty)
	}
}

// The server answers 503 until the run has a scheduler, then the
// exposition of its Stats and Monitor.
func TestMetricsServerServesTheRunsScheduler(t *testing.T) {
	ms, err := listenMetrics("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ms.close()
	if code, _ := get(t, ms.url()); code != http.StatusServiceUnavailable {
		t.Errorf("before the run: status %d, want 503", code)
	}

	s, err := schedule.New(1)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown()
	m, err := heartbeat.New(s, time.Hour, func(int32) {})
	if err != nil {
		t.Fatal(err)
	}
	for k := range int32(3) {
		if err := m.Beat(k); err != nil {
			t.Fatal(err)
		}
	}
	ms.watch(s, m)
	code, body := get(t, ms.url())
	if code != http.StatusOK {
		t.Fatalf("status %d, want 200:\n%s", code, body)
	}
	for _, want := range []string{"\nschedule_tasks_scheduled_total 3\n", "\nschedule_heartbeat_keys_watched 3\n"} {
		if !strings.Contains(body, want) {
			t.Errorf("exposition lacks %q:\n%s", want, body)
		}
	}
}

// An address that cannot be listened on fails the run before it starts.
func TestMetricsOnABadAddressFails(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"-devices", "10", "-metrics", "256.0.0.1:1"}, &stdout, &stderr)
	if code != exitFail || !strings.Contains(stderr.String(), "heartbeat: metrics:") {
		t.Errorf("exit status %d, stderr %q; want %d and the listen error", code, &stderr, exitFail)
	}
	if stdout.Len() != 0 {
		t.Errorf("the run started:\n%s", &stdout)
	}
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}
