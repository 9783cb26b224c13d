package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-schedule/schedule"
	"github.com/go-schedule/schedule/eagercancel"
	"github.com/go-schedule/schedule/heartbeat"
	"github.com/go-schedule/schedule/lazycancel"
)

// Config describes one simulation. The zero value is not valid; start from
// DefaultConfig.
type Config struct {
	Devices   int           // devices simulated
	Timeout   time.Duration // a device is dead after this long without a heartbeat
	Heartbeat time.Duration // period of a live device's heartbeats
	Silent    float64       // share of the devices that go silent, in [0, 1]
	Duration  time.Duration // heartbeating phase; silent devices stop during it
	Grace     time.Duration // extra wait after the last silent device's deadline; may be 0
	Strategy  string        // "default", "lazy" or "eager"
	Workers   int           // size of the scheduler's worker pool
	Drivers   int           // goroutines sending heartbeats
	Seed      uint64        // seeds the choice of silent devices and all timings

	// Progress, when not nil, receives a progress line every
	// ProgressEvery while the simulation runs. With Interactive set the
	// line is redrawn in place, as on a terminal.
	Progress      io.Writer
	ProgressEvery time.Duration
	Interactive   bool

	// MeasureMemory enables the heap measurements (each one a full GC).
	MeasureMemory bool

	// Started, when not nil, is called once the scheduler and the Monitor
	// exist, before the first device connects; both stay readable after
	// Run returns. MetricsAddr, when not empty, is where main serves
	// /metrics (Run does not use it).
	Started     func(*schedule.Scheduler, *heartbeat.Monitor[int32])
	MetricsAddr string
}

// DefaultConfig returns the configuration of a plain `go run ./cmd/heartbeat`.
func DefaultConfig() Config {
	return Config{
		Devices:       100_000,
		Timeout:       2 * time.Second,
		Heartbeat:     500 * time.Millisecond,
		Silent:        0.1,
		Duration:      10 * time.Second,
		Grace:         500 * time.Millisecond,
		Strategy:      "default",
		Workers:       runtime.GOMAXPROCS(0),
		Drivers:       runtime.GOMAXPROCS(0),
		Seed:          1,
		ProgressEvery: 500 * time.Millisecond,
	}
}

// maxDuration bounds -duration, -timeout and -grace: a day is already a
// long soak, and a longer value is a slip of the keyboard (1000h for 1000ms)
// that would keep the run, and the machine, busy for weeks.
const maxDuration = 24 * time.Hour

// maxDevices keeps device indices, the Monitor's keys, in an int32 and
// well below what one scheduler can hold.
const maxDevices = 1 << 30

// Validate reports the first setting that makes no sense.
func (c Config) Validate() error {
	switch {
	case c.Devices <= 0:
		return fmt.Errorf("devices must be positive, got %d", c.Devices)
	case c.Devices > maxDevices:
		return fmt.Errorf("devices must be at most %d, got %d", maxDevices, c.Devices)
	case c.Timeout <= 0:
		return fmt.Errorf("timeout must be positive, got %v", c.Timeout)
	case c.Heartbeat <= 0:
		return fmt.Errorf("heartbeat must be positive, got %v", c.Heartbeat)
	case c.Heartbeat >= c.Timeout:
		return fmt.Errorf("heartbeat (%v) must be shorter than timeout (%v), or live devices time out between heartbeats", c.Heartbeat, c.Timeout)
	case math.IsNaN(c.Silent) || c.Silent < 0 || c.Silent > 1:
		return fmt.Errorf("silent is a share of the devices and must be in [0, 1], got %v", c.Silent)
	case c.Duration <= 0:
		return fmt.Errorf("duration must be positive, got %v", c.Duration)
	case c.Duration > maxDuration:
		return fmt.Errorf("duration must be at most %v (a day's soak), got %v", maxDuration, c.Duration)
	case c.Timeout > maxDuration:
		return fmt.Errorf("timeout must be at most %v, got %v", maxDuration, c.Timeout)
	case c.Grace < 0:
		return fmt.Errorf("grace must be zero or positive, got %v", c.Grace)
	case c.Grace > maxDuration:
		return fmt.Errorf("grace must be at most %v, got %v", maxDuration, c.Grace)
	case c.Workers <= 0:
		return fmt.Errorf("workers must be positive, got %d", c.Workers)
	case c.Drivers <= 0:
		return fmt.Errorf("drivers must be positive, got %d", c.Drivers)
	case c.Progress != nil && c.ProgressEvery <= 0:
		return fmt.Errorf("progress interval must be positive, got %v", c.ProgressEvery)
	}
	_, err := constructor(c.Strategy)
	return err
}

