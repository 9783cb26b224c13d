package presence_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/go-schedule/schedule/presence"
	"github.com/go-schedule/schedule/presence/embedded"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
)

// testLease is the shortest lease: it keeps the tests that wait for one
// short.
const testLease = time.Second

// startServer starts an embedded NATS server for the test and returns its
// URL.
func startServer(t *testing.T) string {
	t.Helper()
	s, err := embedded.Start(embedded.Options{StoreDir: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	return s.ClientURL()
}

// dial connects to url for the test.
func dial(t *testing.T, url string) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(url, nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	return nc
}

// openNode opens node id on its own connection to url; the test's end
// closes it unless the test did.
func openNode(t *testing.T, url, id string) *presence.Node {
	t.Helper()
	n, err := presence.Open(ctx(t), dial(t, url), presence.Config{Node: id, Lease: testLease})
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = n.Close(context.Background()) })
	return n
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

// ends records how the node ended each connection.
type ends struct {
	mu  sync.Mutex
	got map[string][]error
}

func newEnds() *ends { return &ends{got: make(map[string][]error)} }

func (e *ends) fn(device string) func(error) {
	return func(err error) {
		e.mu.Lock()
		defer e.mu.Unlock()
		e.got[device] = append(e.got[device], err)
	}
}

func (e *ends) of(device string) []error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]error(nil), e.got[device]...)
}

// history collects every record written, per device, from a watch.
type history struct {
	mu   sync.Mutex
	recs map[string][]presence.Record
}

// watchAll watches the store on url until the test ends.
func watchAll(t *testing.T, url string) *history {
	t.Helper()
	js, err := jetstream.New(dial(t, url))
	require.NoError(t, err)
	st, err := presence.OpenStore(ctx(t), js, "", 0)
	require.NoError(t, err)
	h := &history{recs: make(map[string][]presence.Record)}
	c, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	replayed := make(chan struct{})
	go func() {
		defer close(done)
		_ = st.Watch(c, func(r presence.Record) {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.recs[r.Device] = append(h.recs[r.Device], r)
		}, func(int) { close(replayed) })
	}()
	t.Cleanup(func() { cancel(); <-done })
	<-replayed
	return h
}

func (h *history) of(device string) []presence.Record {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]presence.Record(nil), h.recs[device]...)
}

// eventually waits up to d for cond.
func eventually(t *testing.T, d time.Duration, cond func() bool, msg string, args ...any) {
	t.Helper()
	require.Eventually(t, cond, d, 20*time.Millisecond, append([]any{msg}, args...)...)
}

func jsOf(t *testing.T, url string) jetstream.JetStream {
	t.Helper()
	js, err := jetstream.New(dial(t, url))
	require.NoError(t, err)
	return js
}

// caughtUp waits until the watch has a record of device: written last, it
// tells that the watch has every record written before.
func (h *history) caughtUp(t *testing.T, device string) {
	t.Helper()
	eventually(t, 5*time.Second, func() bool { return len(h.of(device)) > 0 }, "the watch catches up")
}
