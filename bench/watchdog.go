package main

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"time"
)

// A workload that stops making progress (an implementation deadlocked or
// livelocked) is reported by the child itself, with the stacks that show
// where it is stuck, instead of only timing out in the parent.

// progressCount is bumped by hot loops every 1024 operations, and by
// waits, so that the watchdog can tell a slow run from a stuck one.
var progressCount atomic.Int64

// stallLimit is how long the watchdog waits without progress; set by the
// -stall flag.
var stallLimit = 20 * time.Second

// noteProgress is called by hot loops with their iteration number.
func noteProgress(i int) {
	if i&1023 == 0 {
		progressCount.Add(1)
	}
}

// startWatchdog reports res as failed and exits the process when
// progressCount has not moved at any of its once-a-second checks for
// stallLimit. Counting checks rather than wall time keeps a process whose
// goroutines were all starved (the runtime starting a million timer
// goroutines in one go delays the watchdog's own timer too) from being
// reported stuck the moment it gets going again.
func startWatchdog(res runResult) {
	go func() {
		const every = time.Second
		last, misses := progressCount.Load(), 0
		for {
			time.Sleep(every)
			if n := progressCount.Load(); n != last {
				last, misses = n, 0
				continue
			}
			misses++
			if time.Duration(misses)*every < stallLimit {
				continue
			}
			res.Error = fmt.Sprintf("stuck: no progress for %v; goroutines inside the library: %s",
				stallLimit, stuckStacks())
			enc := json.NewEncoder(os.Stdout)
			enc.SetEscapeHTML(false)
			_ = enc.Encode(res)
			os.Exit(0)
		}
	}()
}

// stuckStacks returns the first frames of every goroutine that is inside
// one of the implementations under test or the benchmark's own loops.
func stuckStacks() string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if !strings.Contains(g, "Timers)") && !strings.Contains(g, "main.runKeyed") && !strings.Contains(g, "(*keyed") {
			continue
		}
		lines := strings.Split(g, "\n")
		var frames []string
		for k := 1; k < len(lines) && len(frames) < 6; k += 2 {
			f := strings.TrimSpace(lines[k])
			if i := strings.LastIndex(f, "("); i > 0 {
				f = f[:i]
			}
			frames = append(frames, f)
		}
		out = append(out, strings.SplitN(lines[0], " ", 3)[2]+" "+strings.Join(frames, " <- "))
	}
	return strings.Join(out, " || ")
}
