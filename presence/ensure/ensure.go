// Package ensure binds to JetStream streams and key-value buckets,
// creating them when they are missing, so that processes that start
// together on a fresh cluster converge on one stream within seconds.
//
// On a replicated cluster, a [jetstream.JetStream.Stream] or
// [jetstream.JetStream.CreateStream] request about a stream that another
// client is still creating may go unanswered for more than ten seconds,
// until the stream has a leader, although the stream is ready well before.
// A caller that waits with one deadline fails, or waits that long. [Stream]
// and [KeyValue] therefore send each request with a short deadline of its
// own and send it again when that passes, as [Retry] does, until the
// caller's context ends.
//
// The package depends on nats.go only; any module on NATS may use it.
package ensure

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Per-try deadlines: the first try may take firstTry, each later one
// twice the one before, at most lastTry. A stream whose leader is elected
// answers within milliseconds, so a second is ample on a loaded machine,
// and a request that waits longer is one that nothing will answer soon.
// The growth keeps a cluster that is merely slow from being cut off at
// every try.
const (
	firstTry = time.Second
	lastTry  = 4 * time.Second
)

// pause is the wait before trying again after an answer that came at
// once but said "not now" (no responders, cluster unavailable, or "not
// found" then "exists"): long enough not to flood a starting cluster with
// requests.
const pause = 100 * time.Millisecond

// Stream returns the stream named cfg.Name, creating it with cfg if it is
// missing. If it exists, its configuration is left as it is, even when
// it differs from cfg. Several callers may do this at once for the same
// stream: one creates it and all get it. Each request has a short
// deadline of its own and is sent again while ctx lasts (see [Retry]).
// Stream returns ctx's error if ctx ends first, or the engine's error
// when the engine refuses (for example an invalid configuration).
func Stream(ctx context.Context, js jetstream.JetStream, cfg jetstream.StreamConfig) (jetstream.Stream, error) {
	return Retry(ctx, func(ctx context.Context) (jetstream.Stream, error) {
		s, err := js.Stream(ctx, cfg.Name)
		if !errors.Is(err, jetstream.ErrStreamNotFound) {
			return s, err
		}
		s, err = js.CreateStream(ctx, cfg)
		if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			return nil, errTryAgain // created meanwhile: bind to it
		}
		return s, err
	})
}

// KeyValue returns the key-value bucket named cfg.Bucket, creating it with
// cfg if it is missing, as [Stream] does for a stream: an existing bucket
// is used as it is, several callers at once all get the one bucket, and
// each request is sent again after a short deadline of its own while ctx
// lasts.
func KeyValue(ctx context.Context, js jetstream.JetStream, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	return Retry(ctx, func(ctx context.Context) (jetstream.KeyValue, error) {
		kv, err := js.KeyValue(ctx, cfg.Bucket)
		if !errors.Is(err, jetstream.ErrBucketNotFound) {
			return kv, err
		}
		kv, err = js.CreateKeyValue(ctx, cfg)
		if errors.Is(err, jetstream.ErrBucketExists) {
			return nil, errTryAgain // created meanwhile: bind to it
		}
		return kv, err
	})
}

// errTryAgain makes Retry try once more after a pause: the stream or
// bucket was created by another caller between two requests of this one,
// and the server asked next may not know of it yet.
var errTryAgain = errors.New("ensure: try again")

// Retry calls try until it succeeds, fails for good, or ctx ends. Each
// call gets a context whose deadline is short (one second, doubling up to
// four) and within ctx's. A call is repeated when it failed only because
// that deadline passed, because nothing answered (no responders, a
// [nats.ErrTimeout]), or because the cluster said it is not available
// for now (status 503); any other error is returned as it is. When ctx
// ends, Retry returns ctx's error joined with the last call's.
//
// Use it for requests to JetStream's API that may meet a stream still
// being created, such as binding to a consumer of a new stream.
func Retry[T any](ctx context.Context, try func(context.Context) (T, error)) (T, error) {
	within := firstTry
	for {
		tctx, cancel := context.WithTimeout(ctx, within)
		v, err := try(tctx)
		expired := tctx.Err() != nil
		cancel()
		if err == nil {
			return v, nil
		}
		if ctx.Err() != nil {
			var zero T
			return zero, errors.Join(ctx.Err(), err)
		}
		switch {
		case expired || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout):
			within = min(2*within, lastTry)
		case errors.Is(err, errTryAgain), notNow(err):
			if !wait(ctx, pause) {
				var zero T
				return zero, errors.Join(ctx.Err(), err)
			}
		default:
			var zero T
			return zero, err
		}
	}
}

// notNow reports whether err says that JetStream cannot answer yet: no
// server serves its API (no meta leader), or the cluster is unavailable.
func notNow(err error) bool {
	if errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrNoStreamResponse) {
		return true
	}
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.Code == 503
}

// wait waits d, and reports false if ctx ended first.
func wait(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