// constructor returns the scheduler constructor of the named strategy.
func constructor(strategy string) (func(int, ...schedule.Option) (*schedule.Scheduler, error), error) {
	switch strategy {
	case "default":
		return schedule.New, nil
	case "lazy":
		return lazycancel.New, nil
	case "eager":
		return eagercancel.New, nil
	}
	return nil, fmt.Errorf("strategy must be default, lazy or eager, got %q", strategy)
}

// Result is what a simulation observed. Times are measured on the clock
// the simulation ran on, which is fake inside a synctest bubble.
type Result struct {
	Config     Config
	GOMAXPROCS int

	// Interrupted is set when the context given to Run ended before the
	// run did. The result then covers the run up to that moment,
	// InterruptedAt after the heartbeats started (zero when they had not).
	Interrupted   bool
	InterruptedAt time.Duration

	// HeartbeatsStarted is set once every device is watched and the
	// heartbeating phase has begun; an interrupted run may end before.
	HeartbeatsStarted bool

	// Registered is the number of devices whose watch was started: all of
	// them, unless the run was interrupted while they connected.
	Registered int

	// Planned is the number of devices chosen to go silent, Fallen the
	// number of those that had stopped heartbeating when the heartbeats
	// ended. Expected is the number of those whose deadline (last
	// heartbeat plus timeout) plus Grace had passed by then, and so must
	// have been declared dead: all of them, unless the run was
	// interrupted. Detected is the number of expected devices declared
	// dead exactly once, after their last heartbeat and their deadline;
	// DetectedInGrace the number of the other silent devices declared
	// dead so (possible only in an interrupted run).
	Planned, Fallen, Expected, Detected, DetectedInGrace int
	// FalseTimeouts is the sum of:
	//  - LiveTimeouts: devices declared dead while they were still
	//    heartbeating;
	//  - EarlyTimeouts: devices declared dead before their deadline;
	//  - Overtaken: deadlines of live devices that came due, whose
	//    heartbeat then arrived before the device was declared dead (by
	//    the Monitor's contract the heartbeat wins, but the deadline should
	//    never have come due);
	//  - FailedBeats: heartbeats for which Monitor.Beat returned an error.
	FalseTimeouts                                       int
	LiveTimeouts, EarlyTimeouts, Overtaken, FailedBeats int
	// DuplicateTimeouts counts devices declared dead again after their
	// first time.
	DuplicateTimeouts int
	// Missing lists up to a few expected devices that were not detected.
	Missing []DeviceReport
	// WatchedEnd is Monitor.Len when the heartbeats ended. In a complete
	// run it must be the number of live devices.
	WatchedEnd int

	// Detection lateness: when the device was declared dead, minus its
	// last heartbeat plus the timeout. Over the detected devices.
	LatenessP50, LatenessP99, LatenessMax time.Duration

	Registration time.Duration // starting one watch per device
	Elapsed      time.Duration // heartbeating phase, including the wait for the last deadlines
	Heartbeats   uint64        // Beat calls after registration
	PerSecond    float64       // Heartbeats / Elapsed
	// HeartbeatLag is the longest a heartbeat was sent after its planned
	// moment. When it nears Timeout - Heartbeat the machine cannot keep up
	// with the planned load, and live devices may time out.
	HeartbeatLag time.Duration

	// Heap growth after a GC, divided by Devices: once every device is
	// watched (MemRegistered), and at the end of the run, before shutdown,
	// when only the live devices are (MemEnd). The growth is the scheduler
	// (task slots and heap) plus the Monitor (its key index, and each key
	// boxed once for its timeout task); the simulation's own per-device
	// state is allocated before the baseline. Zero unless
	// Config.MeasureMemory, and MemEnd zero in an interrupted run.
	MemRegistered, MemEnd float64

	Stats       schedule.Stats // when the heartbeats ended, before shutdown
	ShutdownErr error
}

