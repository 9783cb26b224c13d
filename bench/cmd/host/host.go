package main

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"sync/atomic"
	"time"

	"github.com/go-schedule/schedule"
)

// addrPrefix starts the first line a host child prints: the address of its
// UDP socket, for the sender.
const addrPrefix = "addr "

// socketBuffer is the receive buffer the host asks for, so that packets
// that arrive while its reader cannot run wait in the socket, to be read
// late, rather than being dropped.
const socketBuffer = 1 << 20

// recordHeadroom is how many times the sender's nominal packet count the
// lateness buffer has room for.
const recordHeadroom = 2

// workTolerance is how far the work done in the window may stray from the
// shape's expected rate, as a fraction of it, before the cell fails.
const workTolerance = 0.10

// exitOrphaned is the status a host child exits with when its parent is
// gone.
const exitOrphaned = 3

// schedulerCounters are the Stats counters a go-schedule cell reports, as
// deltas over the window, in this order. A new counter is one line here.
var schedulerCounters = []struct {
	name string
	get  func(schedule.Stats) uint64
}{
	{"fired", func(s schedule.Stats) uint64 { return s.Started }},
	{"scheduled", func(s schedule.Stats) uint64 { return s.Scheduled }},
	{"cancelled", func(s schedule.Stats) uint64 { return s.Cancelled }},
	{"dropped", func(s schedule.Stats) uint64 { return s.Dropped }},
	{"skipped", func(s schedule.Stats) uint64 { return s.Skipped }},
	{"panics", func(s schedule.Stats) uint64 { return s.Panics }},
	{"wakeups", func(s schedule.Stats) uint64 { return s.Wakeups }},
}

// hostResult is what a host child reports for its cell; the parent adds
// the sender's rate, or the error of a child that failed.
type hostResult struct {
	cell
	WindowS     float64 `json:"window_s"`
	Packets     int     `json:"packets"`
	Lost        int     `json:"lost"`
	PacketsPerS float64 `json:"packets_per_s"`
	// Read lateness (receive time − send stamp) percentiles, µs.
	LateP50  float64 `json:"late_p50_us"`
	LateP99  float64 `json:"late_p99_us"`
	LateP999 float64 `json:"late_p999_us"`
	LateMax  float64 `json:"late_max_us"`
	// Process CPU time over the window, user plus system.
	CPUPct    float64 `json:"cpu_pct"`
	CPUMsPerS float64 `json:"cpu_ms_per_s"`
	// Voluntary plus involuntary context switches of every thread.
	CtxSw     uint64  `json:"ctxsw"`
	CtxSwPerS float64 `json:"ctxsw_per_s"`
	// Unit, WorkPerS and ExpectedPerS describe the shape's work in the
	// window; Expired and Misses count from set-up to the window's end.
	Unit         string  `json:"unit"`
	WorkPerS     float64 `json:"work_per_s"`
	ExpectedPerS float64 `json:"expected_per_s"`
	Expired      uint64  `json:"expired"`
	Misses       uint64  `json:"misses"`
	// Counters are the scheduler's counter deltas over the window.
	Counters   map[string]uint64 `json:"counters,omitempty"`
	SenderPerS float64           `json:"sender_per_s"`
	// Load1 is the machine's 1-minute load average as the cell started
	// (Linux only): a hint of how much else was running.
	Load1 float64 `json:"load1,omitempty"`
	Error string  `json:"error,omitempty"`
}

// runHost is the host child: it measures its cell and prints the result
// as one line of JSON, after the line with its address.
func runHost(specJSON string) {
	var spec hostSpec
	if err := json.Unmarshal([]byte(specJSON), &spec); err != nil {
		fatalChild("host: bad -spec: %v", err)
	}
	go func() {
		// The parent holds the other end of standard input: end of file
		// means it is gone, and a host must not outlive it.
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(exitOrphaned)
	}()
	res := hostResult{cell: spec.Cell}
	if err := measure(&res, spec.Config); err != nil {
		res.Error = err.Error()
	}
	if err := json.NewEncoder(os.Stdout).Encode(res); err != nil {
		fatalChild("host: %v", err)
	}
}

