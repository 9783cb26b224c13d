package schedprom_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-schedule/schedule/schedprom"
)

// The root module's demo cannot import client_golang, so it writes its
// /metrics itself. This test builds it from this module (which requires
// the root), runs it with -metrics, and checks its exposition with
// client_golang's own parser and linter against the collectors: the same
// families, with the same types, help texts and histogram bounds.
func TestDemoMetricsMatchTheCollectors(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs cmd/heartbeat for about six seconds")
	}
	const devices = 2000
	bin := filepath.Join(t.TempDir(), "heartbeat")
	build := exec.Command("go", "build", "-o", bin, "github.com/go-schedule/schedule/cmd/heartbeat")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	demo := exec.CommandContext(ctx, bin, "-devices", fmt.Sprint(devices), "-duration", "2s", "-metrics", "127.0.0.1:0")
	var stdout bytes.Buffer
	stderr := newURLWatch()
	demo.Stdout, demo.Stderr = &stdout, stderr
	require.NoError(t, demo.Start())
	var url string
	select {
	case url = <-stderr.url:
	case <-ctx.Done():
	}
	// The demo answers as soon as its scheduler exists, while it is still
	// watching its devices: scrape until every one is watched.
	var got map[string]*dto.MetricFamily
	var body []byte
	for {
		body = scrapeWhenReady(t, ctx, url)
		parser := expfmt.NewTextParser(model.UTF8Validation)
		var err error
		got, err = parser.TextToMetricFamilies(bytes.NewReader(body))
		require.NoError(t, err)
		if got["schedule_tasks_scheduled_total"].GetMetric()[0].GetCounter().GetValue() >= devices {
			break
		}
		select {
		case <-time.After(20 * time.Millisecond):
		case <-ctx.Done():
			t.Fatal("the demo's /metrics never counted every device's task")
		}
	}
	require.NoError(t, demo.Wait(), "stdout:\n%s\nstderr:\n%s", &stdout, stderr)
	assert.Contains(t, stdout.String(), "result              PASS")

	problems, err := promlint.New(bytes.NewReader(body)).Lint()
	require.NoError(t, err)
	assert.Empty(t, problems, "promlint on the demo's /metrics")
	assert.Positive(t, got["schedule_heartbeat_keys_watched"].GetMetric()[0].GetGauge().GetValue())

	// The collectors' families, from a scheduler and a Monitor of our own.
	want := func() map[string]*dto.MetricFamily {
		s := start(t, 1)
		return gather(t, schedprom.NewCollector(s), schedprom.NewWatcherCollector(newMonitor(t, s), "heartbeat_keys"))
	}()
	assert.Equal(t, shapes(want), shapes(got))
}

// shape is what the demo and the collectors must agree on for a family.
type shape struct {
	Type   dto.MetricType
	Help   string
	Bounds []float64 // a histogram's
}

func shapes(fams map[string]*dto.MetricFamily) map[string]shape {
	m := make(map[string]shape, len(fams))
	for name, f := range fams {
		sh := shape{Type: f.GetType(), Help: f.GetHelp()}
		for _, b := range f.GetMetric()[0].GetHistogram().GetBucket() {
			// The text format spells out the +Inf bucket; Gather leaves it
			// to the count.
			if !math.IsInf(b.GetUpperBound(), 1) {
				sh.Bounds = append(sh.Bounds, b.GetUpperBound())
			}
		}
		m[name] = sh
	}
	return m
}

// scrapeWhenReady gets url until it answers 200 (the demo answers 503
// until its scheduler exists) and returns the body.
func scrapeWhenReady(t *testing.T, ctx context.Context, url string) []byte {
	t.Helper()
	require.NotEmpty(t, url, "the demo printed no metrics address")
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		require.NoError(t, err)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		if resp.StatusCode == http.StatusOK {
			return body
		}
		require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "%s", body)
		select {
		case <-tick.C:
		case <-ctx.Done():
			t.Fatal("the demo's /metrics never answered 200")
		}
	}
}

// urlWatch is the demo's standard error: it keeps everything, and sends
// the metrics address on url once it is printed.
type urlWatch struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	url  chan string
	sent bool
}

func newURLWatch() *urlWatch { return &urlWatch{url: make(chan string, 1)} }

func (w *urlWatch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if !w.sent {
		sc := bufio.NewScanner(bytes.NewReader(w.buf.Bytes()))
		for sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), "heartbeat: metrics at "); ok {
				w.url <- u
				w.sent = true
				break
			}
		}
	}
	return len(p), nil
}

func (w *urlWatch) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}