// OK reports whether the run found exactly the silent devices, once each,
// and nothing else. An interrupted run is never OK: it reached no verdict.
func (r *Result) OK() bool {
	return !r.Interrupted && len(failures(r)) == 0
}

// DeviceReport describes one device, for diagnosing a failed run. Times are
// offsets from the start of the heartbeating phase.
type DeviceReport struct {
	Index    int
	SilentAt time.Duration // planned moment of silence
	LastBeat time.Duration // last heartbeat, or registration
	Deadline time.Duration // LastBeat + Timeout
	Timeouts int32         // how often it was declared dead
}

func (d DeviceReport) String() string {
	return fmt.Sprintf("device %d: silent at %v, last heartbeat %v, deadline %v, declared dead %d times",
		d.Index, d.SilentAt, d.LastBeat, d.Deadline, d.Timeouts)
}

// device is the simulated state of one device. Times are nanoseconds on the
// simulation's clock (see sim.now). Its index in sim.devs is its key in the
// Monitor.
type device struct {
	phase    int64 // offset of its heartbeats within the period
	silentAt int64 // when it goes silent; math.MaxInt64 if never

	lastBeat atomic.Int64 // written by its driver, read by declaredDead
	stopped  atomic.Bool  // set by its driver once it has gone silent
	timeouts atomic.Int32 // times it was declared dead
	lateness atomic.Int64 // of its first, valid, declaration; -1 if none
}

// driverStats are a driver's counters, padded so that drivers do not
// share cache lines.
type driverStats struct {
	beats  atomic.Uint64 // Beat calls
	lag    atomic.Int64  // how late the latest heartbeat was sent
	maxLag atomic.Int64
	_      [40]byte
}

type sim struct {
	cfg     Config
	sched   *schedule.Scheduler
	mon     *heartbeat.Monitor[int32]
	devs    []device
	base    time.Time
	timeout int64
	period  int64
	nSilent int

	// allSilent is closed once every silent device has stopped, allDead
	// once the expired function has been called nSilent times, and stop
	// when the drivers are to stop.
	silenced  atomic.Int64
	allSilent chan struct{}
	allDead   chan struct{}
	stop      chan struct{}

	drivers   []driverStats
	dead      atomic.Int64 // calls of the expired function
	detected  atomic.Int64
	live      atomic.Int64 // live devices declared dead
	early     atomic.Int64
	dups      atomic.Int64
	failedBts atomic.Int64
}

func (s *sim) now() int64 { return int64(time.Since(s.base)) }

