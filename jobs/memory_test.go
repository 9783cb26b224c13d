package jobs_test

import (
	"flag"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/go-schedule/schedule/jobs"
	"github.com/stretchr/testify/require"
)

var (
	heavy       = flag.Bool("jobs.heavy", false, "run the heavy tests (memory per pending job, a load of 100,000 lines)")
	heavyJobs   = flag.Int("jobs.pending", 200_000, "pending jobs in the heavy memory test")
	heavyReport = flag.Bool("jobs.report", true, "log the heavy tests' figures")
)

// TestMemoryPerPendingJobInAWorker holds -jobs.pending jobs with 100-byte
// payloads, due in an hour, in one worker and reports the heap they cost.
// The engine runs in the same process, so the figure is an upper bound:
// it includes what the server keeps for the worker's watches.
func TestMemoryPerPendingJobInAWorker(t *testing.T) {
	if !*heavy {
		t.Skip("heavy: run with -jobs.heavy")
	}
	_, url := startServer(t)
	c := openClient(t, url, "mem")
	payload := []byte(strings.Repeat("p", 100))
	l := c.NewLoader()
	due := time.Now().Add(time.Hour)
	for i := range *heavyJobs {
		require.NoError(t, l.Add(ctxOf(t), fmt.Sprintf("device-%08d", i), due, payload))
	}
	failed, err := l.Wait(ctxOf(t))
	require.NoError(t, err)
	require.Zero(t, failed)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var evs events
	w := startWorker(t, url, "mem", "w1", succeed, &evs, jobs.WorkerConfig{Lease: 15 * time.Second})
	eventually(t, 5*time.Minute, func() bool { return w.Pending() == *heavyJobs }, "the worker holds every job")
	runtime.GC()
	runtime.ReadMemStats(&after)
	per := float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / float64(*heavyJobs)
	if *heavyReport {
		t.Logf("%d pending jobs, 100-byte payloads: %.0f B of heap per pending job (worker and the server's share of serving it)", *heavyJobs, per)
	}
	runtime.KeepAlive(w)
}
