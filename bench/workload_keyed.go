package main

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// The keyed heartbeat workloads: a timeout per device addressed by the
// device's own key, as an IoT gateway or an MQTT broker keeps them. Unlike
// the other heartbeat workloads, which address timers by a dense index,
// each implementation here keeps its own key index, and its bytes are
// counted.

// keyedWorkloads are the keyed workloads, one per key type; "-workload
// keyed" selects both.
var keyedWorkloads = []string{"keyed-uint64", "keyed-string"}

// keyedGroup is the name that selects every keyed workload.
const keyedGroup = "keyed"

// Shape of the keyed workloads.
const (
	// keyedLong is the timeout of every key while Beats are timed: long
	// enough that none expires, and the same for all keys, as a Monitor
	// has one timeout.
	keyedLong = 10 * time.Minute
	// keyedShare: one key in keyedShare goes silent in the exactness
	// phase, and as many others keep beating with the same short timeout.
	keyedShare = 100
	// keyedBeatsPerTimeout is how often, per short timeout, the beating
	// keys beat.
	keyedBeatsPerTimeout = 5
	// keyedIDLen is the length of a string key: "dev-" and 16 hex digits.
	keyedIDLen = 20
)

// keyMul scrambles a key's index into a device ID (a bijection on
// uint64); keyMulInv undoes it.
const keyMul = 0x9E3779B97F4A7C15

var keyMulInv = func() uint64 {
	x := uint64(keyMul) // correct to 3 bits for an odd number
	for range 5 {
		x *= 2 - keyMul*x
	}
	return x
}()

func init() {
	columns := []column{
		{"ns_beat", "ns/Beat (wall)", "%.0f", true},
		{"cpu_ns_beat", "CPU ns/Beat", "%.0f", true},
		{"allocs_beat", "allocs/Beat", "%.2f", false},
		{"bytes_key", "bytes/watched key (incl. key index)", "%.0f", true},
		{"timeout_s", "short timeout s", "%.0f", false},
		{"silent", "silent keys", "%.0f", false},
		{"expired_once", "expired once", "%.0f", false},
		{"lost", "lost", "%.0f", false},
		{"duplicates", "duplicates", "%.0f", false},
		{"early", "early", "%.0f", false},
		{"kept_expired", "beating keys expired", "%.0f", false},
		{"max_early_ms", "max earliness ms", "%.1f", false},
		{"late_p50_ms", "lateness p50 ms", "%.1f", false},
		{"max_late_ms", "max lateness ms", "%.1f", false},
	}
	skip := func(im impl) string {
		if _, ok := keyedCalls[im.Name]; !ok {
			return "not in the keyed comparison (runtime, go-schedule and go-zero are)"
		}
		return ""
	}
	registerWorkload(workload{
		Name: "keyed-uint64", Title: "Keyed heartbeat, uint64 keys",
		What: keyedWhat, Columns: columns, Skip: skip,
		Run: func(im impl, c config, r *rand.Rand) (metrics, []string, error) {
			keys := make([]uint64, keyedTotal(c.KeyedKeys))
			for i := range keys {
				keys[i] = uint64(i) * keyMul
			}
			return runKeyed(im, c, r, keys, func(k uint64) int { return int(k * keyMulInv) })
		},
	})
	registerWorkload(workload{
		Name: "keyed-string", Title: "Keyed heartbeat, string keys",
		What: keyedWhat, Columns: columns, Skip: skip,
		Run: func(im impl, c config, r *rand.Rand) (metrics, []string, error) {
			// One backing string for all keys, so that each key costs the
			// index only its header and hash slot, as for a caller whose
			// device IDs already exist.
			total := keyedTotal(c.KeyedKeys)
			var b strings.Builder
			b.Grow(total * keyedIDLen)
			for i := range total {
				fmt.Fprintf(&b, "dev-%016x", uint64(i)*keyMul)
			}
			all := b.String()
			keys := make([]string, total)
			for i := range keys {
				keys[i] = all[i*keyedIDLen : (i+1)*keyedIDLen]
			}
			return runKeyed(im, c, r, keys, func(k string) int {
				v, err := strconv.ParseUint(k[4:], 16, 64)
				if err != nil {
					return -1
				}
				return int(v * keyMulInv)
			})
		},
	})
}

