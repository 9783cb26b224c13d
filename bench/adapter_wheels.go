package main

import (
	"time"

	"github.com/RussellLuo/timingwheel"
	antlabs "github.com/antlabs/timer"
	"github.com/zeromicro/go-zero/core/collection"
)

// Wheel ticks. A timing wheel cannot fire closer to a deadline than one
// tick, so the tick is printed next to each wheel's results. antlabs/timer
// has a fixed 10 ms tick; the other two are set to 1 ms, the finest each
// accepts in practice. go-zero also runs at the 1 s tick with 300 slots
// that go-zero itself uses (core/collection.Cache, the cache cleaner) and
// its users typically pick, so that its lateness and idle CPU are also
// shown at the setting it is used with.
const (
	russellTick     = time.Millisecond
	russellWheel    = 512
	gozeroTick      = time.Millisecond
	gozeroSlots     = 60000 // one revolution per minute
	gozeroCoarse    = time.Second
	gozeroCoarseN   = 300 // one revolution per 5 minutes, as go-zero's Cache
	antlabsFixedTic = 10 * time.Millisecond
)

func init() {
	register(impl{
		Name: "russellluo", Label: "RussellLuo/timingwheel", Tick: russellTick,
		CancelAdd: "Stop+AfterFunc", Handle: "*timingwheel.Timer",
		New: func(int) (Timers, error) {
			tw := timingwheel.NewTimingWheel(russellTick, russellWheel)
			tw.Start()
			return &russellTimers{tw: tw}, nil
		},
	})
	register(impl{
		Name: "gozero", Label: "go-zero collection.TimingWheel", Tick: gozeroTick,
		ResetCall: "MoveTimer", CancelAdd: "RemoveTimer+SetTimer", Handle: "none (keyed by the caller's int key)",
		New: newGozero(gozeroTick, gozeroSlots),
	})
	register(impl{
		Name: "gozero-1s", Label: "go-zero collection.TimingWheel", Tick: gozeroCoarse,
		ResetCall: "MoveTimer", CancelAdd: "RemoveTimer+SetTimer", Handle: "none (keyed by the caller's int key)",
		New: newGozero(gozeroCoarse, gozeroCoarseN),
	})
	register(impl{
		Name: "antlabs", Label: "antlabs/timer", Tick: antlabsFixedTic,
		ResetCall: "TimeNoder.Reset", CancelAdd: "Stop+AfterFunc", Handle: "TimeNoder (interface)",
		New: func(int) (Timers, error) {
			tm := antlabs.NewTimer()
			go tm.Run()
			return &antlabsTimers{tm: tm}, nil
		},
	})
}

// russellTimers adapts RussellLuo/timingwheel, a hierarchical wheel driven
// by a delay queue. It has no re-arm call; each firing runs on a new
// goroutine.
type russellTimers struct {
	tw     *timingwheel.TimingWheel
	timers []*timingwheel.Timer
}

func (t *russellTimers) Prepare(n int) { t.timers = make([]*timingwheel.Timer, n) }

func (t *russellTimers) Add(i int, d time.Duration, f func()) error {
	t.timers[i] = t.tw.AfterFunc(d, f)
	return nil
}

func (t *russellTimers) Cancel(i int) bool              { return t.timers[i].Stop() }
func (t *russellTimers) Reset(int, time.Duration) error { return errNoReset }
func (t *russellTimers) Settle(int) error               { return nil }
func (t *russellTimers) Close()                         { t.tw.Stop() }

// gozeroTimers adapts go-zero's core/collection.TimingWheel. Timers are
// keyed by their index; every call is a rendezvous with the wheel's
// goroutine, and due tasks of one tick run one after another on a single
// new goroutine.
type gozeroTimers struct {
	tw *collection.TimingWheel
}

// newGozero returns the constructor of a go-zero wheel with the given tick
// and number of slots, whose job value is the function to run.
func newGozero(tick time.Duration, slots int) func(int) (Timers, error) {
	return func(int) (Timers, error) {
		tw, err := collection.NewTimingWheel(tick, slots, func(_, v any) { v.(func())() })
		if err != nil {
			return nil, err
		}
		return &gozeroTimers{tw: tw}, nil
	}
}

func (t *gozeroTimers) Prepare(int) {}

func (t *gozeroTimers) Add(i int, d time.Duration, f func()) error {
	return t.tw.SetTimer(i, f, d)
}

func (t *gozeroTimers) Cancel(i int) bool { return t.tw.RemoveTimer(i) == nil }

func (t *gozeroTimers) Reset(i int, d time.Duration) error { return t.tw.MoveTimer(i, d) }

func (t *gozeroTimers) Settle(int) error { return nil }
func (t *gozeroTimers) Close()           { t.tw.Stop() }

// antlabsTimers adapts antlabs/timer in its default (timing wheel) mode,
// whose tick is fixed at 10 ms. Each firing runs on a new goroutine.
type antlabsTimers struct {
	tm    antlabs.Timer
	nodes []antlabs.TimeNoder
}

func (t *antlabsTimers) Prepare(n int) { t.nodes = make([]antlabs.TimeNoder, n) }

func (t *antlabsTimers) Add(i int, d time.Duration, f func()) error {
	t.nodes[i] = t.tm.AfterFunc(d, f)
	return nil
}

func (t *antlabsTimers) Cancel(i int) bool { return t.nodes[i].Stop() }

func (t *antlabsTimers) Reset(i int, d time.Duration) error {
	t.nodes[i].Reset(d)
	return nil
}

func (t *antlabsTimers) Settle(int) error { return nil }
func (t *antlabsTimers) Close()           { t.tm.Stop() }
