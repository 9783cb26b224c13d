package loadtest

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"time"
)

// Sample is a sample of the process's memory use.
type Sample struct {
	// RSS is the resident set in bytes, or, where the system does not
	// tell, the memory the Go runtime obtained from it.
	RSS int64
	// Heap is the Go heap in use plus the goroutines' stacks, in bytes.
	Heap       int64
	Goroutines int64
	GCs        uint32 // garbage collections so far
}

// SampleMemory collects garbage, so that Heap counts only what is live,
// then samples.
func SampleMemory() Sample {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return Sample{
		RSS:        residentSet(int64(ms.Sys)),
		Heap:       int64(ms.HeapAlloc + ms.StackInuse),
		Goroutines: int64(runtime.NumGoroutine()),
		GCs:        ms.NumGC,
	}
}

// Usage is what a server process measured of itself over the window. A
// server's result embeds it, so that it reaches the parent.
type Usage struct {
	// Connections open at the window's start, and on average over it,
	// sampled every SampleEvery.
	Conns    int64   `json:"conns"`
	AvgConns float64 `json:"avg_conns"`
	// Memory at the window's start, less the same before any client
	// connected: the resident set, and the Go heap plus goroutine stacks
	// after a collection (see Sample).
	RSSDelta  int64 `json:"rss_delta"`
	HeapDelta int64 `json:"heap_delta"`
	// Goroutines at the window's start, and the same less those before any
	// client connected.
	Goroutines      int64 `json:"goroutines"`
	GoroutinesDelta int64 `json:"goroutines_delta"`
	// CPU time of the process, user and system, over the window, and the
	// window's length.
	CPU    time.Duration `json:"cpu"`
	Window time.Duration `json:"window"`
	// Context switches of the process's threads over the window (0 where
	// the system does not tell), and garbage collections.
	Switches int64  `json:"switches"`
	GCs      uint32 `json:"gcs"`
}

// Add adds o's figures to u's, for the servers of a run in all: the sum of
// each, but the longest of the windows.
func (u *Usage) Add(o Usage) {
	u.Conns += o.Conns
	u.AvgConns += o.AvgConns
	u.RSSDelta += o.RSSDelta
	u.HeapDelta += o.HeapDelta
	u.Goroutines += o.Goroutines
	u.GoroutinesDelta += o.GoroutinesDelta
	u.CPU += o.CPU
	u.Window = max(u.Window, o.Window)
	u.Switches += o.Switches
	u.GCs += o.GCs
}

// SampleEvery is how often a server process samples its open connections
// over the window, for their average: often enough to follow the silent
// connections' closes, rarely enough to cost nothing.
const SampleEvery = 100 * time.Millisecond

// Server is a server process's part in a run, for Serve.
type Server[S any] struct {
	// Addr is the address the server listens on.
	Addr string
	// Open returns the number of connections open now. It is called from
	// another goroutine than Serve's.
	Open func() int64
	// Profile, if not empty, is the file for a CPU profile of the window;
	// its directory is created if need be.
	Profile string
	// Begin, if not nil, is called at the window's start, after the
	// memory sample and before the CPU time, for the server's own counters.
	Begin func()
	// End is called at the end of the window with what the process used,
	// and returns the server's result, which embeds it.
	End func(Usage) S
}

// Serve runs a server process's part of the protocol, for a server that
// already listens: it samples the memory, tells the parent it is ready,
// measures the window from go to report and reports s.End's result, until
// the end of standard input. It returns nil then, leaving the server for
// the caller to close, and ctx.Err() if ctx ends first.
func Serve[S any](ctx context.Context, out *Emitter[S], cmds <-chan string, s Server[S]) error {
	base := SampleMemory()
	out.Emit(Message[S]{Event: EventReady, Addr: s.Addr})
	var w window
	defer w.stop()
	var u Usage
	var gc0 uint32
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case cmd, ok := <-cmds:
			if !ok {
				return w.stop()
			}
			switch cmd {
			case CmdGo:
				m := SampleMemory()
				u.Conns = s.Open()
				u.RSSDelta, u.HeapDelta = m.RSS-base.RSS, m.Heap-base.Heap
				u.Goroutines, u.GoroutinesDelta = m.Goroutines, m.Goroutines-base.Goroutines
				gc0 = m.GCs
				if s.Begin != nil {
					s.Begin()
				}
				if err := w.start(s.Profile, s.Open); err != nil {
					return err
				}
			case CmdReport:
				if err := w.end(&u, gc0); err != nil {
					return err
				}
				r := s.End(u)
				out.Emit(Message[S]{Event: EventResult, Server: &r})
			}
		}
	}
}

// window measures a server process over the window.
type window struct {
	started            time.Time
	cpu0               time.Duration
	switches0          int64
	profile            *os.File
	connSum, connCount atomic.Int64
	stopSampling       chan struct{}
	sampling           sync.WaitGroup
}

// start starts the window: a CPU profile into the file profile unless it
// is "", and the sampling of open.
func (w *window) start(profile string, open func() int64) error {
	if profile != "" {
		f, err := startCPUProfile(profile)
		if err != nil {
			return err
		}
		w.profile = f
	}
	w.started, w.cpu0, w.switches0 = time.Now(), cpuTime(), contextSwitches()
	sample := func() {
		w.connSum.Add(open())
		w.connCount.Add(1)
	}
	// The first sample now, so that the average has one however soon the
	// window ends.
	sample()
	stop := make(chan struct{})
	w.stopSampling = stop
	w.sampling.Go(func() {
		t := time.NewTicker(SampleEvery)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				sample()
			case <-stop:
				return
			}
		}
	})
	return nil
}

// end ends the window and fills in u's figures over it; gc0 is the count
// of garbage collections at its start.
func (w *window) end(u *Usage, gc0 uint32) error {
	u.CPU = cpuTime() - w.cpu0
	u.Switches = contextSwitches() - w.switches0
	u.Window = time.Since(w.started)
	if err := w.stop(); err != nil {
		return err
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	u.GCs = ms.NumGC - gc0
	if n := w.connCount.Load(); n > 0 {
		u.AvgConns = float64(w.connSum.Load()) / float64(n)
	}
	return nil
}

// stop stops the profile and the sampling, if they run.
func (w *window) stop() error {
	if w.stopSampling != nil {
		close(w.stopSampling)
		w.stopSampling = nil
		w.sampling.Wait()
	}
	if w.profile == nil {
		return nil
	}
	pprof.StopCPUProfile()
	err := w.profile.Close()
	w.profile = nil
	return err
}

// startCPUProfile starts a CPU profile written to path, creating its
// directory if need be. The caller stops it and closes the file.
func startCPUProfile(path string) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}
