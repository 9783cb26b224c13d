package schedprom_test

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-schedule/schedule"
	"github.com/go-schedule/schedule/heartbeat"
	"github.com/go-schedule/schedule/schedprom"
)

// run30msLate makes a one-worker scheduler start four jobs: one on time,
// which holds the worker for 30 ms, and three due at once behind it, each
// started 30 ms late. It also leaves two tasks pending an hour out and one
// cancelled. Call it in a bubble.
func run30msLate(t *testing.T, s *schedule.Scheduler) {
	hold := make(chan struct{})
	_, err := s.ScheduleOne(func() { <-hold }, time.Second-time.Millisecond)
	require.NoError(t, err)
	for range 3 {
		_, err = s.ScheduleOne(nop, time.Second)
		require.NoError(t, err)
	}
	for range 3 {
		_, err = s.ScheduleOne(nop, time.Hour)
		require.NoError(t, err)
	}
	id, err := s.ScheduleOne(nop, time.Hour)
	require.NoError(t, err)
	require.True(t, s.CancelTask(id))
	advance(time.Second + 30*time.Millisecond)
	close(hold)
	advance(time.Millisecond)
}

func TestCollectorReportsTheSchedulersStats(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := start(t, 1)
		run30msLate(t, s)
		st := settle(s)
		fams := gather(t, schedprom.NewCollector(s))

		assert.Equal(t, float64(3), value(t, fams, "schedule_tasks_pending"))
		assert.Equal(t, float64(8), value(t, fams, "schedule_tasks_scheduled_total"))
		assert.Equal(t, float64(1), value(t, fams, "schedule_tasks_cancelled_total"))
		assert.Equal(t, float64(4), value(t, fams, "schedule_jobs_started_total"))
		assert.Equal(t, 0.03, value(t, fams, "schedule_job_start_lateness_max_seconds"))
		for name, want := range map[string]float64{
			"schedule_tasks_pending":                  float64(st.Pending),
			"schedule_tasks_scheduled_total":          float64(st.Scheduled),
			"schedule_tasks_cancelled_total":          float64(st.Cancelled),
			"schedule_jobs_started_total":             float64(st.Started),
			"schedule_jobs_panicked_total":            float64(st.Panics),
			"schedule_jobs_dropped_total":             float64(st.Dropped),
			"schedule_jobs_skipped_total":             float64(st.Skipped),
			"schedule_jobs_waiting":                   float64(st.Waiting),
			"schedule_workers_busy":                   float64(st.Running),
			"schedule_heap_entries":                   float64(st.HeapEntries),
			"schedule_heap_tombstones":                float64(st.Tombstones),
			"schedule_owner_wakeups_total":            float64(st.Wakeups),
			"schedule_job_start_lateness_max_seconds": st.MaxLateness.Seconds(),
		} {
			assert.Equal(t, want, value(t, fams, name), name)
		}
		assert.Len(t, fams, 14, "13 values and the histogram")

		h := fams["schedule_job_start_lateness_seconds"]
		require.NotNil(t, h)
		require.Equal(t, dto.MetricType_HISTOGRAM, h.GetType())
		hist := h.GetMetric()[0].GetHistogram()
		assert.Equal(t, st.Started, hist.GetSampleCount(), "one sample per job started")
		assert.InDelta(t, 0.09, hist.GetSampleSum(), 1e-12, "three starts 30 ms late, one on time")
		bounds := schedule.LatenessBounds()
		require.Len(t, hist.GetBucket(), len(bounds))
		for i, b := range hist.GetBucket() {
			assert.Equal(t, bounds[i].Seconds(), b.GetUpperBound())
			want := uint64(1) // the on-time start
			if bounds[i] >= 30*time.Millisecond {
				want = 4
			}
			assert.Equal(t, want, b.GetCumulativeCount(), "le %v", bounds[i])
		}
	})
}

func TestCollectTwiceGivesTheSameSnapshot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := start(t, 1)
		run30msLate(t, s)
		settle(s)
		c := schedprom.NewCollector(s)
		first := text(t, c)
		assert.Equal(t, first, text(t, c))
		assert.Contains(t, first, "schedule_jobs_started_total 4\n")
	})
}