// keyedWhat describes the keyed workloads for the report.
const keyedWhat = "K device keys (uint64 IDs, or 20-byte strings such as MQTT client IDs) are watched with a " +
	"10-minute timeout, each implementation keeping its own key index: go-schedule's heartbeat.Monitor " +
	"(its sharded hash table from key to TaskID), a single sync.Mutex over a map[K]*time.Timer with " +
	"time.AfterFunc and Timer.Reset (the usual code without a library), and go-zero's TimingWheel " +
	"(SetTimer, then MoveTimer; its internal map is its index). Then B Beats on random watched keys " +
	"from one goroutine: ns/Beat is wall time over the batch (for go-schedule including waiting until " +
	"the scheduler has applied them all), CPU ns/Beat the process's user+system CPU over the same " +
	"window, allocs/Beat the heap allocations. Bytes per watched key are the live heap after GC once " +
	"every key is watched, minus the live heap before (implementation created, keys already in memory): " +
	"key index, timers and per-key records. Exactness: then K/100 fresh keys are watched with a short " +
	"timeout and go silent, and K/100 more are watched with the same timeout and keep beating five " +
	"times per timeout, while the K keys stay watched. Every silent key must expire exactly once " +
	"(lost: not within one tick + min(1 s, timeout/2) after its deadline; duplicates: further expiries), " +
	"not earlier than its deadline minus one tick (0 for exact implementations), and no other key may " +
	"expire. The short timeout is 3 s (1 s with -quick), and at least two ticks of a wheel. Lateness " +
	"within the window is reported, not judged."

// keyedTotal is the number of keys a run needs for n watched keys: n,
// then n/keyedShare fresh keys that go silent in the exactness phase and
// as many that keep beating.
func keyedTotal(n int) int { return n + 2*(n/keyedShare) }

// runKeyed measures one implementation on keys (c.KeyedKeys watched ones,
// then the exactness phase's fresh ones), index mapping a key back to its
// position in keys.
func runKeyed[K comparable](im impl, c config, r *rand.Rand, keys []K, index func(K) int) (metrics, []string, error) {
	n := c.KeyedKeys
	if n < keyedShare || len(keys) != keyedTotal(n) {
		return nil, nil, fmt.Errorf("keyed: need at least %d keys, have %d", keyedShare, n)
	}
	total := len(keys)
	beats := make([]int32, c.KeyedBeats)
	for k := range beats {
		beats[k] = int32(r.IntN(n))
	}
	// Expiry records: how often each key expired, and when first (ns
	// since base). Allocated before the memory snapshot, so not counted.
	counts := make([]atomic.Int32, total)
	firstAt := make([]atomic.Int64, total)
	var stray atomic.Int64 // expiries of keys the workload does not know
	base := time.Now()
	expired := func(key K) {
		i := index(key)
		if i < 0 || i >= total {
			stray.Add(1)
			return
		}
		if counts[i].Add(1) == 1 {
			firstAt[i].Store(int64(time.Since(base)))
		}
	}

	km, err := newKeyed(im.Name, c.Workers, keyedLong, expired)
	if err != nil {
		return nil, nil, err
	}
	defer km.Close()

	before := settledMem()
	for i, key := range keys[:n] {
		noteProgress(i)
		if err := km.Watch(key, keyedLong); err != nil {
			return nil, nil, fmt.Errorf("watch %d: %w", i, err)
		}
	}
	if err := km.Settle(n); err != nil {
		return nil, nil, err
	}
	after := settledMem()

	var failed int
	var firstErr error
	m0 := mallocs()
	cpu0, cpuOK0 := cpuTime()
	start := time.Now()
	for k, b := range beats {
		noteProgress(k)
		if err := km.Beat(keys[b], keyedLong); err != nil {
			failed++
			if firstErr == nil {
				firstErr = err
			}
		}
	}
	if err := km.Settle(n); err != nil {
		return nil, nil, err
	}
	elapsed := time.Since(start)
	cpu1, cpuOK1 := cpuTime()
	m1 := mallocs()

	m := metrics{
		"ns_beat":     float64(elapsed.Nanoseconds()) / float64(len(beats)),
		"allocs_beat": perItem(m1, m0, len(beats)),
		"bytes_key":   perItem(after.heapAlloc, before.heapAlloc, n),
	}
	var notes []string
	if cpuOK0 && cpuOK1 {
		m["cpu_ns_beat"] = float64((cpu1 - cpu0).Nanoseconds()) / float64(len(beats))
	} else {
		notes = append(notes, "this system gives the benchmark no process CPU time: not measured")
	}

	ex := keyedExactness(km, im, c, keys, n, counts, firstAt, base)
	for k, v := range ex.metrics {
		m[k] = v
	}
	if s := stray.Load(); s > 0 {
		m["failures"] += float64(s)
		notes = append(notes, fmt.Sprintf("%d expiries of unknown keys", s))
	}
	failed += ex.failed
	if firstErr == nil {
		firstErr = ex.firstErr
	}
	m["failed_ops"] = float64(failed)
	if failed > 0 {
		notes = append(notes, fmt.Sprintf("%d Watch/Beat calls failed; first: %v", failed, firstErr))
	}
	if m["early"] > 0 || m["kept_expired"] > 0 || m["lost"] > 0 || m["duplicates"] > 0 {
		notes = append(notes, fmt.Sprintf("exactness: %.0f lost, %.0f duplicate, %.0f early (more than a tick), %.0f beating keys expired",
			m["lost"], m["duplicates"], m["early"], m["kept_expired"]))
	}
	runtime.KeepAlive(keys)
	runtime.KeepAlive(beats)
	return m, notes, nil
}

