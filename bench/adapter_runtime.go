package main

import (
	"time"

	"github.com/panjf2000/ants/v2"
)

// runtimeTimers adapts the Go runtime's timers: time.AfterFunc, Stop, and
// Timer.Reset for the heartbeat path. Each firing runs on a new goroutine.
type runtimeTimers struct {
	timers []*time.Timer
}

// antsTimers is the hand-rolled alternative: time.AfterFunc whose callback
// submits the job to an ants pool, bounding the goroutines that run jobs.
type antsTimers struct {
	runtimeTimers
	pool *ants.Pool
}

func init() {
	register(impl{
		Name: "runtime", Label: "Go runtime (time.AfterFunc)",
		ResetCall: "Timer.Reset", CancelAdd: "Stop+AfterFunc", Handle: "*time.Timer",
		New: func(int) (Timers, error) { return &runtimeTimers{}, nil },
	})
	register(impl{
		Name: "runtime-ants", Label: "AfterFunc + ants pool",
		ResetCall: "Timer.Reset", CancelAdd: "Stop+AfterFunc", Handle: "*time.Timer",
		New: func(workers int) (Timers, error) {
			p, err := ants.NewPool(workers)
			if err != nil {
				return nil, err
			}
			return &antsTimers{pool: p}, nil
		},
	})
}

func (t *runtimeTimers) Prepare(n int) { t.timers = make([]*time.Timer, n) }

func (t *runtimeTimers) Add(i int, d time.Duration, f func()) error {
	t.timers[i] = time.AfterFunc(d, f)
	return nil
}

func (t *runtimeTimers) Cancel(i int) bool { return t.timers[i].Stop() }

func (t *runtimeTimers) Reset(i int, d time.Duration) error {
	t.timers[i].Reset(d)
	return nil
}

func (t *runtimeTimers) Settle(int) error { return nil }

func (t *runtimeTimers) Close() {
	for _, tm := range t.timers {
		if tm != nil {
			tm.Stop()
		}
	}
}

func (t *antsTimers) Add(i int, d time.Duration, f func()) error {
	p := t.pool
	t.timers[i] = time.AfterFunc(d, func() { _ = p.Submit(f) })
	return nil
}

func (t *antsTimers) Close() {
	t.runtimeTimers.Close()
	t.pool.Release()
}
