package schedprom_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-schedule/schedule"
	"github.com/go-schedule/schedule/heartbeat"
	"github.com/go-schedule/schedule/schedprom"
)

// fixedWatcher stands for a Watcher this module cannot import, such as the
// mqtt module's KeepAlive hook: a snapshot, not an engine.
type fixedWatcher struct {
	n       int
	expired uint64
}

func (w fixedWatcher) Len() int        { return w.n }
func (w fixedWatcher) Expired() uint64 { return w.expired }

// fixedIdle stands for a gnetidle Detector's Stats.
func fixedIdle() schedprom.IdleStats {
	return schedprom.IdleStats{Watched: 4, Events: [3]uint64{5, 6, 7}, Closed: 8}
}

// newMonitor returns a Monitor on s with a one-second timeout that watches
// keys 0 to 4.
func newMonitor(t *testing.T, s *schedule.Scheduler) *heartbeat.Monitor[int] {
	m, err := heartbeat.New(s, time.Second, func(int) {})
	require.NoError(t, err)
	for k := range 5 {
		require.NoError(t, m.Beat(k))
	}
	return m
}

func TestWatcherCollectorReportsAMonitorsWatchedAndExpiredKeys(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := start(t, 1)
		m := newMonitor(t, s)
		advance(time.Second / 2)
		require.NoError(t, m.Beat(0))
		require.NoError(t, m.Beat(1))
		advance(time.Second / 2) // keys 2, 3 and 4 expire
		fams := gather(t, schedprom.NewWatcherCollector(m, "heartbeat_keys"))
		assert.Equal(t, float64(2), value(t, fams, "schedule_heartbeat_keys_watched"))
		assert.Equal(t, float64(3), value(t, fams, "schedule_heartbeat_keys_expired_total"))
	})
}

// The name given makes the metric names, under the namespace and the
// subsystem: the mqtt keep-alive hook's, for instance.
func TestWatcherCollectorNamesItsMetricsAfterTheNameGiven(t *testing.T) {
	fams := gather(t, schedprom.NewWatcherCollector(fixedWatcher{3, 4}, "mqtt_clients"))
	assert.Equal(t, float64(3), value(t, fams, "schedule_mqtt_clients_watched"))
	assert.Equal(t, float64(4), value(t, fams, "schedule_mqtt_clients_expired_total"))
	assert.Len(t, fams, 2)

	fams = gather(t, schedprom.NewWatcherCollector(fixedWatcher{3, 4}, "devices", schedprom.WithNamespace("gw"), schedprom.WithSubsystem("edge")))
	assert.Equal(t, float64(3), value(t, fams, "gw_edge_devices_watched"))
	assert.Equal(t, float64(4), value(t, fams, "gw_edge_devices_expired_total"))
}

func TestIdleCollectorReportsEventsByState(t *testing.T) {
	fams := gather(t, schedprom.NewIdleCollector(fixedIdle, schedprom.WithConstLabels(prometheus.Labels{"server": "edge"})))
	assert.Len(t, fams, 3)
	assert.Equal(t, float64(4), value(t, fams, "schedule_gnetidle_connections_watched"))
	assert.Equal(t, float64(8), value(t, fams, "schedule_gnetidle_connections_closed_total"))
	events := fams["schedule_gnetidle_idle_events_total"]
	require.NotNil(t, events)
	assert.Equal(t, dto.MetricType_COUNTER, events.GetType())
	got := map[string]float64{}
	for _, m := range events.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		assert.Equal(t, "edge", labels["server"])
		got[labels["state"]] = m.GetCounter().GetValue()
	}
	assert.Equal(t, map[string]float64{"reader": 5, "writer": 6, "all": 7}, got)
}
