package jobs_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-schedule/schedule/jobs"
	"github.com/go-schedule/schedule/presence/embedded"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"
)

// startServer starts an embedded NATS server for the test and returns it
// and its URL.
func startServer(t *testing.T) (*server.Server, string) {
	t.Helper()
	s, err := embedded.Start(embedded.Options{Name: "jobs-test", StoreDir: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	return s, s.ClientURL()
}

// startCluster starts three embedded servers routed into one cluster and
// waits for a JetStream meta leader with every peer current; it returns
// the client URLs.
func startCluster(t *testing.T) []string {
	_, urls := startClusterServers(t)
	return urls
}

// startClusterServers is startCluster that returns the servers too.
func startClusterServers(t *testing.T) ([]*server.Server, []string) {
	t.Helper()
	ports := make([]int, 3)
	for i := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		ports[i] = l.Addr().(*net.TCPAddr).Port
		require.NoError(t, l.Close())
	}
	var routes []string
	for _, p := range ports {
		routes = append(routes, fmt.Sprintf("nats-route://127.0.0.1:%d", p))
	}
	servers := make([]*server.Server, 3)
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i := range servers {
		wg.Go(func() {
			servers[i], errs[i] = embedded.Start(embedded.Options{
				Name: fmt.Sprintf("jobs-c%d", i), StoreDir: t.TempDir(),
				Cluster: embedded.ClusterOptions{Name: "jobs", Host: "127.0.0.1", Port: ports[i], Routes: routes},
			})
		})
	}
	wg.Wait()
	var urls []string
	for i, s := range servers {
		require.NoError(t, errs[i])
		t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
		urls = append(urls, s.ClientURL())
	}
	require.Eventually(t, func() bool {
		for _, s := range servers {
			if s.JetStreamIsLeader() {
				return len(s.JetStreamClusterPeers()) == 3
			}
		}
		return false
	}, 20*time.Second, 50*time.Millisecond, "a JetStream meta leader with three peers")
	return servers, urls
}

// dialAll connects for the test to the first of urls that answers, in
// their order, and reconnects to any of them for as long as the test runs.
func dialAll(t *testing.T, urls []string) *nats.Conn {
	t.Helper()
	opts := []nats.Option{nats.DontRandomize(), nats.MaxReconnects(-1), nats.ReconnectWait(100 * time.Millisecond), nats.Name(t.Name())}
	nc, err := nats.Connect(strings.Join(urls, ","), opts...)
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	return nc
}

// dial connects to url for the test.
func dial(t *testing.T, url string) *nats.Conn { return dialAll(t, []string{url}) }

func ctxOf(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return c
}

func openClient(t *testing.T, url, queue string) *jobs.Client {
	t.Helper()
	c, err := jobs.Open(ctxOf(t), dial(t, url), jobs.Config{Queue: queue})
	require.NoError(t, err)
	return c
}

// events collects a worker's events.
type events struct {
	mu  sync.Mutex
	evs []jobs.Event
}

func (e *events) add(ev jobs.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.evs = append(e.evs, ev)
}

func (e *events) all() []jobs.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]jobs.Event(nil), e.evs...)
}

// of returns the events of key, in order.
func (e *events) of(key string) []jobs.Event {
	var out []jobs.Event
	for _, ev := range e.all() {
		if ev.Key == key {
			out = append(out, ev)
		}
	}
	return out
}

func (e *events) count(kind jobs.EventKind) int {
	n := 0
	for _, ev := range e.all() {
		if ev.Kind == kind {
			n++
		}
	}
	return n
}

// startWorker starts a worker named node on its own connection; the test's
// end stops it unless the test did.
func startWorker(t *testing.T, url, queue, node string, h jobs.Handler, evs *events, cfg jobs.WorkerConfig) *jobs.Worker {
	t.Helper()
	c := openClient(t, url, queue)
	cfg.Node, cfg.Handler, cfg.OnEvent = node, h, evs.add
	if cfg.Lease == 0 {
		cfg.Lease = 2 * time.Second
	}
	w, err := c.StartWorker(ctxOf(t), cfg)
	require.NoError(t, err)
	t.Cleanup(func() {
		c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = w.Stop(c)
	})
	return w
}

func succeed(context.Context, jobs.Job) error { return nil }

// blocking returns a handler whose attempts run until the channel is
// closed or the worker abandons them, then succeed.
func blocking() (jobs.Handler, chan struct{}) {
	release := make(chan struct{})
	return func(ctx context.Context, _ jobs.Job) error {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil
	}, release
}

// blockingFirst returns a handler whose first attempt runs until the
// channel is closed, and whose later attempts succeed at once: a second
// start, the fault a test looks for, then does not hold the test up.
func blockingFirst() (jobs.Handler, chan struct{}) {
	var calls atomic.Int32
	release := make(chan struct{})
	return func(context.Context, jobs.Job) error {
		if calls.Add(1) == 1 {
			<-release
		}
		return nil
	}, release
}

// eventually waits up to d for cond.
func eventually(t *testing.T, d time.Duration, cond func() bool, msg string, args ...any) {
	t.Helper()
	require.Eventually(t, cond, d, 20*time.Millisecond, append([]any{msg}, args...)...)
}