// Run runs the simulation described by cfg. When ctx ends before the run
// does, Run stops the heartbeats, shuts the scheduler down and returns
// what it observed so far, with Result.Interrupted set.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &sim{
		cfg:     cfg,
		devs:    make([]device, cfg.Devices),
		timeout: int64(cfg.Timeout),
		period:  int64(cfg.Heartbeat),
		drivers: make([]driverStats, cfg.Drivers),
	}
	res := &Result{Config: cfg, GOMAXPROCS: runtime.GOMAXPROCS(0)}

	// Plan every device: its heartbeat phase, and for the silent ones the
	// moment they stop, all relative to the start of the heartbeats.
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x6865617274626561))
	nSilent := int(math.Round(cfg.Silent * float64(cfg.Devices)))
	res.Planned = nSilent
	perm := rng.Perm(cfg.Devices)
	isSilent := make([]bool, cfg.Devices)
	for _, i := range perm[:nSilent] {
		isSilent[i] = true
	}
	perm = nil
	for i := range s.devs {
		d := &s.devs[i]
		d.phase = rng.Int64N(s.period)
		d.silentAt = math.MaxInt64
		d.lateness.Store(-1)
		if isSilent[i] {
			d.silentAt = rng.Int64N(int64(cfg.Duration))
		}
	}
	isSilent = nil

	// Shard the devices over the drivers, each walking its shard in
	// heartbeat order.
	shards := make([][]int32, cfg.Drivers)
	for i := range s.devs {
		shards[i%cfg.Drivers] = append(shards[i%cfg.Drivers], int32(i))
	}
	for _, sh := range shards {
		slices.SortFunc(sh, func(a, b int32) int { return cmp.Compare(s.devs[a].phase, s.devs[b].phase) })
	}

	var heapBase uint64
	if cfg.MeasureMemory {
		heapBase = heapAlloc()
	}
	mk, err := constructor(cfg.Strategy)
	if err != nil {
		return nil, err
	}
	sched, err := mk(cfg.Workers)
	if err != nil {
		return nil, err
	}
	s.sched = sched
	shutdown := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		return sched.ShutdownContext(ctx)
	}
	// The gateway's whole timeout logic: one Monitor keyed by device, told
	// of every heartbeat, calling s.declaredDead for a device gone silent.
	mon, err := heartbeat.New(sched, cfg.Timeout, s.declaredDead)
	if err != nil {
		_ = shutdown()
		return nil, err
	}
	s.mon = mon
	if cfg.Started != nil {
		cfg.Started(sched, mon)
	}

	// Every device connects: its first Beat starts its watch, and the
	// connection counts as its first sign of life. Devices connect
	// concurrently, each driver's shard in its own goroutine, as they
	// would on a gateway.
	s.base = time.Now()
	var (
		reg        sync.WaitGroup
		registered atomic.Int64
		regErrOnce sync.Once
		regErr     error
	)
	for _, sh := range shards {
		reg.Go(func() {
			n := 0
			defer func() { registered.Add(int64(n)) }()
			for _, i := range sh {
				if n%1024 == 0 && ctx.Err() != nil {
					return
				}
				s.devs[i].lastBeat.Store(s.now())
				if err := mon.Beat(i); err != nil {
					regErrOnce.Do(func() { regErr = fmt.Errorf("starting the watch of device %d: %w", i, err) })
					return
				}
				n++
			}
		})
	}
	reg.Wait()
	if regErr != nil {
		_ = shutdown()
		return nil, regErr
	}
	res.Registered = int(registered.Load())
	res.Interrupted = res.Registered < cfg.Devices
	t0 := s.now()
	res.Registration = time.Duration(t0)
	if cfg.MeasureMemory && !res.Interrupted {
		// Let the owner goroutine take in every new task first, so that
		// the heap and not the request queue is measured.
		for range 1000 {
			if sched.Stats().HeapEntries >= cfg.Devices || ctx.Err() != nil {
				break
			}
			time.Sleep(time.Millisecond)
		}
		res.MemRegistered = perDevice(heapAlloc(), heapBase, cfg.Devices)
		t0 = s.now() // the GC does not count as heartbeating time
	}
	if res.Interrupted || ctx.Err() != nil {
		// Interrupted before the first heartbeat: there is nothing to
		// judge but the registration.
		res.Interrupted = true
		res.Stats = sched.Stats()
		res.WatchedEnd = mon.Len()
		res.ShutdownErr = shutdown()
		return res, nil
	}
	if t0 >= int64(cfg.Timeout-cfg.Heartbeat)/2 {
		_ = shutdown()
		return nil, fmt.Errorf("starting %d watches took %v, too close to timeout - heartbeat (%v): the first devices could time out before their first heartbeat; use fewer devices or a longer timeout",
			cfg.Devices, time.Duration(t0), cfg.Timeout-cfg.Heartbeat)
	}
	// Make the plan absolute.
	for i := range s.devs {
		d := &s.devs[i]
		d.phase += t0
		if d.silentAt != math.MaxInt64 {
			d.silentAt += t0
		}
	}
	s.nSilent = nSilent
	s.allSilent = make(chan struct{})
	s.allDead = make(chan struct{})
	s.stop = make(chan struct{})
	if nSilent == 0 {
		close(s.allSilent)
		close(s.allDead)
	}

	res.HeartbeatsStarted = true
	var wg sync.WaitGroup
	for k, sh := range shards {
		wg.Go(func() { s.drive(sh, &s.drivers[k]) })
	}
	// The run lasts Duration at least, and until the deadline of every
	// silent device, plus Grace, has passed. The live devices keep
	// heartbeating until then. An interruption ends it at once.
	done := make(chan struct{})
	var end int64 // when the heartbeats stopped; read after done
	interrupted := false
	go func() {
		defer close(done)
		select {
		case <-s.allSilent:
			until := t0 + int64(cfg.Duration)
			for i := range s.devs {
				if d := &s.devs[i]; d.silentAt != math.MaxInt64 {
					until = max(until, d.lastBeat.Load()+s.timeout+int64(cfg.Grace))
				}
			}
			if d := until - s.now(); d > 0 {
				t := time.NewTimer(time.Duration(d))
				select {
				case <-t.C:
				case <-ctx.Done():
					interrupted = true
				}
				t.Stop()
			}
		case <-ctx.Done():
			interrupted = true
		}
		end = s.now()
		close(s.stop)
		wg.Wait()
	}()
	s.progress(done, t0)
	res.Interrupted = interrupted
	elapsed := end - t0

	// In a complete run every silent device's deadline has passed, and
	// the live ones are still watched. Shut down at once after an
	// interruption: the live devices have stopped heartbeating too.
	if !interrupted {
		// With a short grace (0 included) the expiries of the last devices
		// to fall silent may still be on their way: their deadlines have
		// passed, the owner or a worker has yet to act. Let them land, for
		// at most a timeout, so that Len counts the live devices only; a
		// watch that outlasts this wait is a failure the report shows.
		wait := time.NewTimer(cfg.Timeout)
		select {
		case <-s.allDead:
		case <-wait.C:
		}
		wait.Stop()
	}
	res.Stats = sched.Stats()
	res.WatchedEnd = mon.Len()
	if cfg.MeasureMemory && !interrupted {
		res.MemEnd = perDevice(heapAlloc(), heapBase, cfg.Devices)
	}
	res.ShutdownErr = shutdown()
	runtime.KeepAlive(s.devs)

	if interrupted {
		res.InterruptedAt = time.Duration(elapsed)
	}
	res.Elapsed = time.Duration(elapsed)
	res.Heartbeats = s.heartbeats()
	_, maxLag := s.lag()
	res.HeartbeatLag = time.Duration(maxLag)
	if elapsed > 0 {
		res.PerSecond = float64(res.Heartbeats) / time.Duration(elapsed).Seconds()
	}
	res.LiveTimeouts = int(s.live.Load())
	res.EarlyTimeouts = int(s.early.Load())
	res.FailedBeats = int(s.failedBts.Load())
	if res.ShutdownErr == nil {
		// Every timeout task that started has finished: the ones that did
		// not call declaredDead found a newer watch of their device, made
		// by a heartbeat that came after the deadline.
		res.Overtaken = int(sched.Stats().Started) - int(s.dead.Load())
	}
	res.FalseTimeouts = res.LiveTimeouts + res.EarlyTimeouts + res.Overtaken + res.FailedBeats
	res.DuplicateTimeouts = int(s.dups.Load())

	late := make([]int64, 0, nSilent)
	for i := range s.devs {
		d := &s.devs[i]
		if d.silentAt == math.MaxInt64 || !d.stopped.Load() {
			continue
		}
		res.Fallen++
		lb := d.lastBeat.Load()
		l := d.lateness.Load()
		if l >= 0 {
			late = append(late, l)
		}
		// A complete run ends only once every silent device has stopped
		// and every deadline plus Grace has passed: all are expected.
		if interrupted && lb+s.timeout+int64(cfg.Grace) > end {
			if l >= 0 {
				res.DetectedInGrace++
			}
			continue
		}
		res.Expected++
		if l >= 0 {
			res.Detected++
		} else if len(res.Missing) < 5 {
			res.Missing = append(res.Missing, DeviceReport{
				Index:    i,
				SilentAt: time.Duration(d.silentAt - t0),
				LastBeat: time.Duration(lb - t0),
				Deadline: time.Duration(lb + s.timeout - t0),
				Timeouts: d.timeouts.Load(),
			})
		}
	}
	slices.Sort(late)
	res.LatenessP50 = percentile(late, 50)
	res.LatenessP99 = percentile(late, 99)
	if len(late) > 0 {
		res.LatenessMax = time.Duration(late[len(late)-1])
	}
	return res, nil
}

