package jobs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-schedule/schedule/presence/ensure"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// DefaultQueue is the queue of a Config that names none.
const DefaultQueue = "default"

// markerTTL is how long the marker a finished or cancelled job leaves
// behind is kept: long enough for every live watcher to see it, short
// enough that done jobs do not pile up in the store.
const markerTTL = 10 * time.Minute

var (
	// ErrExists is returned by [Client.AddUnique] when the key is pending
	// or running.
	ErrExists = errors.New("jobs: the job is pending or running")
	// ErrInvalidReplicas is returned for replicas outside 1..5.
	ErrInvalidReplicas = errors.New("jobs: replicas are 1 to 5")
)

// Config names a queue and how its buckets are made.
type Config struct {
	// Queue is the queue's name, [A-Za-z0-9_-]{1,64}; empty means
	// [DefaultQueue]. Clients and workers of different queues never see each
	// other's jobs.
	Queue string
	// Replicas is the replica count of the buckets Open creates when they
	// are missing, 1 to 5; 0 means 1. Existing buckets are left as they are.
	Replicas int
}

// Client adds, replaces, cancels and looks up jobs of one queue; it runs no
// job. Its methods are safe for concurrent use.
type Client struct {
	queue string
	nc    *nats.Conn
	js    jetstream.JetStream
	jobs  jetstream.KeyValue // "jobs-<queue>": one record per job
	nodes jetstream.KeyValue // "jobs-<queue>-nodes": one lease per live worker
}

// The names JetStream's KV layer gives a bucket's stream and its keys'
// subjects, for the requests that go past the KV API.
func kvStream(bucket string) string       { return "KV_" + bucket }
func kvSubject(bucket, key string) string { return "$KV." + bucket + "." + key }

func (c *Client) jobsBucket() string  { return "jobs-" + c.queue }
func (c *Client) nodesBucket() string { return "jobs-" + c.queue + "-nodes" }

// Open returns a Client of cfg's queue on nc, creating the queue's buckets
// if they are missing. It returns [ErrInvalidName] or [ErrInvalidReplicas]
// for a bad cfg, and the engine's error if the buckets cannot be found or made
// before ctx ends.
func Open(ctx context.Context, nc *nats.Conn, cfg Config) (*Client, error) {
	if cfg.Queue == "" {
		cfg.Queue = DefaultQueue
	}
	if !ValidName(cfg.Queue) {
		return nil, ErrInvalidName
	}
	if cfg.Replicas == 0 {
		cfg.Replicas = 1
	}
	if cfg.Replicas < 1 || cfg.Replicas > 5 {
		return nil, ErrInvalidReplicas
	}
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(asyncMaxPending))
	if err != nil {
		return nil, err
	}
	c := &Client{queue: cfg.Queue, nc: nc, js: js}
	// Both buckets allow per-message TTLs: leases expire by TTL, and the
	// marker of a finished job by PurgeTTL. Workers that start together on
	// a fresh cluster all create them: ensure converges on one bucket.
	c.jobs, err = ensure.KeyValue(ctx, js, jetstream.KeyValueConfig{
		Bucket: c.jobsBucket(), History: 1, Replicas: cfg.Replicas, LimitMarkerTTL: markerTTL,
	})
	if err != nil {
		return nil, fmt.Errorf("jobs: bucket jobs-%s: %w", cfg.Queue, err)
	}
	c.nodes, err = ensure.KeyValue(ctx, js, jetstream.KeyValueConfig{
		Bucket: c.nodesBucket(), History: 1, Replicas: cfg.Replicas, LimitMarkerTTL: time.Hour,
	})
	if err != nil {
		return nil, fmt.Errorf("jobs: bucket jobs-%s-nodes: %w", cfg.Queue, err)
	}
	return c, nil
}

// Queue returns the client's queue.
func (c *Client) Queue() string { return c.queue }

// Info is what [Client.Get] tells about a job.
type Info struct {
	Key   string
	State State
	// Due is the due time of the attempt due next (pending) or running;
	// zero for a dead or unknown job.
	Due time.Time
	// Attempt is the attempt due next (pending), running, or the last one
	// (dead); 0 for an unknown job.
	Attempt int
	// Revision is the record's revision in the engine; 0 for an unknown job.
	Revision uint64
}

func check(key string, payload []byte) error {
	if !ValidKey(key) {
		return ErrInvalidKey
	}
	if len(payload) > MaxPayload {
		return ErrPayloadTooLarge
	}
	return nil
}

// pendingValue is the record of a job just added.
func pendingValue(due time.Time, payload []byte) []byte {
	return encodeRecord(header{State: StatePending, Due: due.UnixMilli(), Attempt: 1}, payload)
}

// Add schedules job key at due (truncated to the millisecond) with
// payload, replacing any job key, even one whose attempt is running: the
// replacement starts again at attempt 1, and the running attempt's end
// records nothing. A due time now or past makes the job due at once. It
// returns [ErrInvalidKey] or [ErrPayloadTooLarge] for bad input, and the
// engine's error if the write fails.
func (c *Client) Add(ctx context.Context, key string, due time.Time, payload []byte) error {
	if err := check(key, payload); err != nil {
		return err
	}
	_, err := c.jobs.Put(ctx, kvKey(key), pendingValue(due, payload))
	return err
}

