package presence

import (
	"context"
	"errors"
	"time"

	"github.com/go-schedule/schedule/presence/ensure"
	"github.com/nats-io/nats.go/jetstream"
)

// Store reads the fleet's presence: point lookups, scans and watches. A
// Node has one; consumers that are not gateways make their own with
// OpenStore. Its methods are safe for concurrent use.
type Store struct {
	js      jetstream.JetStream
	prefix  string
	devices jetstream.KeyValue
	nodes   jetstream.KeyValue
}

// OpenStore binds to the buckets named by prefix (empty: [DefaultPrefix]),
// creating them with replicas replicas (0: 1) if they are missing; buckets
// that exist are used as they are. Callers that open at once all get the
// same buckets, as [ensure.KeyValue] promises. It returns
// [ErrNilJetStream], [ErrInvalidReplicas], ctx's error, or the engine's
// error.
func OpenStore(ctx context.Context, js jetstream.JetStream, prefix string, replicas int) (*Store, error) {
	if js == nil {
		return nil, ErrNilJetStream
	}
	if prefix == "" {
		prefix = DefaultPrefix
	}
	if replicas == 0 {
		replicas = 1
	}
	if replicas < 1 || replicas > 5 {
		return nil, ErrInvalidReplicas
	}
	st := &Store{js: js, prefix: prefix}
	var err error
	if st.devices, err = ensure.KeyValue(ctx, js, devicesBucket(prefix, replicas)); err != nil {
		return nil, err
	}
	if st.nodes, err = ensure.KeyValue(ctx, js, nodesBucket(prefix, replicas)); err != nil {
		return nil, err
	}
	return st, nil
}

// devicesBucket and nodesBucket configure the buckets that OpenStore
// creates when they are missing.
func devicesBucket(prefix string, replicas int) jetstream.KeyValueConfig {
	return jetstream.KeyValueConfig{
		Bucket: prefix + "-devices", History: 1, Replicas: replicas,
		Description: "device presence: one record per device",
	}
}

func nodesBucket(prefix string, replicas int) jetstream.KeyValueConfig {
	return jetstream.KeyValueConfig{
		Bucket: prefix + "-nodes", History: 1, Replicas: replicas, LimitMarkerTTL: markerKeep,
		Description: "gateway node leases",
	}
}

// BindStore binds to the buckets named by prefix (empty: [DefaultPrefix])
// without creating them: a consumer that starts before any gateway must
// not decide the buckets' replicas. It returns [ErrNoBuckets] while they
// are missing, [ErrNilJetStream], or the engine's error.
func BindStore(ctx context.Context, js jetstream.JetStream, prefix string) (*Store, error) {
	if js == nil {
		return nil, ErrNilJetStream
	}
	if prefix == "" {
		prefix = DefaultPrefix
	}
	st := &Store{js: js, prefix: prefix}
	var err error
	if st.devices, err = bindKeyValue(ctx, js, prefix+"-devices"); err == nil {
		st.nodes, err = bindKeyValue(ctx, js, prefix+"-nodes")
	}
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil, ErrNoBuckets
	}
	if err != nil {
		return nil, err
	}
	return st, nil
}

// bindKeyValue binds to bucket, which may be new: its requests are retried
// with short deadlines, as ensure.KeyValue does.
func bindKeyValue(ctx context.Context, js jetstream.JetStream, bucket string) (jetstream.KeyValue, error) {
	return ensure.Retry(ctx, func(ctx context.Context) (jetstream.KeyValue, error) {
		return js.KeyValue(ctx, bucket)
	})
}

// ErrNoBuckets is returned by BindStore while no node has created the
// buckets.
var ErrNoBuckets = errors.New("presence: the buckets do not exist yet")

// ErrNotFound is returned by [Store.Lookup] for a device that has no record.
var ErrNotFound = errors.New("presence: no record of the device")

// Lookup returns device's current record, [ErrNotFound] if it has none,
// [ErrInvalidDeviceID] for a bad id, or the engine's error.
func (st *Store) Lookup(ctx context.Context, device string) (Record, error) {
	if !ValidDeviceID(device) {
		return Record{}, ErrInvalidDeviceID
	}
	r, ok, err := st.get(ctx, device, EncodeKey(device))
	if err == nil && !ok {
		err = ErrNotFound
	}
	return r, err
}

// get returns the record under key, false if there is none (or the value
// is not a record).
func (st *Store) get(ctx context.Context, device, key string) (Record, bool, error) {
	e, err := st.devices.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return Record{}, false, nil
	}
	if err != nil {
		return Record{}, false, err
	}
	r, ok := decodeRecord(device, e.Revision(), e.Value())
	return r, ok, nil
}

// Watch calls fn with the current record of every device, then replayed
// with how many that was, then fn with every record written afterwards,
// until ctx ends or the engine fails the watch; it returns ctx's error or
// the engine's. Calls come from one goroutine, in revision order; per
// device the revisions strictly increase. A watch that lags (or that the
// engine restarts after a stall) may skip intermediate records of a
// device, never its latest. replayed may be nil. Watch keeps the last
// revision of each device it has seen, a few dozen bytes per device.
func (st *Store) Watch(ctx context.Context, fn func(Record), replayed func(n int)) error {
	seen := make(map[string]uint64) // key → last revision given to fn
	first := true
	for {
		err := st.watchOnce(ctx, seen, fn, func(n int) {
			if first && replayed != nil {
				replayed(n)
			}
			first = false
		})
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if !errors.Is(err, errWatchEnded) {
			return err
		}
		// The engine ended the watcher (its connection closed for good):
		// start another; seen skips what was given already.
	}
}

