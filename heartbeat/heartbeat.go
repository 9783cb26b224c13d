// Package heartbeat declares keys dead when they fall silent: the keyed
// timeout every IoT gateway and every MQTT broker needs.
//
// A Monitor watches keys (device IDs, connections, client pointers). Beat
// starts watching a key or, if it is watched, pushes its deadline out to now
// plus its timeout; Refresh only pushes out the deadline of a key already
// watched. When a key's deadline passes with no Beat, the Monitor
// calls expired(key) once, on the scheduler's pool, and stops watching it.
//
//	m, _ := heartbeat.New(s, 90*time.Second, func(dev uint64) { disconnect(dev) })
//	m.Beat(dev)  // on every packet from dev
//	m.Forget(dev) // when dev disconnects cleanly
//
// A Monitor holds one scheduler task per watched key, and its key index is
// sharded, so Beats of different keys on different cores do not contend. A
// Beat on a watched key allocates nothing and costs one hash-table lookup
// plus Scheduler.Reset. A watched uint64 key costs about 90 bytes in all: its
// task, its heap entry and its place in the key index.
package heartbeat

import (
	"errors"
	"hash/maphash"
	"sync"
	"time"

	"github.com/go-schedule/schedule"
)

var (
	// ErrNilScheduler is returned by New for a nil scheduler.
	ErrNilScheduler = errors.New("heartbeat: nil scheduler")
	// ErrInvalidTimeout is returned by New and Watch for a timeout of zero
	// or less.
	ErrInvalidTimeout = errors.New("heartbeat: timeout must be positive")
	// ErrNilExpired is returned by New for a nil expired function.
	ErrNilExpired = errors.New("heartbeat: nil expired function")
)

// shardCount is the number of independently locked parts of the key index.
const shardCount = 256

// Monitor watches keys for silence. Its methods are safe for concurrent
// use, including from inside expired. It starts no goroutine of its own:
// it lives as long as its scheduler, and Shutdown of the scheduler ends
// every watch without calling expired.
type Monitor[K comparable] struct {
	s        *schedule.Scheduler
	timeout  time.Duration
	expired  func(K)
	seed     maphash.Seed
	fire     func(schedule.TaskID, any) // m.onDeadline, made once
	shards   [shardCount]shard[K]
	expiries counter // calls of expired (stats.go)
}

// shard is one part of the key index; mu guards it. A key is watched
// exactly while it is in ids or in own, never both: ids holds the timeout
// task of every key watched with the Monitor's timeout, own that task and
// the timeout of every key watched with a timeout of its own (Watch), so
// that finding a key and its timeout is one probe either way.
type shard[K comparable] struct {
	mu  sync.Mutex
	ids index[K, schedule.TaskID]
	own index[K, ownWatch]
	_   [64]byte // keeps neighbouring shards' locks off one cache line
}

// ownWatch is the watch of a key with a timeout of its own.
type ownWatch struct {
	id      schedule.TaskID
	timeout time.Duration
}

// watch returns key's timeout task and its timeout, and whether key is
// watched. h is key's hash; sh.mu must be held.
func (m *Monitor[K]) watch(sh *shard[K], h uint64, key K) (schedule.TaskID, time.Duration, bool) {
	if id, ok := sh.ids.get(h, key); ok {
		return id, m.timeout, true
	}
	if w, ok := sh.own.get(h, key); ok {
		return w.id, w.timeout, true
	}
	return 0, 0, false
}

// New returns a Monitor that calls expired(key) when key has been watched
// and gone timeout without a Beat. Jobs run on s, which must outlive the
// Monitor's use. It returns ErrNilScheduler, ErrInvalidTimeout or
// ErrNilExpired for bad arguments.
func New[K comparable](s *schedule.Scheduler, timeout time.Duration, expired func(key K)) (*Monitor[K], error) {
	switch {
	case s == nil:
		return nil, ErrNilScheduler
	case timeout <= 0:
		return nil, ErrInvalidTimeout
	case expired == nil:
		return nil, ErrNilExpired
	}
	m := &Monitor[K]{s: s, timeout: timeout, expired: expired, seed: maphash.MakeSeed()}
	m.fire = m.onDeadline
	return m, nil
}

// shard returns key's shard and key's hash, which its index takes too.
func (m *Monitor[K]) shard(key K) (*shard[K], uint64) {
	h := maphash.Comparable(m.seed, key)
	return &m.shards[h%shardCount], h
}