// keyedSilentTimeout is the short timeout of the exactness phase: the
// configured one, but at least two ticks of a wheel, so that a wheel that
// rounds a delay down to whole ticks still keeps a beating key alive.
func keyedSilentTimeout(im impl, c config) time.Duration {
	return max(c.KeyedTimeout, 2*im.Tick)
}

// exactness is the outcome of the exactness phase.
type exactness struct {
	metrics  metrics
	failed   int
	firstErr error
}

// keyedExactness runs the exactness phase on km, whose first n keys are
// watched with the long timeout: the fresh keys after them are watched
// with a short timeout, the first half of them then go silent and the
// second half keep beating, and the expiries recorded in counts and
// firstAt (ns since base) are checked.
func keyedExactness[K comparable](km keyedMonitor[K], im impl, c config, keys []K, n int,
	counts []atomic.Int32, firstAt []atomic.Int64, base time.Time) exactness {
	var ex exactness
	note := func(err error) {
		if err != nil {
			ex.failed++
			if ex.firstErr == nil {
				ex.firstErr = err
			}
		}
	}
	short := keyedSilentTimeout(im, c)
	grace := min(time.Second, short/2)
	var silent, beating []int
	isSilent := make([]bool, len(keys))
	for i := range (len(keys) - n) / 2 {
		silent = append(silent, n+i)
		beating = append(beating, n+(len(keys)-n)/2+i)
		isSilent[n+i] = true
	}
	for _, i := range beating {
		note(km.Watch(keys[i], short))
	}
	watchedAt := make([]int64, len(silent))
	for j, i := range silent {
		watchedAt[j] = int64(time.Since(base))
		note(km.Watch(keys[i], short))
	}
	stop, done := make(chan struct{}), make(chan struct{})
	// Written by the beating goroutine only, read after it is done.
	var beatErrs int
	var beatErr error
	go func() {
		defer close(done)
		tk := time.NewTicker(short / keyedBeatsPerTimeout)
		defer tk.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tk.C:
			}
			for _, i := range beating {
				if err := km.Beat(keys[i], short); err != nil {
					beatErrs++
					if beatErr == nil {
						beatErr = err
					}
				}
			}
			progressCount.Add(1)
		}
	}()
	end := base.Add(time.Duration(watchedAt[len(watchedAt)-1]) + short + im.Tick + grace)
	for time.Now().Before(end) {
		time.Sleep(min(time.Until(end), 500*time.Millisecond))
		progressCount.Add(1)
	}
	close(stop)
	<-done
	ex.failed += beatErrs
	if ex.firstErr == nil {
		ex.firstErr = beatErr
	}

	var lost, dups, early, once, kept float64
	maxEarly, maxLate := 0.0, 0.0
	var late []float64
	tick := float64(im.Tick.Nanoseconds())
	for j, i := range silent {
		cnt := counts[i].Load()
		if cnt == 0 {
			lost++
			continue
		}
		if cnt == 1 {
			once++
		}
		dups += float64(cnt - 1)
		diff := float64(firstAt[i].Load() - watchedAt[j] - short.Nanoseconds())
		if diff < -tick {
			early++
		}
		maxEarly = max(maxEarly, -diff/1e6)
		maxLate = max(maxLate, diff/1e6)
		late = append(late, diff/1e6)
	}
	for i := range keys {
		if !isSilent[i] && counts[i].Load() > 0 {
			kept++
		}
	}
	slices.Sort(late)
	ex.metrics = metrics{
		"timeout_s":    short.Seconds(),
		"silent":       float64(len(silent)),
		"expired_once": once,
		"lost":         lost,
		"duplicates":   dups,
		"early":        early,
		"kept_expired": kept,
		"failures":     lost + dups + early + kept,
		"max_early_ms": maxEarly,
		"max_late_ms":  maxLate,
	}
	if len(late) > 0 {
		ex.metrics["late_p50_ms"] = percentile(late, 50)
	}
	return ex
}
