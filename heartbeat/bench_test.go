package heartbeat_test

import (
	"flag"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-schedule/schedule/heartbeat"
	"github.com/go-schedule/schedule/internal/schedtest"
)

// The benchmarks watch many keys with a Monitor and, beside it in the same
// run, with what a gateway would write without this package: a
// mutex-guarded map of runtime timers made by time.AfterFunc, where Beat is
// a lookup and Timer.Reset. Each Monitor row reports its ns/op as a ratio to
// the map+timer row (x-maptimer), and each fixture the heap bytes per
// watched key, key index included (B/key):
//
//	go test -run '^$' -bench . -benchtime 2000000x -count 3 ./heartbeat
//
// Watching a million keys takes two to three seconds per fixture. A run of
// fewer than 1,000 iterations per benchmark (CI's -benchtime 1x) measures
// nothing worth that, so it watches 1,000 keys; -heartbeat.keys sets the
// number otherwise (after the package, which go test needs to come first
// for a flag of the test binary):
//
//	go test ./heartbeat -run '^$' -bench . -heartbeat.keys 100000
//
// The parallel rows beat from every P at once: the baseline's one mutex is
// a single hot lock, the Monitor's key index has 256 locks and the
// scheduler's Reset takes the lock of the task alone.

var benchKeys = flag.Int("heartbeat.keys", 1_000_000, "number of keys the heartbeat benchmarks watch")

// benchSize returns how many keys to watch: -heartbeat.keys, or at most
// 1,000 when -benchtime asks for fewer than 1,000 iterations.
func benchSize() int {
	n := *benchKeys
	if f := flag.Lookup("test.benchtime"); f != nil {
		if v, ok := strings.CutSuffix(f.Value.String(), "x"); ok {
			if iters, err := strconv.Atoi(v); err == nil && iters < 1000 {
				n = min(n, 1000)
			}
		}
	}
	return n
}

// benchTimeout is long enough that no key expires during a benchmark.
const benchTimeout = time.Hour

// rng is a xorshift generator: cheap enough not to show in the figures.
type rng uint64

func (r *rng) intn(n int) int {
	*r ^= *r << 13
	*r ^= *r >> 7
	*r ^= *r << 17
	return int(uint64(*r) % uint64(n))
}

func uint64Keys(n int) []uint64 {
	keys := make([]uint64, n)
	for i := range keys {
		keys[i] = uint64(i) * 0x9e3779b97f4a7c15 // spread over the whole range
	}
	return keys
}

func stringKeys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("device-%08d", i)
	}
	return keys
}

// heapBytes returns the live heap after a full collection.
func heapBytes() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// timerMonitor is the baseline: one runtime timer per key, in a map behind
// one mutex.
type timerMonitor[K comparable] struct {
	mu      sync.Mutex
	timers  map[K]*time.Timer
	timeout time.Duration
	expired func(K)
}

func newTimerMonitor[K comparable](timeout time.Duration, expired func(K)) *timerMonitor[K] {
	return &timerMonitor[K]{timers: make(map[K]*time.Timer), timeout: timeout, expired: expired}
}

func (m *timerMonitor[K]) Beat(key K) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if t, ok := m.timers[key]; ok {
		t.Reset(m.timeout)
		return
	}
	var t *time.Timer
	t = time.AfterFunc(m.timeout, func() {
		m.mu.Lock()
		if m.timers[key] != t { // re-armed or replaced meanwhile
			m.mu.Unlock()
			return
		}
		delete(m.timers, key)
		m.mu.Unlock()
		m.expired(key)
	})
	m.timers[key] = t
}

func (m *timerMonitor[K]) stop() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, t := range m.timers {
		t.Stop()
		delete(m.timers, k)
	}
}

// beater is what the benchmarks drive: a Monitor or the baseline.
type beater[K comparable] interface{ Beat(K) }

type monitorBeater[K comparable] struct{ m *heartbeat.Monitor[K] }

func (b monitorBeater[K]) Beat(key K) {
	if err := b.m.Beat(key); err != nil {
		panic(err)
	}
}

