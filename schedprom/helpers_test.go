package schedprom_test

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/stretchr/testify/require"

	"github.com/go-schedule/schedule"
)

func nop() {}

// start returns a scheduler with workers workers, shut down (its pool
// released) when t ends. In a synctest bubble, call it from the bubble.
func start(t testing.TB, workers int) *schedule.Scheduler {
	t.Helper()
	s, err := schedule.New(workers)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		require.NoError(t, s.ShutdownContext(ctx))
	})
	return s
}

// advance moves a bubble's clock by d and waits for everything due.
func advance(d time.Duration) {
	time.Sleep(d)
	synctest.Wait()
}

// settle has the owner apply every waiting request (Stats wakes it for
// them), in a bubble.
func settle(s *schedule.Scheduler) schedule.Stats {
	synctest.Wait()
	s.Stats()
	synctest.Wait()
	return s.Stats()
}

// gather registers cs on a pedantic registry, gathers, and returns the
// families by name.
func gather(t testing.TB, cs ...prometheus.Collector) map[string]*dto.MetricFamily {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(cs...)
	fams, err := reg.Gather()
	require.NoError(t, err)
	m := make(map[string]*dto.MetricFamily, len(fams))
	for _, f := range fams {
		m[f.GetName()] = f
	}
	return m
}

// text gathers cs and returns the text exposition.
func text(t testing.TB, cs ...prometheus.Collector) string {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(cs...)
	fams, err := reg.Gather()
	require.NoError(t, err)
	var b strings.Builder
	for _, f := range fams {
		_, err := expfmt.MetricFamilyToText(&b, f)
		require.NoError(t, err)
	}
	return b.String()
}

// value returns the value of the family's only metric, counter or gauge.
func value(t testing.TB, fams map[string]*dto.MetricFamily, name string) float64 {
	t.Helper()
	f, ok := fams[name]
	require.True(t, ok, "no family %s", name)
	require.Len(t, f.GetMetric(), 1, name)
	m := f.GetMetric()[0]
	switch f.GetType() {
	case dto.MetricType_COUNTER:
		return m.GetCounter().GetValue()
	case dto.MetricType_GAUGE:
		return m.GetGauge().GetValue()
	}
	t.Fatalf("%s is a %v", name, f.GetType())
	return 0
}
