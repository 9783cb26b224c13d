package main

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"
)

// config holds the sizes of every workload; the parent passes it on to each
// child process.
type config struct {
	Workers        int           `json:"workers"`
	AddN           int           `json:"add_n"`
	Devices        int           `json:"devices"`
	Heartbeats     int           `json:"heartbeats"`
	FireN          int           `json:"fire_n"`
	FireWindow     time.Duration `json:"fire_window_ns"`
	FireDense      time.Duration `json:"fire_dense_window_ns"`
	BurstN         int           `json:"burst_n"`
	ParallelN      int           `json:"parallel_n"`
	IdleN          int           `json:"idle_n"`
	Idle           time.Duration `json:"idle_ns"`
	CorrectDevices int           `json:"correct_devices"`
	CorrectFor     time.Duration `json:"correct_for_ns"`
	KeyedKeys      int           `json:"keyed_keys,omitempty"`
	KeyedBeats     int           `json:"keyed_beats,omitempty"`
	KeyedTimeout   time.Duration `json:"keyed_timeout_ns,omitempty"`
	SpikeN         int           `json:"spike_n,omitempty"`
	Seed           uint64        `json:"seed"`
}

// metrics are the named figures one child run produces.
type metrics map[string]float64

// column is one figure of a workload's table.
type column struct {
	Key   string // metric name
	Label string // table header
	Fmt   string // fmt verb for the value
	Ratio bool   // print the ratio to the runtime's figure
}

// workload is one benchmark scenario, run in a fresh process per
// implementation.
type workload struct {
	Name  string
	Title string
	// What describes the workload for the report.
	What string
	// Columns are the figures shown in its table.
	Columns []column
	// Skip reports why the workload cannot run on an implementation, or "".
	Skip func(im impl) string
	// Run measures one implementation once.
	Run func(im impl, c config, r *rand.Rand) (metrics, []string, error)
}

var workloads []workload

func registerWorkload(w workload) { workloads = append(workloads, w) }

// workloadOrder is the order in which workloads run and are reported.
var workloadOrder = []string{
	"add", "heartbeat-reset", "heartbeat-mixed", "heartbeat-earlier", "heartbeat-canceladd", "fire", "fire-dense", "burst",
	"parallel", "idle", "spike-cancel", "spike-fire", "correct-reset", "correct-canceladd", "keyed-uint64", "keyed-string",
}

// sortWorkloads puts workloads in workloadOrder; unlisted ones go last.
func sortWorkloads() {
	rank := func(name string) int {
		if i := slices.Index(workloadOrder, name); i >= 0 {
			return i
		}
		return len(workloadOrder)
	}
	slices.SortStableFunc(workloads, func(a, b workload) int { return rank(a.Name) - rank(b.Name) })
}

func findWorkload(name string) (workload, bool) {
	for _, w := range workloads {
		if w.Name == name {
			return w, true
		}
	}
	return workload{}, false
}

// noop is the job of every timer that is not expected to fire; sharing one
// function value keeps the job's own cost out of the figures.
func noop() {}

// farDelays returns n random delays in [base, base+spread), so that heap
// based implementations see deadlines in no particular order.
func farDelays(r *rand.Rand, n int, base, spread time.Duration) []time.Duration {
	ds := make([]time.Duration, n)
	for i := range ds {
		ds[i] = base + time.Duration(r.Int64N(int64(spread)))
	}
	return ds
}

// startImpl builds a running instance of im without handle storage; a
// workload that counts memory sizes it with countedPrepare.
func startImpl(im impl, c config) (Timers, error) {
	t, err := im.New(c.Workers)
	if err != nil {
		return nil, fmt.Errorf("creating %s: %w", im.Name, err)
	}
	return t, nil
}

// newTimers builds a running instance of im with handle storage for n.
func newTimers(im impl, c config, n int) (Timers, error) {
	t, err := startImpl(im, c)
	if err != nil {
		return nil, err
	}
	t.Prepare(n)
	return t, nil
}

// addAll arms timers 0..n-1 with the given delays and job, stopping at the
// first error.
func addAll(t Timers, ds []time.Duration, f func()) error {
	for i, d := range ds {
		noteProgress(i)
		if err := t.Add(i, d, f); err != nil {
			return fmt.Errorf("add %d: %w", i, err)
		}
	}
	return nil
}