// fixture builds a beater watching every key and reports the heap bytes
// that cost per key, the keys themselves not included.
type fixture[K comparable] struct {
	name  string
	build func(b *testing.B, keys []K) beater[K]
}

func fixtures[K comparable]() []fixture[K] {
	fs := []fixture[K]{{"maptimer", func(b *testing.B, keys []K) beater[K] {
		m := newTimerMonitor(benchTimeout, func(K) {})
		b.Cleanup(m.stop)
		for _, k := range keys {
			m.Beat(k)
		}
		return m
	}}}
	// Each strategy watches the keys with the Monitor's timeout and, in the
	// -own rows, each with a timeout of its own (Watch), which a Beat finds
	// in the same probe of the key index.
	for _, c := range []struct {
		st  schedtest.Strategy
		own bool
	}{{schedtest.Strategies[0], false}, {schedtest.Strategies[1], false}, {schedtest.Strategies[0], true}} {
		st, name := c.st, "monitor-"+c.st.String()
		if c.own {
			name += "-own"
		}
		fs = append(fs, fixture[K]{name, func(b *testing.B, keys []K) beater[K] {
			s, err := st.New(runtime.GOMAXPROCS(0))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { schedtest.Shutdown(b, s) })
			m, err := heartbeat.New(s, benchTimeout, func(K) {})
			if err != nil {
				b.Fatal(err)
			}
			for _, k := range keys {
				err := m.Beat(k)
				if c.own {
					err = m.Watch(k, 2*benchTimeout)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
			// Wait for the owner goroutine to put every deadline in its heap,
			// so that the heap counts and the inbox is drained.
			for deadline := time.Now().Add(time.Minute); s.Stats().HeapEntries < len(keys); {
				if time.Now().After(deadline) {
					b.Fatalf("the heap holds %d of %d deadlines", s.Stats().HeapEntries, len(keys))
				}
				time.Sleep(time.Millisecond)
			}
			return monitorBeater[K]{m}
		}})
	}
	return fs
}

// BenchmarkBeat beats random keys of many watched ones: one goroutine
// (serial), and every P at once (parallel), where a single hot lock would
// show. The Monitor rows report their ns/op as a ratio to the map+timer
// row of the same run.
func BenchmarkBeat(b *testing.B) {
	n := benchSize()
	b.Run(fmt.Sprintf("keys=%d/uint64", n), func(b *testing.B) { benchBeat(b, uint64Keys(n)) })
	b.Run(fmt.Sprintf("keys=%d/string", n), func(b *testing.B) { benchBeat(b, stringKeys(n)) })
}

func benchBeat[K comparable](b *testing.B, keys []K) {
	var baseline struct{ serial, parallel float64 }
	for _, f := range fixtures[K]() {
		b.Run(f.name, func(b *testing.B) {
			before := heapBytes()
			w := f.build(b, keys)
			perKey := float64(heapBytes()-before) / float64(len(keys))

			b.Run("serial", func(b *testing.B) {
				b.ReportAllocs()
				r := rng(1)
				for b.Loop() {
					w.Beat(keys[r.intn(len(keys))])
				}
				ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
				if f.name == "maptimer" {
					baseline.serial = ns
				} else if baseline.serial > 0 {
					b.ReportMetric(ns/baseline.serial, "x-maptimer")
				}
				b.ReportMetric(perKey, "B/key")
			})
			b.Run("parallel", func(b *testing.B) {
				b.ReportAllocs()
				var seed atomic.Uint64
				b.RunParallel(func(pb *testing.PB) {
					r := rng(seed.Add(0x9e3779b97f4a7c15))
					for pb.Next() {
						w.Beat(keys[r.intn(len(keys))])
					}
				})
				ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
				if f.name == "maptimer" {
					baseline.parallel = ns
				} else if baseline.parallel > 0 {
					b.ReportMetric(ns/baseline.parallel, "x-maptimer")
				}
			})
		})
	}
}