// Beat starts watching key with the Monitor's timeout or, if key is
// watched, moves its deadline to now plus its timeout (its own, if Watch
// gave it one).
//
// A Beat that comes after key's deadline has passed but before expired has
// run for it wins: key stays watched with a fresh deadline, and expired is
// not called for the deadline that passed. Beat returns schedule.ErrShutdown
// once the scheduler is shut down.
func (m *Monitor[K]) Beat(key K) error {
	sh, h := m.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	id, timeout, ok := m.watch(sh, h, key)
	if !ok {
		timeout = m.timeout
	}
	return m.arm(sh, h, key, id, timeout, timeout)
}

// Refresh moves the deadline of a watched key to now plus its timeout, as
// Beat does, and reports whether key was watched. Unlike Beat it never
// starts a watch: for a key that is not watched (never watched, forgotten,
// or expired and reported) it does nothing and returns false. A server
// calls it on every packet and starts watches itself, so that a packet
// handled after its connection's Forget cannot bring the watch back.
//
// Like Beat, a Refresh that comes after key's deadline has passed but before
// expired has run for it wins: key stays watched with a fresh deadline.
// Refresh returns false once the scheduler is shut down.
func (m *Monitor[K]) Refresh(key K) bool {
	sh, h := m.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	id, timeout, ok := m.watch(sh, h, key)
	return ok && m.arm(sh, h, key, id, timeout, timeout) == nil
}

// Watch is Beat with a timeout of key's own, which later Beats and
// Refreshes keep until the watch ends (expired or forgotten). It returns
// ErrInvalidTimeout for a timeout of zero or less.
func (m *Monitor[K]) Watch(key K, timeout time.Duration) error {
	if timeout <= 0 {
		return ErrInvalidTimeout
	}
	sh, h := m.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	id, was, _ := m.watch(sh, h, key)
	return m.arm(sh, h, key, id, was, timeout)
}

// arm moves key's deadline to timeout from now. id and was are key's
// current task and timeout (id 0: not watched); when the task is no longer
// pending, or there is none, it starts a new one. It records key in ids or
// in own, whichever timeout calls for. h is key's hash; sh.mu must be held.
func (m *Monitor[K]) arm(sh *shard[K], h uint64, key K, id schedule.TaskID, was, timeout time.Duration) error {
	if id != 0 && m.s.Reset(id, timeout) {
		if was == timeout {
			return nil // recorded as it is
		}
	} else {
		// Not watched, or its deadline has passed and its expiry is on its
		// way: that expiry will find another ID and do nothing.
		var err error
		if id, err = m.s.ScheduleOneWith(m.fire, key, timeout); err != nil {
			m.unwatch(sh, h, key)
			return err
		}
	}
	if timeout == m.timeout {
		sh.own.delete(m.seed, h, key)
		sh.ids.set(m.seed, h, key, id)
	} else {
		sh.ids.delete(m.seed, h, key)
		sh.own.set(m.seed, h, key, ownWatch{id, timeout})
	}
	return nil
}

// unwatch ends key's watch. h is key's hash; sh.mu must be held.
func (m *Monitor[K]) unwatch(sh *shard[K], h uint64, key K) {
	if !sh.ids.delete(m.seed, h, key) {
		sh.own.delete(m.seed, h, key)
	}
}

// onDeadline is the job of every timeout task: it ends key's watch and
// calls expired, unless a Beat or a Forget got there first.
func (m *Monitor[K]) onDeadline(id schedule.TaskID, arg any) {
	key := arg.(K)
	sh, h := m.shard(key)
	sh.mu.Lock()
	if cur, _, ok := m.watch(sh, h, key); !ok || cur != id {
		sh.mu.Unlock()
		return
	}
	m.unwatch(sh, h, key)
	sh.mu.Unlock()
	m.expiries.add()
	m.expired(key)
}

// Forget stops watching key. It reports whether key was watched: true
// means expired will not be called for this watch, even when its deadline
// has just passed. Forget of an unknown key, and any Forget once the
// scheduler is shut down (which ended every watch), returns false.
func (m *Monitor[K]) Forget(key K) bool {
	sh, h := m.shard(key)
	sh.mu.Lock()
	id, _, ok := m.watch(sh, h, key)
	if ok {
		m.unwatch(sh, h, key)
	}
	sh.mu.Unlock()
	if m.s.IsShutdown() {
		return false
	}
	if ok {
		m.s.CancelTask(id) // false when the expiry is already on its way; it will do nothing
	}
	return ok
}

// Len returns the number of keys watched now; 0 once the scheduler is shut
// down.
func (m *Monitor[K]) Len() int {
	if m.s.IsShutdown() {
		return 0
	}
	n := 0
	for i := range m.shards {
		sh := &m.shards[i]
		sh.mu.Lock()
		n += sh.ids.n + sh.own.n
		sh.mu.Unlock()
	}
	return n
}