// startProfile starts a CPU profile of the cell in dir, and returns the
// function that ends it; with dir empty it does nothing.
func startProfile(dir string, cl cell) (stop func(), err error) {
	if dir == "" {
		return func() {}, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	name := fmt.Sprintf("%d-%s-%s-%d.pprof", cl.Procs, cl.Shape, cl.Impl, cl.Rep)
	f, err := os.Create(filepath.Join(dir, name))
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

// snapshot is the host's state at one end of the window.
type snapshot struct {
	at    time.Time
	usage usage
	prog  progress
	stats schedule.Stats
}

func takeSnapshot(w *workload) (snapshot, error) {
	var s snapshot
	var err error
	s.at = time.Now()
	s.usage, err = readUsage()
	s.prog = w.progress()
	if w.sched != nil {
		s.stats = w.sched.Stats()
	}
	return s, err
}

// measure runs the cell's shape beside the packet reader and fills res
// from the window; it returns why the cell failed, if it did.
func measure(res *hostResult, c config) error {
	if got := runtime.GOMAXPROCS(0); got != res.Procs {
		return fmt.Errorf("GOMAXPROCS is %d, want %d", got, res.Procs)
	}
	conn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := conn.SetReadBuffer(socketBuffer); err != nil {
		return err
	}
	fmt.Printf("%s%s\n", addrPrefix, conn.LocalAddr())

	w, err := startWorkload(res.Shape, res.Impl, c)
	if err != nil {
		return err
	}
	nominal := float64(c.Warmup+c.Window) / float64(c.Interval)
	rec := newRecorder(int(nominal*recordHeadroom) + 1)
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		rec.read(conn)
	}()

	time.Sleep(c.Warmup)
	stopProfile, err := startProfile(c.CPUProfile, res.cell)
	if err != nil {
		return err
	}
	before, err := takeSnapshot(w)
	if err != nil {
		return err
	}
	time.Sleep(c.Window)
	after, err := takeSnapshot(w)
	stopProfile()
	if err != nil {
		return err
	}
	w.halt()
	conn.Close()
	<-readerDone

	fillResult(res, w, before, after)
	res.Packets, res.Lost, res.LateP50, res.LateP99, res.LateP999, res.LateMax = rec.window(before.at, after.at)
	res.PacketsPerS = float64(res.Packets) / res.WindowS
	return check(res, rec)
}

// fillResult sets res's CPU, context-switch, work and counter figures from
// the two ends of the window.
func fillResult(res *hostResult, w *workload, before, after snapshot) {
	res.WindowS = after.at.Sub(before.at).Seconds()
	cpu := (after.usage.cpu - before.usage.cpu).Seconds()
	res.CPUMsPerS = cpu * 1000 / res.WindowS
	res.CPUPct = cpu * 100 / res.WindowS
	res.CtxSw = after.usage.ctxsw - before.usage.ctxsw
	res.CtxSwPerS = float64(res.CtxSw) / res.WindowS
	res.Unit = w.unit
	res.WorkPerS = float64(after.prog.work-before.prog.work) / res.WindowS
	res.ExpectedPerS = w.expectedPerS
	res.Expired, res.Misses = after.prog.expired, after.prog.misses
	if w.sched != nil {
		res.Counters = map[string]uint64{}
		for _, k := range schedulerCounters {
			res.Counters[k.name] = k.get(after.stats) - k.get(before.stats)
		}
	}
}

// check returns why the cell's work or measurement was not what the shape
// promises, or nil.
func check(res *hostResult, rec *recorder) error {
	var errs []error
	if res.Packets == 0 {
		errs = append(errs, errors.New("no packet read in the window"))
	}
	if n := rec.overflow.Load(); n > 0 {
		errs = append(errs, fmt.Errorf("%d packets did not fit the lateness buffer", n))
	}
	if n := rec.malformed.Load(); n > 0 {
		errs = append(errs, fmt.Errorf("%d packets of the wrong size", n))
	}
	if res.Expired > 0 {
		errs = append(errs, fmt.Errorf("%d timeouts expired, want 0", res.Expired))
	}
	if res.Misses > 0 {
		errs = append(errs, fmt.Errorf("%d resets or reschedules failed", res.Misses))
	}
	if off := res.WorkPerS/res.ExpectedPerS - 1; math.Abs(off) > workTolerance {
		errs = append(errs, fmt.Errorf("%.0f %s/s, expected %.0f (%+.1f%%, tolerance ±%.0f%%)",
			res.WorkPerS, res.Unit, res.ExpectedPerS, off*100, workTolerance*100))
	}
	return errors.Join(errs...)
}

// recorder keeps, for every packet read, its receive time, sequence number
// and lateness, in buffers allocated up front so that reading allocates
// nothing.
type recorder struct {
	recv []int64 // receive time, ns since the Unix epoch
	seq  []uint64
	late []int64 // receive time − send stamp, ns
	// n is the number of packets recorded; entries below it are complete.
	n         atomic.Int64
	overflow  atomic.Int64
	malformed atomic.Int64
}

func newRecorder(capacity int) *recorder {
	return &recorder{recv: make([]int64, capacity), seq: make([]uint64, capacity), late: make([]int64, capacity)}
}

// read records packets from conn until it is closed.
func (r *recorder) read(conn *net.UDPConn) {
	var buf [2 * packetSize]byte
	for {
		k, err := conn.Read(buf[:])
		now := time.Now().UnixNano()
		if err != nil {
			// Closed by measure at the end; any other error ends the
			// reading too, and shows as a short count.
			return
		}
		if k != packetSize {
			r.malformed.Add(1)
			continue
		}
		i := r.n.Load()
		if int(i) == len(r.recv) {
			r.overflow.Add(1)
			continue
		}
		r.recv[i] = now
		r.seq[i] = binary.LittleEndian.Uint64(buf[0:8])
		r.late[i] = now - int64(binary.LittleEndian.Uint64(buf[8:16]))
		r.n.Store(i + 1)
	}
}

// window returns the packets read in [from, to): their number, how many
// the sequence numbers show missing among them, and lateness percentiles
// and maximum in µs.
func (r *recorder) window(from, to time.Time) (packets, lost int, p50, p99, p999, worst float64) {
	lo, hi := from.UnixNano(), to.UnixNano()
	n := int(r.n.Load())
	var late []float64
	minSeq, maxSeq := uint64(math.MaxUint64), uint64(0)
	for i := 0; i < n; i++ {
		if r.recv[i] < lo || r.recv[i] >= hi {
			continue
		}
		late = append(late, float64(r.late[i])/float64(time.Microsecond))
		minSeq, maxSeq = min(minSeq, r.seq[i]), max(maxSeq, r.seq[i])
	}
	if len(late) == 0 {
		return 0, 0, 0, 0, 0, 0
	}
	slices.Sort(late)
	lost = max(int(maxSeq-minSeq+1)-len(late), 0)
	return len(late), lost, percentile(late, 50), percentile(late, 99), percentile(late, 99.9), late[len(late)-1]
}
