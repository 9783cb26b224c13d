//go:build unix

// Command idlewake measures what an idle process pays for holding deadlines:
// how often its threads wake (voluntary context switches a second) and how much CPU
// it uses while nothing is due.
//
// Each mode runs in a process of its own, the same program started again
// with the mode in its environment, and holds its deadlines for a window
// after a settling period:
//
//   - bare: nothing at all; ants' package-level default pool, which every
//     program that imports ants has from its start, is released first.
//   - ants: nothing but that default pool.
//   - runtime: the default pool and -n time.AfterFunc timers due an hour
//     out or later.
//   - scheduler: the default pool and one go-schedule Scheduler (lazycancel,
//     8 workers) holding -n one-shots due an hour out or later.
//
// The difference between ants and bare is what importing ants costs any
// program; between scheduler and ants, what a Scheduler adds: its owner
// goroutine (whose own wake-ups Stats.Wakeups counts) and the clock
// goroutine of its ants pool, which ants starts for every pool and which
// no option turns off. Repetitions are interleaved; the table gives
// medians.
//
// Usage, from the bench directory:
//
//	go run ./cmd/idlewake                 # 3 repetitions of a 20 s window, about 4.5 minutes
//	go run ./cmd/idlewake -window 5s -count 1
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"runtime/debug"
	"slices"
	"syscall"
	"time"

	"github.com/go-schedule/schedule/bench/loadtest"

	"github.com/go-schedule/schedule"
	"github.com/panjf2000/ants/v2"
)

// modeEnv names the environment variable that makes the program a child
// running one mode.
const modeEnv = "IDLEWAKE_MODE"

// settle is how long a child waits, after it has set up its deadlines and
// collected its garbage, before the window starts.
const settle = 2 * time.Second

var modes = []string{"bare", "ants", "runtime", "scheduler"}

// result is what a child reports, as one JSON line on standard output.
type result struct {
	CtxSwPerSec   float64 `json:"ctxsw_per_s"`
	CPUMsPerSec   float64 `json:"cpu_ms_per_s"`
	OwnerWakeups  uint64  `json:"owner_wakeups"`
	WindowSeconds float64 `json:"window_s"`
}

func main() {
	fs := flag.NewFlagSet("idlewake", flag.ContinueOnError)
	n := fs.Int("n", 100_000, "deadlines held, an hour out or later")
	window := fs.Duration("window", 20*time.Second, "measured window of each run")
	count := fs.Int("count", 3, "repetitions, interleaved")
	fs.SetOutput(os.Stderr)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: go run ./cmd/idlewake [flags]   (in bench/)")
		fs.PrintDefaults()
	}
	err := loadtest.Parse(fs, os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "idlewake:", err)
		fmt.Fprintln(os.Stderr, "run 'go run ./cmd/idlewake -h' (in bench/) for the flags")
		os.Exit(2)
	}
	if *n < 1 || *window < time.Second || *count < 1 {
		fmt.Fprintln(os.Stderr, "idlewake: -n must be at least 1, -window at least 1s, -count at least 1")
		os.Exit(2)
	}
	if m := os.Getenv(modeEnv); m != "" {
		if err := child(m, *n, *window); err != nil {
			fmt.Fprintln(os.Stderr, "idlewake:", err)
			os.Exit(1)
		}
		return
	}
	if err := parent(*n, *window, *count); err != nil {
		fmt.Fprintln(os.Stderr, "idlewake:", err)
		os.Exit(1)
	}
}

func parent(n int, window time.Duration, count int) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	runs := make(map[string][]result)
	for rep := range count {
		for i := range modes {
			m := modes[(i+rep)%len(modes)]
			fmt.Fprintf(os.Stderr, "idlewake: repetition %d/%d, %s\n", rep+1, count, m)
			cmd := exec.Command(exe, fmt.Sprintf("-n=%d", n), fmt.Sprintf("-window=%s", window))
			cmd.Env = append(os.Environ(), modeEnv+"="+m)
			cmd.Stderr = os.Stderr
			out, err := cmd.Output()
			if err != nil {
				return fmt.Errorf("%s: %w", m, err)
			}
			var r result
			if err := json.Unmarshal(out, &r); err != nil {
				return fmt.Errorf("%s: %w", m, err)
			}
			runs[m] = append(runs[m], r)
		}
	}
	fmt.Printf("%d deadlines an hour out, %s window, %d repetitions, medians\n\n", n, window, count)
	fmt.Println("| mode | thread wake-ups/s | CPU ms/s | owner wake-ups in the window |")
	fmt.Println("|---|--:|--:|--:|")
	for _, m := range modes {
		rs := runs[m]
		fmt.Printf("| %s | %.2f | %.3f | %s |\n", m,
			median(rs, func(r result) float64 { return r.CtxSwPerSec }),
			median(rs, func(r result) float64 { return r.CPUMsPerSec }),
			wakeups(m, rs))
	}
	return nil
}

func wakeups(mode string, rs []result) string {
	if mode != "scheduler" {
		return "-"
	}
	return fmt.Sprintf("%.0f", median(rs, func(r result) float64 { return float64(r.OwnerWakeups) }))
}

func median(rs []result, f func(result) float64) float64 {
	v := make([]float64, len(rs))
	for i, r := range rs {
		v[i] = f(r)
	}
	slices.Sort(v)
	return v[len(v)/2]
}

func child(mode string, n int, window time.Duration) error {
	var s *schedule.Scheduler
	switch mode {
	case "bare":
		if err := ants.ReleaseTimeout(5 * time.Second); err != nil {
			return err
		}
	case "ants":
	case "runtime":
		timers := make([]*time.Timer, n)
		for i := range timers {
			timers[i] = time.AfterFunc(time.Hour+time.Duration(i)*time.Millisecond, func() {})
		}
		defer func() {
			for _, t := range timers {
				t.Stop()
			}
		}()
	case "scheduler":
		var err error
		if s, err = schedule.New(8); err != nil {
			return err
		}
		defer s.Shutdown()
		for i := range n {
			if _, err := s.ScheduleOne(func() {}, time.Hour+time.Duration(i)*time.Millisecond); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("unknown mode %q", mode)
	}
	// Collect the set-up's garbage and return freed memory now, so that the
	// runtime's background scavenger has nothing to do in the window.
	debug.FreeOSMemory()
	time.Sleep(settle)
	var w0 uint64
	if s != nil {
		w0 = s.Stats().Wakeups
	}
	u0, err := usage()
	if err != nil {
		return err
	}
	t0 := time.Now()
	time.Sleep(window)
	u1, err := usage()
	if err != nil {
		return err
	}
	secs := time.Since(t0).Seconds()
	r := result{
		CtxSwPerSec:   float64(u1.ctxsw-u0.ctxsw) / secs,
		CPUMsPerSec:   float64(u1.cpu-u0.cpu) / float64(time.Millisecond) / secs,
		WindowSeconds: secs,
	}
	if s != nil {
		r.OwnerWakeups = s.Stats().Wakeups - w0
	}
	return json.NewEncoder(os.Stdout).Encode(r)
}

type use struct {
	cpu   time.Duration
	ctxsw int64
}

// usage reads getrusage(RUSAGE_SELF), which on Linux covers every thread
// of the process. Only voluntary context switches count: each is a thread
// going to sleep, so they count wake-ups; involuntary ones count the other
// programs on the machine.
func usage() (use, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return use{}, err
	}
	return use{
		cpu:   time.Duration(ru.Utime.Nano() + ru.Stime.Nano()),
		ctxsw: ru.Nvcsw,
	}, nil
}