// declaredDead is the Monitor's expired function: the gateway declares
// device i dead. It classifies the call: a detection if the device has
// gone silent and its deadline has passed, a false timeout otherwise.
func (s *sim) declaredDead(i int32) {
	d := &s.devs[i]
	now := s.now()
	if s.dead.Add(1) == int64(s.nSilent) {
		close(s.allDead) // every watch but the live devices' has ended
	}
	if d.timeouts.Add(1) > 1 {
		s.dups.Add(1)
		return
	}
	if d.silentAt == math.MaxInt64 || !d.stopped.Load() {
		s.live.Add(1)
		return
	}
	late := now - (d.lastBeat.Load() + s.timeout)
	if late < 0 {
		s.early.Add(1)
		return
	}
	d.lateness.Store(late)
	s.detected.Add(1)
}

// drive sends the heartbeats of the devices in shard, sorted by phase, until
// s.stop is closed. A device's heartbeats are due at phase + k·period; a
// silent device sends none from its silentAt on.
func (s *sim) drive(shard []int32, st *driverStats) {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for k := int64(0); ; k++ {
		cycle := k * s.period
		kept := shard[:0]
		for _, i := range shard {
			select {
			case <-s.stop:
				return
			default:
			}
			d := &s.devs[i]
			due := d.phase + cycle
			now := s.now()
			if due > now {
				timer.Reset(time.Duration(due - now))
				select {
				case <-timer.C:
				case <-s.stop:
					return
				}
				now = s.now()
			}
			if lag := now - due; lag >= 0 {
				st.lag.Store(lag)
				if lag > st.maxLag.Load() {
					st.maxLag.Store(lag)
				}
			}
			if due >= d.silentAt {
				d.stopped.Store(true)
				if s.silenced.Add(1) == int64(s.nSilent) {
					close(s.allSilent)
				}
				continue
			}
			// The heartbeat: record it, then tell the Monitor, so that the
			// deadline it sets is never before lastBeat + timeout.
			d.lastBeat.Store(now)
			if err := s.mon.Beat(i); err != nil {
				s.failedBts.Add(1)
			}
			st.beats.Add(1)
			kept = append(kept, i)
		}
		shard = kept
		if len(shard) == 0 {
			<-s.stop
			return
		}
	}
}