// watchOnce runs one engine watcher for Watch.
func (st *Store) watchOnce(ctx context.Context, seen map[string]uint64, fn func(Record), replayed func(n int)) error {
	w, err := st.devices.WatchAll(ctx, jetstream.IgnoreDeletes())
	if err != nil {
		return err
	}
	defer stopWatch(w)
	n, replaying := 0, true
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case e, ok := <-w.Updates():
			if !ok {
				return errWatchEnded
			}
			if e == nil {
				if replaying {
					replayed(n)
				}
				replaying = false
				continue
			}
			if e.Revision() <= seen[e.Key()] {
				continue
			}
			device, ok := DecodeKey(e.Key())
			if !ok {
				continue
			}
			r, ok := decodeRecord(device, e.Revision(), e.Value())
			if !ok {
				continue
			}
			seen[e.Key()] = e.Revision()
			if replaying {
				n++
			}
			fn(r)
		}
	}
}

var errWatchEnded = errors.New("presence: the engine ended the watch")

// stopWatch stops w and takes what its delivery goroutine still holds: a
// watcher left with a full channel would block that goroutine for good.
// The channel is closed once the goroutine has ended.
func stopWatch(w jetstream.KeyWatcher) {
	_ = w.Stop()
	for range w.Updates() {
	}
}

// scanRecords returns the device records the bucket holds now that keep
// accepts, or errStalled if the engine sends nothing for stall (0: no
// bound). A scan reads every record of the fleet; keep lets it hold only
// those its caller acts on.
func (st *Store) scanRecords(ctx context.Context, stall time.Duration, keep func(Record) bool) ([]Record, error) {
	var out []Record
	err := scan(ctx, st.devices, stall, func(e jetstream.KeyValueEntry) {
		if r, ok := keptRecord(e.Key(), e.Revision(), e.Value(), keep); ok {
			out = append(out, r)
		}
	})
	return out, err
}

// keptRecord returns the record under key at revision rev from value, and
// false if it is not a record or keep refuses it. The key is decoded
// last, for the records kept only. keep takes the record by value: a
// pointer would move every record scanned to the heap.
func keptRecord(key string, rev uint64, value []byte, keep func(Record) bool) (Record, bool) {
	r, ok := decodeRecord("", rev, value)
	if !ok || !keep(r) {
		return Record{}, false
	}
	if r.Device, ok = DecodeKey(key); !ok {
		return Record{}, false
	}
	return r, true
}

// liveNodes returns the epoch of every node that holds a lease now, or
// errStalled if the engine sends nothing for stall (0: no bound).
func (st *Store) liveNodes(ctx context.Context, stall time.Duration) (map[string]string, error) {
	live := make(map[string]string)
	err := scan(ctx, st.nodes, stall, func(e jetstream.KeyValueEntry) {
		if l, ok := decodeLease(e.Value()); ok {
			live[e.Key()] = l.Epoch
		}
	})
	return live, err
}

// scan calls fn with the latest entry of every live key of kv. It fails
// with errStalled when no entry comes for stall (0: no bound): a scan of
// many keys takes as long as it takes, while the engine keeps sending.
func scan(ctx context.Context, kv jetstream.KeyValue, stall time.Duration, fn func(jetstream.KeyValueEntry)) error {
	w, err := kv.WatchAll(ctx, jetstream.IgnoreDeletes())
	if err != nil {
		return err
	}
	defer stopWatch(w)
	var stalled <-chan time.Time
	var t *time.Timer
	if stall > 0 {
		t = time.NewTimer(stall)
		defer t.Stop()
		stalled = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-stalled:
			return errStalled
		case e, ok := <-w.Updates():
			if !ok {
				return errWatchEnded
			}
			if e == nil {
				return nil
			}
			fn(e)
			if t != nil {
				t.Reset(stall)
			}
		}
	}
}

// errStalled is returned by a scan or a reap when the engine answered
// nothing for a lease.
var errStalled = errors.New("presence: the engine answered nothing for a lease")

// Prune removes the records of devices recorded offline at a time (by the
// writer's clock, [Record].At) earlier than before, and reports how many it
// removed; on an error of the engine it returns that error and how many it
// had removed. Each removal compares the revision it read, so a device
// that comes online meanwhile keeps its record. A pruned device that
// connects again gets a new record.
func (st *Store) Prune(ctx context.Context, before time.Time) (int, error) {
	recs, err := st.scanRecords(ctx, 0, func(r Record) bool {
		return r.State == Offline && r.At.Before(before)
	})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, r := range recs {
		err := st.devices.Purge(ctx, EncodeKey(r.Device), jetstream.LastRevision(r.Rev))
		if isConflict(err) {
			continue
		}
		if err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// isConflict reports whether err is a failed compare-and-set.
func isConflict(err error) bool {
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) {
		return false
	}
	return apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant
}
