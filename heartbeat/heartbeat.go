// Package heartbeat declares keys dead when they fall silent: the keyed
// timeout every IoT gateway and every MQTT broker needs.
//
// A [Monitor] watches keys (device IDs, connections, client pointers).
// [Monitor.Beat] starts watching a key or, if it is watched, pushes its
// deadline out to now plus its timeout; [Monitor.Refresh] only pushes out
// the deadline of a key already watched; [Monitor.Watch] gives a key a
// timeout of its own, and [Monitor.Forget] stops watching it. When a key's
// deadline passes with no Beat or Refresh, the Monitor calls expired(key)
// once, on the scheduler's pool, and stops watching it.
//
//	m, _ := heartbeat.New(s, 90*time.Second, func(dev uint64) { disconnect(dev) })
//	m.Beat(dev)  // on every packet from dev
//	m.Forget(dev) // when dev disconnects cleanly
//
// # Return values
//
// One rule, the scheduler's own ([schedule.Scheduler.ScheduleOne] returns
// an error, [schedule.Scheduler.Reset] and [schedule.Scheduler.CancelTask] a
// bool): a call that starts a watch returns an error, a call
// that acts on a watch that may exist returns whether there was one.
//
//   - Beat and Watch start a watch when there is none, which can fail: they
//     return nil, or [ErrInvalidTimeout], [ErrClosed], [schedule.ErrShutdown]
//     or [schedule.ErrTooManyTasks]. Bad input is reported first.
//   - Refresh, Forget and Deadline never start one: they report whether key
//     was watched, and so had its deadline moved, stopped or read. After
//     Close or the scheduler's Shutdown no key is watched, so they report
//     false. A Refresh that cannot re-arm a watch ends it and reports false.
//
// # Close
//
// [Monitor.Close] ends the Monitor's watches and leaves the scheduler
// running, for a Monitor whose user (a broker, a listener) stops before
// the program does. The expired function is not called for any watch it
// ends, nor for a deadline that passed before Close but whose expiry had
// not yet started (waiting for a worker on the scheduler's pool): that
// expiry finds the Monitor closed and does nothing. An expired call
// already under way runs to its end; Close does not wait for it, so it may
// be called from inside expired.
//
// # The time of an expiry
//
// [NewWithDeadline] gives expired the deadline that passed (last Beat plus
// timeout), however late the pool ran the call; [Monitor.Deadline] gives
// the current deadline of a watched key, from which its last Beat is the
// deadline minus its timeout.
//
// # Cost
//
// A Monitor holds one scheduler task per watched key. Beats of different
// keys from different goroutines seldom wait for each other: the keys are
// spread over 256 locks. A Beat on a watched key allocates nothing and
// costs one hash-table lookup plus a [schedule.Scheduler.Reset]. A watched
// uint64 key costs about 90 bytes of heap at a million keys, about 100 at
// 100,000, its scheduler task included. An empty Monitor takes about
// 48 KB, which dominates below a few thousand keys
// (BenchmarkMemoryPerDevice; docs/production.md has the figures).
package heartbeat

import (
	"errors"
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-schedule/schedule"
)

var (
	// ErrNilScheduler is returned by [New] and [NewWithDeadline] for a nil
	// scheduler.
	ErrNilScheduler = errors.New("heartbeat: nil scheduler")
	// ErrInvalidTimeout is returned by [New], [NewWithDeadline] and
	// [Monitor.Watch] for a timeout of zero or less.
	ErrInvalidTimeout = errors.New("heartbeat: timeout must be positive")
	// ErrNilExpired is returned by [New] and [NewWithDeadline] for a nil
	// expired function.
	ErrNilExpired = errors.New("heartbeat: nil expired function")
	// ErrClosed is returned by [Monitor.Beat] and [Monitor.Watch] after
	// [Monitor.Close].
	ErrClosed = errors.New("heartbeat: monitor closed")
)

// shardCount is the number of independently locked parts of the key index.
const shardCount = 256

