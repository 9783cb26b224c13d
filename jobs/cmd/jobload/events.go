package main

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"time"
)

// event is one line of a worker's standard output: jobworker's contract,
// which the asynq workers of this command follow as well. Times are Unix
// milliseconds.
type event struct {
	Event   string `json:"event"`
	Job     string `json:"job"`
	Attempt int    `json:"attempt"`
	Due     int64  `json:"due"`
	At      int64  `json:"at"`
	Node    string `json:"node"`
}

// start is one attempt's start, as a collector keeps it.
type start struct {
	attempt int
	due, at int64 // Unix milliseconds
	node    string
}

// collector gathers the start lines of a run's workers and counts the
// other events. It is safe for concurrent use: each worker's output is read
// by a goroutine of its own.
type collector struct {
	mu     sync.Mutex
	starts map[string][]start
	ends   map[string]int // done, fail, dead and superseded lines, by event
	ready  map[string]bool
	// finished holds the jobs that have reached done or dead.
	finished map[string]bool
	// changed is signalled (without blocking) when a job starts for the
	// first time or a worker is ready.
	changed chan struct{}
}

func newCollector() *collector {
	return &collector{starts: make(map[string][]start), ends: make(map[string]int),
		ready: make(map[string]bool), finished: make(map[string]bool), changed: make(chan struct{}, 1)}
}

// line records one line of a worker's output; a line that is not a JSON
// object (an embedded server's "nats on" line) is ignored.
func (c *collector) line(b []byte) {
	if len(b) == 0 || b[0] != '{' {
		return
	}
	var e event
	if json.Unmarshal(b, &e) != nil {
		return
	}
	c.add(e)
}

// add records e.
func (c *collector) add(e event) {
	c.mu.Lock()
	first := false
	switch e.Event {
	case "start":
		first = len(c.starts[e.Job]) == 0
		c.starts[e.Job] = append(c.starts[e.Job], start{attempt: e.Attempt, due: e.Due, at: e.At, node: e.Node})
	case "ready":
		first = true
		c.ready[e.Node] = true
	case "done", "dead":
		c.ends[e.Event]++
		first = !c.finished[e.Job]
		c.finished[e.Job] = true
	default:
		c.ends[e.Event]++
	}
	c.mu.Unlock()
	if first {
		select {
		case c.changed <- struct{}{}:
		default:
		}
	}
}

// readyCount returns how many workers have said they are ready.
func (c *collector) readyCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.ready)
}

// startedCount returns how many jobs have started at least once.
func (c *collector) startedCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.starts)
}

// finishedCount returns how many jobs have reached done or dead.
func (c *collector) finishedCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.finished)
}

// waitFor waits until cond holds, checking it whenever the collector
// changes and at least every tick, or until deadline or the end of ctx; it
// returns whether cond held.
func (c *collector) waitFor(ctx context.Context, deadline time.Time, cond func() bool) bool {
	const tick = 100 * time.Millisecond
	for !cond() {
		wait := time.Until(deadline)
		if wait <= 0 {
			return false
		}
		t := time.NewTimer(min(wait, tick))
		select {
		case <-c.changed:
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return false
		}
		t.Stop()
	}
	return true
}

// outcome is what a collector found about a set of expected jobs.
type outcome struct {
	Expected int // jobs that should have started
	Started  int // of them, those that started at least once
	// Lost are the expected jobs that never started.
	Lost int
	// Unfinished are the expected jobs that never reached done or dead:
	// after a kill, the jobs lost.
	Unfinished int
	// Twice counts the attempts (a job and an attempt number) that started
	// more than once.
	Twice int
	// Repeated counts the jobs that started more than once, whatever the
	// attempt: no job of a load fails, so a second start is a repeat
	// (asynq numbers a task recovered from a killed worker as its next
	// attempt, jobworker as the same).
	Repeated int
	// Lateness holds, for each expected job's first start, at − due in
	// microseconds (the contract's times are milliseconds), sorted.
	Lateness []int64
	// Early counts first starts before their due time.
	Early int
	// EndedUnseen counts the jobs taken out of Unfinished because the
	// engine holds no record of them: their last attempt ran on the killed
	// worker, which recorded its end and was killed before it printed the
	// end line. No job of a load is cancelled or replaced, so a job the
	// engine no longer holds is one whose end was recorded.
	EndedUnseen int
}

// outcome returns what the collector found about the jobs named by
// keys(i) for i in [0, n).
func (c *collector) outcome(n int, keys func(i int) string) outcome {
	c.mu.Lock()
	defer c.mu.Unlock()
	o := outcome{Expected: n, Lateness: make([]int64, 0, n)}
	for i := range n {
		k := keys(i)
		if !c.finished[k] {
			o.Unfinished++
		}
		ss := c.starts[k]
		if len(ss) == 0 {
			o.Lost++
			continue
		}
		o.Started++
		late := ss[0].at - ss[0].due
		if late < 0 {
			o.Early++
		}
		o.Lateness = append(o.Lateness, late*1000)
		if len(ss) > 1 {
			o.Repeated++
		}
		for j := 1; j < len(ss); j++ {
			if slices.ContainsFunc(ss[:j], func(s start) bool { return s.attempt == ss[j].attempt }) {
				o.Twice++
			}
		}
	}
	slices.Sort(o.Lateness)
	return o
}

// unfinishedOn returns the keys(i), i in [0, n), that have not reached
// done or dead and whose last start was on node.
func (c *collector) unfinishedOn(n int, keys func(i int) string, node string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for i := range n {
		k := keys(i)
		if ss := c.starts[k]; !c.finished[k] && len(ss) > 0 && ss[len(ss)-1].node == node {
			out = append(out, k)
		}
	}
	return out
}

// lastRecovery returns the latest start, in Unix milliseconds, that
// recovered a job of keys(i), i in [0, n): the last start of a job that
// started more than once (an attempt abandoned by a killed worker and
// started again) or whose first start was more than late after its due
// time (a pending job that a killed worker held until another took it
// over). It returns false if no job needed recovering.
func (c *collector) lastRecovery(n int, keys func(i int) string, late time.Duration) (int64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var last int64
	found := false
	for i := range n {
		ss := c.starts[keys(i)]
		if len(ss) == 0 {
			continue
		}
		if len(ss) > 1 || ss[0].at-ss[0].due > late.Milliseconds() {
			if at := ss[len(ss)-1].at; !found || at > last {
				last, found = at, true
			}
		}
	}
	return last, found
}
