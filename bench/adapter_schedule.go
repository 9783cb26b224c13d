package main

import (
	"fmt"
	"time"

	"github.com/go-schedule/schedule"
	"github.com/go-schedule/schedule/eagercancel"
	"github.com/go-schedule/schedule/lazycancel"
)

// scheduleTimers adapts a go-schedule Scheduler. Scheduling is
// asynchronous, so Settle polls the scheduler's Stats until the owner
// goroutine has applied every queued request.
type scheduleTimers struct {
	s   *schedule.Scheduler
	ids []schedule.TaskID
}

func newScheduleTimers(build func(int, ...schedule.Option) (*schedule.Scheduler, error)) func(int) (Timers, error) {
	return func(workers int) (Timers, error) {
		s, err := build(workers)
		if err != nil {
			return nil, err
		}
		return &scheduleTimers{s: s}, nil
	}
}

func init() {
	register(impl{
		Name: "lazycancel", Label: "go-schedule lazycancel",
		ResetCall: "Reset", CancelAdd: "CancelTask+ScheduleOne", Handle: "TaskID",
		New: newScheduleTimers(lazycancel.New),
	})
	register(impl{
		Name: "eagercancel", Label: "go-schedule eagercancel",
		ResetCall: "Reset", CancelAdd: "CancelTask+ScheduleOne", Handle: "TaskID",
		New: newScheduleTimers(eagercancel.New),
	})
}

func (t *scheduleTimers) Prepare(n int) { t.ids = make([]schedule.TaskID, n) }

func (t *scheduleTimers) Add(i int, d time.Duration, f func()) error {
	id, err := t.s.ScheduleOne(f, d)
	t.ids[i] = id
	return err
}

func (t *scheduleTimers) Cancel(i int) bool { return t.s.CancelTask(t.ids[i]) }

func (t *scheduleTimers) Reset(i int, d time.Duration) error {
	if !t.s.Reset(t.ids[i], d) {
		return fmt.Errorf("Reset(%d) reported the task not pending", t.ids[i])
	}
	return nil
}

// Settle waits until the heap holds exactly the live tasks plus the
// tombstones the scheduler reports, and the pending count is live, on two
// polls in a row.
func (t *scheduleTimers) Settle(live int) error {
	deadline := time.Now().Add(2 * time.Minute)
	stable := 0
	for stable < 2 {
		st := t.s.Stats()
		if st.Pending == live && st.HeapEntries-st.Tombstones == live {
			stable++
		} else {
			stable = 0
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("scheduler did not settle: pending %d, heap entries %d, tombstones %d, want %d live",
				st.Pending, st.HeapEntries, st.Tombstones, live)
		}
		time.Sleep(20 * time.Microsecond)
	}
	return nil
}

func (t *scheduleTimers) Close() { t.s.Shutdown() }

// settleBefore waits, at most until limit, for a go-schedule instance to
// have applied the adds queued so far (live tasks in its heap); for other
// implementations, which apply every call before returning, it returns at
// once. The fire workloads call it so that applying queued adds is not
// charged to the firing window.
func settleBefore(t Timers, live int, limit time.Time) {
	s, ok := t.(*scheduleTimers)
	if !ok {
		return
	}
	for time.Now().Before(limit) {
		st := s.s.Stats()
		if st.HeapEntries-st.Tombstones >= live || st.Started > 0 {
			return
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// schedStats exposes the scheduler's counters to workloads that report
// them; ok is false for other implementations.
func schedStats(t Timers) (schedule.Stats, bool) {
	if s, ok := t.(*scheduleTimers); ok {
		return s.s.Stats(), true
	}
	return schedule.Stats{}, false
}
