package main

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-schedule/schedule"
	"github.com/go-schedule/schedule/eagercancel"
	"github.com/go-schedule/schedule/heartbeat"
	"github.com/go-schedule/schedule/lazycancel"
	"github.com/zeromicro/go-zero/core/collection"
)

// keyedMonitor is the adapter of the keyed heartbeat workloads: timeouts
// addressed by the caller's own key (a device ID), not by a dense index.
// Every implementation keeps its own key index (the Monitor's sharded
// maps, a map of *time.Timer, go-zero's internal map), so that the memory
// figures compare like with like.
//
// Watch and Beat may be called concurrently, also with expiries running.
type keyedMonitor[K comparable] interface {
	// Watch starts watching key with timeout d, or moves a watched key's
	// deadline to d from now and makes d its timeout.
	Watch(key K, d time.Duration) error
	// Beat moves the deadline of watched key to now plus its timeout d.
	// Implementations that remember each key's timeout (the Monitor)
	// ignore d, which the workload always passes equal to it.
	Beat(key K, d time.Duration) error
	// Settle waits until every call so far has been applied, live being
	// the number of keys that should then be watched.
	Settle(live int) error
	// Close stops the implementation; no expiry is reported after it.
	Close()
}

// keyedCalls names, per implementation in the keyed comparison, the call
// that a Beat on a watched key makes.
var keyedCalls = map[string]string{
	"runtime":     "sync.Mutex + map[K]*time.Timer, Timer.Reset (AfterFunc to watch)",
	"lazycancel":  "heartbeat.Monitor.Beat",
	"eagercancel": "heartbeat.Monitor.Beat",
	"gozero":      "MoveTimer (SetTimer to watch)",
	"gozero-1s":   "MoveTimer (SetTimer to watch)",
}

// errNoKeyed is returned for implementations outside the keyed comparison.
var errNoKeyed = errors.New("not in the keyed comparison")

// newKeyed builds implementation name as a keyed monitor whose default
// timeout is timeout and that calls expired(key) when a key times out.
func newKeyed[K comparable](name string, workers int, timeout time.Duration, expired func(K)) (keyedMonitor[K], error) {
	switch name {
	case "runtime":
		return &keyedRuntime[K]{timers: make(map[K]*time.Timer), expired: expired}, nil
	case "lazycancel":
		return newKeyedMonitor(lazycancel.New, workers, timeout, expired)
	case "eagercancel":
		return newKeyedMonitor(eagercancel.New, workers, timeout, expired)
	case "gozero":
		return newKeyedGozero(gozeroTick, gozeroSlots, expired)
	case "gozero-1s":
		return newKeyedGozero(gozeroCoarse, gozeroCoarseN, expired)
	}
	return nil, fmt.Errorf("%s: %w", name, errNoKeyed)
}

// keyedHB adapts go-schedule's heartbeat.Monitor, whose key index is a
// sharded hash table from key to TaskID.
type keyedHB[K comparable] struct {
	m       *heartbeat.Monitor[K]
	sched   scheduleTimers // for Settle and Close
	timeout time.Duration
}

func newKeyedMonitor[K comparable](build func(int, ...schedule.Option) (*schedule.Scheduler, error),
	workers int, timeout time.Duration, expired func(K)) (keyedMonitor[K], error) {
	s, err := build(workers)
	if err != nil {
		return nil, err
	}
	m, err := heartbeat.New(s, timeout, expired)
	if err != nil {
		s.Shutdown()
		return nil, err
	}
	return &keyedHB[K]{m: m, sched: scheduleTimers{s: s}, timeout: timeout}, nil
}

func (k *keyedHB[K]) Watch(key K, d time.Duration) error {
	if d == k.timeout {
		return k.m.Beat(key)
	}
	return k.m.Watch(key, d)
}

func (k *keyedHB[K]) Beat(key K, _ time.Duration) error { return k.m.Beat(key) }
func (k *keyedHB[K]) Settle(live int) error             { return k.sched.Settle(live) }
func (k *keyedHB[K]) Close()                            { k.sched.Close() }

// keyedRuntime is the code users write without a library: one mutex over
// a map from key to *time.Timer, time.AfterFunc to watch a key and
// Timer.Reset to beat it. The expiry checks that the map still holds its
// own timer, so that a timer re-armed by a Beat that raced its firing
// does not report the key a second time.
type keyedRuntime[K comparable] struct {
	mu      sync.Mutex
	timers  map[K]*time.Timer
	expired func(K)
}

func (k *keyedRuntime[K]) Watch(key K, d time.Duration) error { return k.Beat(key, d) }

func (k *keyedRuntime[K]) Beat(key K, d time.Duration) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if t, ok := k.timers[key]; ok {
		t.Reset(d)
		return nil
	}
	var t *time.Timer
	t = time.AfterFunc(d, func() {
		k.mu.Lock()
		if k.timers[key] != t {
			k.mu.Unlock()
			return
		}
		delete(k.timers, key)
		k.mu.Unlock()
		k.expired(key)
	})
	k.timers[key] = t
	return nil
}

func (k *keyedRuntime[K]) Settle(int) error { return nil }

func (k *keyedRuntime[K]) Close() {
	k.mu.Lock()
	defer k.mu.Unlock()
	for key, t := range k.timers {
		t.Stop()
		delete(k.timers, key)
	}
}

// keyedGozero adapts go-zero's TimingWheel, which is keyed by the caller's
// key (as an interface value) and keeps its own key index; the value
// stored with each key is nil, the expiry needs only the key.
type keyedGozero[K comparable] struct {
	tw *collection.TimingWheel
}

func newKeyedGozero[K comparable](tick time.Duration, slots int, expired func(K)) (keyedMonitor[K], error) {
	tw, err := collection.NewTimingWheel(tick, slots, func(key, _ any) { expired(key.(K)) })
	if err != nil {
		return nil, err
	}
	return &keyedGozero[K]{tw: tw}, nil
}

func (k *keyedGozero[K]) Watch(key K, d time.Duration) error { return k.tw.SetTimer(key, nil, d) }
func (k *keyedGozero[K]) Beat(key K, d time.Duration) error  { return k.tw.MoveTimer(key, d) }
func (k *keyedGozero[K]) Settle(int) error                   { return nil }
func (k *keyedGozero[K]) Close()                             { k.tw.Stop() }