func (s *sim) heartbeats() uint64 {
	var n uint64
	for i := range s.drivers {
		n += s.drivers[i].beats.Load()
	}
	return n
}

// lag returns the largest current and all-time lags of the drivers.
func (s *sim) lag() (cur, all int64) {
	for i := range s.drivers {
		cur = max(cur, s.drivers[i].lag.Load())
		all = max(all, s.drivers[i].maxLag.Load())
	}
	return cur, all
}

// progress reports on s.cfg.Progress until done is closed.
func (s *sim) progress(done <-chan struct{}, t0 int64) {
	w := s.cfg.Progress
	if w == nil {
		<-done
		return
	}
	ticker := time.NewTicker(s.cfg.ProgressEvery)
	defer ticker.Stop()
	prevT, prevN := t0, uint64(0)
	for {
		select {
		case <-done:
			if s.cfg.Interactive {
				fmt.Fprintln(w)
			}
			return
		case <-ticker.C:
		}
		now, n := s.now(), s.heartbeats()
		rate := 0.0
		if now > prevT {
			rate = float64(n-prevN) / time.Duration(now-prevT).Seconds()
		}
		prevT, prevN = now, n
		lag, _ := s.lag()
		line := fmt.Sprintf("%6.1fs  heartbeats %s (%s/s, %v behind)  declared dead %s  watched %s",
			time.Duration(now-t0).Seconds(), commas(n), commas(uint64(rate)), round(time.Duration(lag)),
			commas(uint64(s.dead.Load())), commas(uint64(s.mon.Len())))
		if s.cfg.Interactive {
			fmt.Fprintf(w, "\r\033[K%s", line)
		} else {
			fmt.Fprintln(w, line)
		}
	}
}

// percentile returns the p-th percentile (nearest rank) of sorted.
func percentile(sorted []int64, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := (p*len(sorted) + 99) / 100 // ceil(p/100 · n)
	return time.Duration(sorted[max(rank, 1)-1])
}

func heapAlloc() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

func perDevice(now, base uint64, devices int) float64 {
	if now < base {
		return 0
	}
	return float64(now-base) / float64(devices)
}

// commas formats n with thousands separators.
func commas(n uint64) string {
	s := fmt.Sprint(n)
	out := make([]byte, 0, len(s)+len(s)/3)
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	return string(out)
}
