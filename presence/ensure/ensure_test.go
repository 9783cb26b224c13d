package ensure_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-schedule/schedule/presence/embedded"
	"github.com/go-schedule/schedule/presence/ensure"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func jsOn(t *testing.T, url string) jetstream.JetStream {
	t.Helper()
	nc, err := nats.Connect(url)
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	return js
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return c
}

// Three clients, each on a server of its own, ensure the same
// three-replica stream at once on a fresh cluster: all get it, and it has
// the configuration one of them gave.
func TestStreamEnsuredAtOnceOnAFreshClusterServesEveryCaller(t *testing.T) {
	servers, err := embedded.StartCluster("ensure", 3, t.TempDir())
	require.NoError(t, err)
	for _, s := range servers {
		t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	}
	cfg := jetstream.StreamConfig{Name: "jobs", Subjects: []string{"jobs.>"}, Replicas: 3}
	var wg sync.WaitGroup
	errs := make([]error, len(servers))
	for i, s := range servers {
		js := jsOn(t, s.ClientURL())
		wg.Go(func() {
			st, err := ensure.Stream(ctx(t), js, cfg)
			if err == nil && st.CachedInfo().Config.Replicas != 3 {
				err = errors.New("not the stream asked for")
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i, err := range errs {
		assert.NoError(t, err, "client %d", i)
	}
}

// A bucket that exists is bound as it is, not changed to the config given.
func TestKeyValueBindsAnExistingBucketAsItIs(t *testing.T) {
	s, err := embedded.Start(embedded.Options{StoreDir: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	js := jsOn(t, s.ClientURL())
	_, err = ensure.KeyValue(ctx(t), js, jetstream.KeyValueConfig{Bucket: "b", History: 3})
	require.NoError(t, err)
	kv, err := ensure.KeyValue(ctx(t), js, jetstream.KeyValueConfig{Bucket: "b", History: 1})
	require.NoError(t, err)
	st, err := kv.Status(ctx(t))
	require.NoError(t, err)
	assert.Equal(t, int64(3), st.History())
}

// An error that says nothing about timing is returned at once, not retried.
func TestRetryReturnsAFinalErrorAtOnce(t *testing.T) {
	final := errors.New("refused")
	calls := 0
	_, err := ensure.Retry(ctx(t), func(context.Context) (int, error) { calls++; return 0, final })
	assert.ErrorIs(t, err, final)
	assert.Equal(t, 1, calls)
}

// A try cut off by its own short deadline is tried again with the time
// left, until one answers.
func TestRetryTriesAgainAfterATryTimesOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		calls := 0
		v, err := ensure.Retry(t.Context(), func(c context.Context) (int, error) {
			calls++
			if calls < 3 {
				<-c.Done() // a request nobody answers
				return 0, c.Err()
			}
			return 7, nil
		})
		require.NoError(t, err)
		assert.Equal(t, 7, v)
		assert.Equal(t, 3, calls)
	})
}

// When the caller's context ends, Retry stops and says so.
func TestRetryStopsWhenTheCallersContextEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		calls := 0
		_, err := ensure.Retry(c, func(c context.Context) (int, error) {
			calls++
			<-c.Done()
			return 0, c.Err()
		})
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Equal(t, 4, calls, "tries of 1, 2, 4 and the last 3 seconds")
	})
}
