package main

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/go-schedule/schedule"
	"github.com/go-schedule/schedule/eagercancel"
	"github.com/go-schedule/schedule/lazycancel"
)

// timers is what a child drives: slots 0..n-1 hold the pending tasks the
// curve is measured at, slots n.. the extra ones the add, cancel and fire
// rounds come and go with. Every call comes from one goroutine.
type timers interface {
	add(slot int, d time.Duration) error
	// reset moves pending task slot to d from now; it reports false if
	// the implementation said the task was not pending.
	reset(slot int, d time.Duration) bool
	cancel(slot int) bool
	// settle waits until every call so far has been applied, live tasks
	// being then pending; the runtime's timers apply every call at once.
	settle(live int) error
	close()
}

// implNames lists the implementations in report order. The runtime comes
// first: the table sets each of ours beside it.
var implNames = []string{"runtime", "lazy", "eager", "lazy-shared"}

// implDoc says what each implementation is, for the table's legend.
var implDoc = map[string]string{
	"runtime":     "time.AfterFunc, Timer.Reset, Timer.Stop; a closure per timer",
	"lazy":        "lazycancel.New, ScheduleOne with a closure per task",
	"eager":       "eagercancel.New, ScheduleOne with a closure per task",
	"lazy-shared": "lazycancel.New, ScheduleOneWith: one job func for all tasks, nil arg (no heap pointer per task)",
}

// workers is the pool size of our schedulers: the fire rounds' jobs only
// count, so two workers, one per core here, keep up.
const workers = 2

// fires counts job runs; the fire rounds wait on it.
var fires struct {
	n      atomic.Int64
	target atomic.Int64
	done   atomic.Pointer[chan struct{}]
}

// fired is every job's body: the run that reaches the target closes the
// round's channel.
func fired(int) {
	if fires.n.Add(1) == fires.target.Load() {
		close(*fires.done.Load())
	}
}

// expectFires arms the counter for k runs and returns the channel closed by
// the k-th.
func expectFires(k int) <-chan struct{} {
	ch := make(chan struct{})
	fires.n.Store(0)
	fires.done.Store(&ch)
	fires.target.Store(int64(k))
	return ch
}

func newTimers(name string, slots int) (timers, error) {
	switch name {
	case "runtime":
		return &runtimeTimers{t: make([]*time.Timer, slots)}, nil
	case "lazy", "lazy-shared":
		s, err := lazycancel.New(workers)
		if err != nil {
			return nil, err
		}
		return &ourTimers{s: s, ids: make([]schedule.TaskID, slots), shared: name == "lazy-shared"}, nil
	case "eager":
		s, err := eagercancel.New(workers)
		if err != nil {
			return nil, err
		}
		return &ourTimers{s: s, ids: make([]schedule.TaskID, slots)}, nil
	}
	return nil, fmt.Errorf("unknown implementation %q (have %v)", name, implNames)
}

// runtimeTimers keeps a *time.Timer per slot: the handle a user keeps.
type runtimeTimers struct{ t []*time.Timer }

func (r *runtimeTimers) add(slot int, d time.Duration) error {
	r.t[slot] = time.AfterFunc(d, func() { fired(slot) })
	return nil
}

func (r *runtimeTimers) reset(slot int, d time.Duration) bool {
	// Reset reports whether the timer was pending.
	return r.t[slot].Reset(d)
}

func (r *runtimeTimers) cancel(slot int) bool { return r.t[slot].Stop() }
func (r *runtimeTimers) settle(int) error     { return nil }

func (r *runtimeTimers) close() {
	for _, t := range r.t {
		if t != nil {
			t.Stop()
		}
	}
}

// ourTimers keeps a TaskID per slot. shared schedules every task with one
// job func and a nil argument, so that a task holds no pointer into the Go
// heap: what a job table indexed by task would look like to the collector.
type ourTimers struct {
	s      *schedule.Scheduler
	ids    []schedule.TaskID
	shared bool
}

// sharedJob serves every task of lazy-shared. A real one would look its
// data up by id in the caller's own table.
func sharedJob(schedule.TaskID, any) { fired(-1) }

func (o *ourTimers) add(slot int, d time.Duration) error {
	var id schedule.TaskID
	var err error
	if o.shared {
		id, err = o.s.ScheduleOneWith(sharedJob, nil, d)
	} else {
		id, err = o.s.ScheduleOne(func() { fired(slot) }, d)
	}
	o.ids[slot] = id
	return err
}

func (o *ourTimers) reset(slot int, d time.Duration) bool { return o.s.Reset(o.ids[slot], d) }
func (o *ourTimers) cancel(slot int) bool                 { return o.s.CancelTask(o.ids[slot]) }
func (o *ourTimers) close()                               { o.s.Shutdown() }

// settle polls Stats until the heap holds live entries besides its
// tombstones on two polls in a row. Each poll wakes the owner, so polls are
// spaced by the work the owner has to catch up on.
func (o *ourTimers) settle(live int) error {
	limit := time.Now().Add(settleLimit)
	for stable := 0; stable < 2; {
		st := o.s.Stats()
		if st.Pending == live && st.HeapEntries-st.Tombstones == live {
			stable++
			continue
		}
		stable = 0
		if time.Now().After(limit) {
			return fmt.Errorf("scheduler did not settle: pending %d, heap entries %d, tombstones %d, want %d live",
				st.Pending, st.HeapEntries, st.Tombstones, live)
		}
		time.Sleep(200 * time.Microsecond)
	}
	return nil
}

// settleLimit bounds how long settle waits for the owner to apply what it
// was asked; a scheduler that takes longer is reported as an error.
var settleLimit = 30 * time.Second
