package main

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/go-schedule/schedule"
	"github.com/go-schedule/schedule/eagercancel"
	"github.com/go-schedule/schedule/lazycancel"
)

// workload is one work shape running in the host on one implementation.
type workload struct {
	// unit names what work counts: "resets" or "runs".
	unit string
	// expectedPerS is the rate of work the shape is meant to do.
	expectedPerS float64
	// sched is the go-schedule Scheduler doing the timer work, nil on the
	// runtime's timers.
	sched *schedule.Scheduler
	// work counts resets done (gateway) or jobs run (fire); expired counts
	// gateway timeouts that fired; misses counts resets that found their
	// timer not pending and reschedules that failed.
	work, expired, misses atomic.Uint64
	// halt stops the work and the timers.
	halt func()
}

// progress is a workload's counters at one instant.
type progress struct {
	work, expired, misses uint64
}

func (w *workload) progress() progress {
	return progress{work: w.work.Load(), expired: w.expired.Load(), misses: w.misses.Load()}
}

// startWorkload sets up the named shape on the named implementation and
// starts it.
func startWorkload(shape, impl string, c config) (*workload, error) {
	switch shape {
	case shapeGateway:
		return startGateway(impl, c)
	case shapeFire:
		return startFire(impl, c)
	}
	return nil, fmt.Errorf("unknown shape %q", shape)
}

// newScheduler builds the named go-schedule strategy.
func newScheduler(impl string, workers int) (*schedule.Scheduler, error) {
	switch impl {
	case "lazycancel":
		return lazycancel.New(workers)
	case "eagercancel":
		return eagercancel.New(workers)
	}
	return nil, fmt.Errorf("unknown implementation %q", impl)
}

// startGateway sets up c.Keys heartbeat timeouts and starts one goroutine
// that resets each key once per c.ResetEvery, round-robin, on a ticker of
// c.Tick (driveResets). A key expires only if its reset comes more than
// c.Timeout − c.ResetEvery late, so with a healthy host none does.
//
// The keys stand for devices whose heartbeats arrive evenly spread in
// time, as they do from many devices that connected at different moments:
// key i is due for a reset at i·c.ResetEvery/c.Keys into every period,
// and its deadline is that instant plus c.Timeout. The keys start as such
// a gateway is after a while, not as if all had connected at once: key i's
// first deadline is where its reset one period before the first here
// would have put it (firstTimeout). Postponed deadlines thus reach the top
// of the timer heaps at the steady rate from c.Timeout − c.ResetEvery on,
// rather than all together after c.Timeout.
func startGateway(impl string, c config) (*workload, error) {
	w := &workload{unit: "resets", expectedPerS: float64(c.Keys) / c.ResetEvery.Seconds()}
	firstTimeout := func(i int) time.Duration {
		return c.Timeout - c.ResetEvery + time.Duration(float64(c.ResetEvery)*float64(i)/float64(c.Keys))
	}
	var reset func(i int, d time.Duration) bool
	var stopTimers func()
	if impl == implRuntime {
		expire := func() { w.expired.Add(1) }
		timers := make([]*time.Timer, c.Keys)
		for i := range timers {
			timers[i] = time.AfterFunc(firstTimeout(i), expire)
		}
		reset = func(i int, d time.Duration) bool { return timers[i].Reset(d) }
		stopTimers = func() {
			for _, t := range timers {
				t.Stop()
			}
		}
	} else {
		s, err := newScheduler(impl, c.Workers)
		if err != nil {
			return nil, err
		}
		expire := func(schedule.TaskID, any) { w.expired.Add(1) }
		ids := make([]schedule.TaskID, c.Keys)
		for i := range ids {
			// The argument is the key's own slot, as a gateway would pass
			// its device: a pointer, so that no task allocates a closure.
			if ids[i], err = s.ScheduleOneWith(expire, &ids[i], firstTimeout(i)); err != nil {
				s.Shutdown()
				return nil, err
			}
		}
		reset = func(i int, d time.Duration) bool { return s.Reset(ids[i], d) }
		w.sched, stopTimers = s, s.Shutdown
	}

	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		driveResets(w, c, reset, quit)
	}()
	w.halt = func() {
		close(quit)
		<-done
		stopTimers()
	}
	return w, nil
}

// driveResets resets keys round-robin until quit closes. Reset number n is
// due at n·c.ResetEvery/c.Keys after the start; on every tick the
// goroutine makes the resets that have come due since the last, so that a
// late or dropped tick does not let keys fall behind. Each reset sets the
// deadline its due instant would have: c.Timeout shortened by how late the
// tick serves it. The deadlines thus stay evenly spread, as a gateway's
// are, rather than bunched at the ticks: the ticker is how the load is
// driven cheaply, not part of the load.
func driveResets(w *workload, c config, reset func(i int, d time.Duration) bool, quit <-chan struct{}) {
	tick := time.NewTicker(c.Tick)
	defer tick.Stop()
	start := time.Now()
	every := float64(c.ResetEvery) / float64(c.Keys) // ns between due instants
	next, done := 0, uint64(0)
	for {
		select {
		case <-quit:
			return
		case now := <-tick.C:
			elapsed := now.Sub(start)
			target := uint64(float64(elapsed) / every)
			for ; done < target; done++ {
				late := elapsed - time.Duration(float64(done)*every)
				if !reset(next, c.Timeout-late) {
					w.misses.Add(1)
				}
				if next++; next == c.Keys {
					next = 0
				}
			}
			w.work.Store(done)
		}
	}
}

// farFuture is the first delay of a fire timer on the runtime: long enough
// that it cannot run before its handle is stored, after which it is reset
// to its real delay.
const farFuture = time.Hour

// startFire sets up c.FireTasks one-shots, each due at a random delay in
// (0, c.FireMax] and scheduled again with a new random delay whenever it
// runs.
func startFire(impl string, c config) (*workload, error) {
	// The mean delay is half of c.FireMax, so each task runs twice per
	// c.FireMax on average.
	w := &workload{unit: "runs", expectedPerS: float64(c.FireTasks) / (c.FireMax.Seconds() / 2)}
	delay := func() time.Duration { return time.Duration(rand.Int64N(int64(c.FireMax))) + 1 }

	if impl == implRuntime {
		var stopped atomic.Bool
		timers := make([]*time.Timer, c.FireTasks)
		for i := range timers {
			timers[i] = time.AfterFunc(farFuture, func() {
				w.work.Add(1)
				// Re-arming its own timer allocates nothing: the fairest
				// use of the runtime's timers for this shape.
				if !stopped.Load() {
					timers[i].Reset(delay())
				}
			})
		}
		for _, t := range timers {
			t.Reset(delay())
		}
		w.halt = func() {
			stopped.Store(true)
			for _, t := range timers {
				t.Stop()
			}
		}
		return w, nil
	}

	s, err := newScheduler(impl, c.Workers)
	if err != nil {
		return nil, err
	}
	var job func(schedule.TaskID, any)
	job = func(_ schedule.TaskID, arg any) {
		w.work.Add(1)
		if _, err := s.ScheduleOneWith(job, arg, delay()); err != nil && !errors.Is(err, schedule.ErrShutdown) {
			w.misses.Add(1)
		}
	}
	// Each task's argument is a pointer to its own slot, as a program would
	// pass the object a job works on.
	tasks := make([]int, c.FireTasks)
	for i := range tasks {
		tasks[i] = i
		if _, err := s.ScheduleOneWith(job, &tasks[i], delay()); err != nil {
			s.Shutdown()
			return nil, err
		}
	}
	w.sched, w.halt = s, s.Shutdown
	return w, nil
}