// Monitor watches keys for silence. Its methods are safe for concurrent
// use, including from inside expired. It starts no goroutine of its own:
// it lives until [Monitor.Close] or until its scheduler is shut down
// ([schedule.Scheduler.Shutdown]), and either ends every watch without
// calling expired for it.
type Monitor[K comparable] struct {
	s         *schedule.Scheduler
	timeout   time.Duration
	expired   func(K)            // from New; nil with NewWithDeadline
	expiredAt func(K, time.Time) // from NewWithDeadline; nil with New
	seed      maphash.Seed
	fire      func(schedule.TaskID, any) // m.onDeadline, made once
	closed    atomic.Bool                // set by Close, before it empties the shards
	shards    [shardCount]shard[K]
	// expiries counts calls of expired (stats.go). It comes after the
	// shards so that its updates, many at once when a partition silences
	// many keys, do not share a cache line with the fields every Beat reads.
	expiries counter
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
// and gone timeout without a Beat or a Refresh. The calls run on s's pool;
// once s is shut down, the Monitor watches no key and starts no watch. It
// returns [ErrNilScheduler], [ErrInvalidTimeout] or [ErrNilExpired] for bad
// arguments.
func New[K comparable](s *schedule.Scheduler, timeout time.Duration, expired func(key K)) (*Monitor[K], error) {
	m, err := newMonitor[K](s, timeout, expired == nil)
	if err != nil {
		return nil, err
	}
	m.expired = expired
	return m, nil
}

// NewWithDeadline is New for an expired function that also receives the
// deadline that passed: key's last Beat (or Refresh, or Watch) plus its
// timeout. The call may come later than that instant when every worker of
// the scheduler's pool is busy; [time.Since](deadline) is then how late. It
// returns the errors [New] returns.
func NewWithDeadline[K comparable](s *schedule.Scheduler, timeout time.Duration, expired func(key K, deadline time.Time)) (*Monitor[K], error) {
	m, err := newMonitor[K](s, timeout, expired == nil)
	if err != nil {
		return nil, err
	}
	m.expiredAt = expired
	return m, nil
}

// newMonitor checks New's arguments (noExpired: the expired function is
// nil) and returns a Monitor without its expired function.
func newMonitor[K comparable](s *schedule.Scheduler, timeout time.Duration, noExpired bool) (*Monitor[K], error) {
	switch {
	case s == nil:
		return nil, ErrNilScheduler
	case timeout <= 0:
		return nil, ErrInvalidTimeout
	case noExpired:
		return nil, ErrNilExpired
	}
	m := &Monitor[K]{s: s, timeout: timeout, seed: maphash.MakeSeed()}
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
// A Beat that comes after key's deadline has passed but before its expiry
// has started (while it waits for a worker of the scheduler's pool) wins:
// key stays watched with a fresh deadline, and expired is not called for
// the deadline that passed. Beat returns [ErrClosed] after
// Close and [schedule.ErrShutdown] once the scheduler is shut down. When
// key's deadline has passed, or key is not watched, Beat needs a new
// scheduler task, and returns [schedule.ErrTooManyTasks] when the
// scheduler has no room for one; key is then not watched.
func (m *Monitor[K]) Beat(key K) error {
	return m.beat(key, 0)
}

// Refresh moves the deadline of a watched key to now plus its timeout, as
// Beat does, and reports whether key was watched. Unlike Beat it never
// starts a watch: for a key that is not watched (never watched, forgotten,
// or expired and reported) it does nothing and returns false. A server
// calls it on every packet and starts watches itself, so that a packet
// handled after its connection's Forget cannot bring the watch back.
//
// Like Beat, a Refresh that comes after key's deadline has passed but
// before its expiry has started wins: key stays watched with a fresh
// deadline.
// Refresh returns false after Close and once the scheduler is shut down;
// when key's deadline had passed and no new task could be scheduled for it
// ([schedule.ErrTooManyTasks]), the watch ends and Refresh returns false.
func (m *Monitor[K]) Refresh(key K) bool {
	sh, h := m.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	id, timeout, ok := m.watch(sh, h, key)
	return ok && m.arm(sh, h, key, id, timeout, timeout) == nil
}

// Watch is Beat with a timeout of key's own, which later Beats and
// Refreshes keep until the watch ends (expired or forgotten). It returns
// [ErrInvalidTimeout] for a timeout of zero or less, and otherwise the
// errors [Monitor.Beat] returns.
func (m *Monitor[K]) Watch(key K, timeout time.Duration) error {
	if timeout <= 0 {
		return ErrInvalidTimeout
	}
	return m.beat(key, timeout)
}

// beat is Beat with timeout 0 and Watch with a timeout of key's own: 0
// keeps key's timeout, or gives a key not watched the Monitor's.
func (m *Monitor[K]) beat(key K, timeout time.Duration) error {
	sh, h := m.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if m.closed.Load() {
		return ErrClosed
	}
	id, was, ok := m.watch(sh, h, key)
	if timeout == 0 {
		timeout = was
		if !ok {
			timeout = m.timeout
		}
	}
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
// calls expired, unless a Beat, a Forget or Close got there first.
func (m *Monitor[K]) onDeadline(id schedule.TaskID, arg any) {
	key := arg.(K)
	sh, h := m.shard(key)
	sh.mu.Lock()
	// Close empties a shard after it sets closed: a key found here with
	// closed set is one Close has not reached yet.
	if cur, _, ok := m.watch(sh, h, key); !ok || cur != id || m.closed.Load() {
		sh.mu.Unlock()
		return
	}
	m.unwatch(sh, h, key)
	sh.mu.Unlock()
	m.expiries.add()
	if m.expired != nil {
		m.expired(key)
		return
	}
	// The task is this job's: it stays due, not finished, until the job
	// returns, so Deadline still has the instant it came due.
	deadline, _ := m.s.Deadline(id)
	m.expiredAt(key, deadline)
}

// Forget stops watching key. It reports whether key was watched: true
// means expired will not be called for this watch, even when its deadline
// has just passed. Forget of an unknown key, and any Forget after Close or
// once the scheduler is shut down (either ended every watch), returns
// false.
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

// Deadline returns the instant at which key's watch expires unless a Beat
// or a Refresh comes first: its last Beat, Refresh or Watch plus its
// timeout. The instant may have passed when the expiry waits for a worker.
// It reports false when key is not watched, after Close, and once the
// scheduler is shut down.
func (m *Monitor[K]) Deadline(key K) (time.Time, bool) {
	sh, h := m.shard(key)
	sh.mu.Lock()
	id, _, ok := m.watch(sh, h, key)
	sh.mu.Unlock()
	if !ok {
		return time.Time{}, false
	}
	// A task ID is never reused, so reading it outside the lock is safe: if
	// the watch ended meanwhile by Forget or Close, its task is cancelled and
	// this reports false; if it expired, its job is under way and this
	// reports the deadline that passed, as it does for a key whose expiry
	// waits for a worker.
	return m.s.Deadline(id)
}

// Close stops every watch of the Monitor and leaves its scheduler running.
// The expired function is not called for any of them, nor for a deadline
// that passed before Close whose expiry had not started; an expired call
// already under way runs to its end, and Close does not wait for it. Close
// cancels the Monitor's scheduler tasks, so that the scheduler keeps no
// reference to the Monitor or to any key, but for an expiry job already
// under way, until it returns.
//
// After Close, Beat and Watch return ErrClosed, Refresh, Forget and
// Deadline report false, and Len returns 0. Close is idempotent and safe
// to call concurrently with any method, from inside expired too.
func (m *Monitor[K]) Close() {
	if m.closed.Swap(true) {
		return
	}
	for i := range m.shards {
		sh := &m.shards[i]
		sh.mu.Lock()
		sh.ids.each(func(id schedule.TaskID) { m.s.CancelTask(id) })
		sh.own.each(func(w ownWatch) { m.s.CancelTask(w.id) })
		sh.ids, sh.own = index[K, schedule.TaskID]{}, index[K, ownWatch]{}
		sh.mu.Unlock()
	}
}

// Len returns the number of keys watched now; 0 after Close and once the
// scheduler is shut down.
func (m *Monitor[K]) Len() int {
	if m.s.IsShutdown() || m.closed.Load() {
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