// AddUnique is [Client.Add] that leaves a pending or running job key alone
// and returns [ErrExists] for it; a dead job key (or a record that is not a
// job's) is replaced.
func (c *Client) AddUnique(ctx context.Context, key string, due time.Time, payload []byte) error {
	if err := check(key, payload); err != nil {
		return err
	}
	k, v := kvKey(key), pendingValue(due, payload)
	for {
		_, err := c.jobs.Create(ctx, k, v)
		if !errors.Is(err, jetstream.ErrKeyExists) {
			return err
		}
		e, err := c.jobs.Get(ctx, k)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue // gone meanwhile: create it
		}
		if err != nil {
			return err
		}
		h, _, ok := decodeRecord(e.Value())
		if ok && h.State != StateDead {
			return ErrExists
		}
		_, err = c.jobs.Update(ctx, k, v, e.Revision())
		if !errors.Is(err, jetstream.ErrKeyExists) {
			return err
		}
		// The record moved meanwhile: look again.
	}
}

// Cancel removes job key whatever its state and reports whether it
// existed (pending, running or dead). No attempt of key starts afterwards
// until it is added again; an attempt already running runs to its end,
// which records nothing (its worker reports it [EventSuperseded]). It
// returns [ErrInvalidKey] for a bad key.
func (c *Client) Cancel(ctx context.Context, key string) (bool, error) {
	if !ValidKey(key) {
		return false, ErrInvalidKey
	}
	k := kvKey(key)
	for {
		e, err := c.jobs.Get(ctx, k)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		// The purge applies only to the record read, so that true means
		// this call removed a job: one that ended meanwhile (done, its
		// record purged by its worker) is read again and reported gone.
		err = c.jobs.Purge(ctx, k, jetstream.PurgeTTL(markerTTL), jetstream.LastRevision(e.Revision()))
		if err == nil {
			return true, nil
		}
		if !errors.Is(err, jetstream.ErrKeyExists) {
			return false, err
		}
	}
}

// Get returns what the engine holds about job key. A job never added,
// done, or cancelled is [StateUnknown], and so is a record that is not a
// job's. It returns [ErrInvalidKey] for a bad key.
func (c *Client) Get(ctx context.Context, key string) (Info, error) {
	if !ValidKey(key) {
		return Info{}, ErrInvalidKey
	}
	e, err := c.jobs.Get(ctx, kvKey(key))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return Info{Key: key, State: StateUnknown}, nil
	}
	if err != nil {
		return Info{}, err
	}
	h, _, ok := decodeRecord(e.Value())
	if !ok {
		return Info{Key: key, State: StateUnknown}, nil
	}
	in := Info{Key: key, State: h.State, Attempt: h.Attempt, Revision: e.Revision()}
	if h.State != StateDead {
		in.Due = time.UnixMilli(h.Due)
	}
	return in, nil
}

// Loader adds jobs as [Client.Add] does, many in flight at once: each
// [Loader.Add] publishes without waiting for the engine's answer, and
// [Loader.Wait] waits for them all. The adds in flight are bounded: an Add
// that finds the bound reached first waits for the answers to the oldest
// half, so a Loader's memory does not grow with the number of jobs it
// adds. A Loader is for one goroutine; up to four Loaders of one Client
// may run at once.
type Loader struct {
	c      *Client
	prefix string
	futs   []jetstream.PubAckFuture
	failed int
	err    error
}

// asyncMaxPending is how many publishes a Client's connection to
// JetStream may have unanswered at once. nats.go makes a publish past it
// wait 200 ms for room and then fail ("stalled with too many outstanding
// async published messages"), so a Loader keeps below it.
const asyncMaxPending = 8192

// maxInFlight bounds the adds a Loader has in flight before it waits for
// the oldest half of their answers: a quarter of asyncMaxPending, so that
// up to four Loaders of one Client at once never reach that limit.
const maxInFlight = asyncMaxPending / 4

// NewLoader returns a Loader of the client's queue.
func (c *Client) NewLoader() *Loader {
	return &Loader{c: c, prefix: "$KV." + c.jobs.Bucket() + "."}
}

// Add publishes job key, as [Client.Add] would write it. It returns
// [ErrInvalidKey] or [ErrPayloadTooLarge] for bad input (nothing is sent),
// or an error of the publish itself. A failure among the answers it waits
// for at the bound is not returned here: [Loader.Wait] counts it.
func (l *Loader) Add(ctx context.Context, key string, due time.Time, payload []byte) error {
	if err := check(key, payload); err != nil {
		return err
	}
	if len(l.futs) >= maxInFlight {
		l.settle(ctx, len(l.futs)/2)
	}
	f, err := l.c.js.PublishAsync(l.prefix+kvKey(key), pendingValue(due, payload))
	if err != nil {
		return err
	}
	l.futs = append(l.futs, f)
	return nil
}

// settle waits for the first n answers.
func (l *Loader) settle(ctx context.Context, n int) {
	for _, f := range l.futs[:n] {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			l.failed++
			if l.err == nil {
				l.err = err
			}
		case <-ctx.Done():
			l.failed++
			if l.err == nil {
				l.err = ctx.Err()
			}
		}
	}
	l.futs = append(l.futs[:0], l.futs[n:]...)
}

// Wait waits for the answer to every [Loader.Add] and returns how many
// failed and the first failure. If ctx ends first, every add still
// unanswered counts as failed, with ctx's error. The Loader can be used
// again afterwards; its count and first failure are kept.
func (l *Loader) Wait(ctx context.Context) (failed int, err error) {
	l.settle(ctx, len(l.futs))
	return l.failed, l.err
}