// Ten scrapes a second for a second leave Stats as they were.
func TestScrapingTenTimesASecondChangesNoStats(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := start(t, 1)
		run30msLate(t, s)
		before := settle(s)
		reg := prometheus.NewRegistry()
		reg.MustRegister(schedprom.NewCollector(s))
		for range 10 {
			_, err := reg.Gather()
			require.NoError(t, err)
			advance(100 * time.Millisecond)
		}
		assert.Equal(t, before, s.Stats())
	})
}

func TestCollectorsAreLintClean(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := start(t, 1)
		run30msLate(t, s)
		m := newMonitor(t, s)
		for name, c := range map[string]prometheus.Collector{
			"scheduler": schedprom.NewCollector(s),
			"monitor":   schedprom.NewWatcherCollector(m, "heartbeat_keys"),
			"keepalive": schedprom.NewWatcherCollector(fixedWatcher{3, 4}, "mqtt_clients"),
			"idle":      schedprom.NewIdleCollector(fixedIdle),
		} {
			problems, err := testutil.CollectAndLint(c)
			require.NoError(t, err, name)
			assert.Empty(t, problems, name)
		}
	})
}

// Two schedulers in one registry: the same names, told apart by a constant
// label; without one, the second registration is refused.
func TestConstLabelsTellSchedulersApart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b := start(t, 1), start(t, 1)
		_, err := b.ScheduleOne(nop, time.Hour)
		require.NoError(t, err)
		settle(b)
		fams := gather(t,
			schedprom.NewCollector(a, schedprom.WithConstLabels(prometheus.Labels{"scheduler": "a"})),
			schedprom.NewCollector(b, schedprom.WithConstLabels(prometheus.Labels{"scheduler": "b"})))
		pending := fams["schedule_tasks_pending"].GetMetric()
		require.Len(t, pending, 2)
		got := map[string]float64{}
		for _, m := range pending {
			got[m.GetLabel()[0].GetValue()] = m.GetGauge().GetValue()
		}
		assert.Equal(t, map[string]float64{"a": 0, "b": 1}, got)

		reg := prometheus.NewRegistry()
		require.NoError(t, reg.Register(schedprom.NewCollector(a)))
		var already prometheus.AlreadyRegisteredError
		assert.ErrorAs(t, reg.Register(schedprom.NewCollector(b)), &already)
	})
}

func TestNamespaceAndSubsystemPrefixEveryName(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := start(t, 1)
		fams := gather(t, schedprom.NewCollector(s, schedprom.WithNamespace("gw"), schedprom.WithSubsystem("timeouts")))
		assert.Contains(t, fams, "gw_timeouts_tasks_pending")
		assert.Contains(t, fams, "gw_timeouts_job_start_lateness_seconds")
		assert.Len(t, fams, 14)
	})
}

func TestBadArgumentsFailRegister(t *testing.T) {
	for name, tc := range map[string]struct {
		c    prometheus.Collector
		want error
	}{
		"nil scheduler":   {schedprom.NewCollector(nil), schedprom.ErrNilScheduler},
		"nil monitor":     {schedprom.NewWatcherCollector(nil, "heartbeat_keys"), schedprom.ErrNilSource},
		"nil *Monitor":    {schedprom.NewWatcherCollector((*heartbeat.Monitor[string])(nil), "heartbeat_keys"), schedprom.ErrNilSource},
		"empty name":      {schedprom.NewWatcherCollector(fixedWatcher{}, ""), schedprom.ErrEmptyName},
		"nil idle source": {schedprom.NewIdleCollector(nil), schedprom.ErrNilSource},
	} {
		err := prometheus.NewRegistry().Register(tc.c)
		assert.ErrorIs(t, err, tc.want, name)
	}
	err := prometheus.NewRegistry().Register(schedprom.NewWatcherCollector(fixedWatcher{}, "heartbeat_keys", schedprom.WithNamespace("\xff")))
	assert.Error(t, err, "a namespace that is not UTF-8")
	assert.False(t, errors.Is(err, schedprom.ErrNilSource))
}
