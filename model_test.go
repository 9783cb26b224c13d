package schedule_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-schedule/schedule"
	"github.com/go-schedule/schedule/internal/schedtest"
)

// This file holds a reference model of the scheduler: a plain list of tasks
// scanned in full, with none of the real scheduler's heap, slab, owner
// goroutine or pool. A harness drives the model and a real Scheduler in
// lockstep inside a testing/synctest bubble, where the fake clock makes
// every fire time exact, and compares them after every operation: return
// values, which jobs ran at which instant, Len and the Stats counters.
//
// Some jobs last a while (in fake time), so that the model covers a
// repeating task whose deadline arrives while its previous run still goes:
// that deadline is skipped. The pool is then larger than the number of
// tasks, so no job ever waits for a worker and none is late; queueing for a
// busy pool is tested in overload_test.go.

// Limits that keep one sequence cheap: each input runs in milliseconds.
const (
	modelMaxOps       = 200
	modelMaxTasks     = 128
	modelMaxRepeating = 8

	modelWatchdog = time.Minute // real time
)

// modelOpKind is what one step of a sequence does.
type modelOpKind uint8

const (
	mScheduleOne modelOpKind = iota
	mSchedule
	mCancel
	mReset
	mAdvance
	mAdvance2 // a second code for Advance, so that time moves often
	mBadArgs
	mShutdownOrTick // Shutdown when arg < 16, otherwise a short Advance
	mKinds
)

// selfAction is what a job does to its own task on one of its runs.
type selfAction uint8

const (
	actNone selfAction = iota
	actCancelSelf
	actResetSelf
	actGoexit // the job ends its goroutine with runtime.Goexit, as t.FailNow does
)

// Special targets of CancelTask and Reset.
const (
	targetZero    = 255 // TaskID 0
	targetUnknown = 254 // an ID no task ever had
)

// unknownID names a slot far beyond any this test allocates, so it can
// never be the ID of a real task.
const unknownID = schedule.TaskID(1<<32 | 1<<31)

// hugeDelay is a delay too long to represent: the task never comes due.
const hugeDelay = time.Duration(math.MaxInt64)

// modelOp is one decoded step. Every field is derived from four bytes; see
// decodeOps.
type modelOp struct {
	kind  modelOpKind
	arg   uint8
	delay time.Duration // for ScheduleOne, Reset, Advance; may be <= 0 or hugeDelay
	units uint16        // the raw delay field, for derived values
}

// decodeOps turns arbitrary bytes into a bounded sequence of operations,
// four bytes per operation: kind, argument, and a 16-bit delay in
// milliseconds (kept on a 1 ms grid, at most 3 s).
func decodeOps(data []byte) []modelOp {
	var ops []modelOp
	for len(data) >= 4 && len(ops) < modelMaxOps {
		op := modelOp{
			kind:  modelOpKind(data[0] % uint8(mKinds)),
			arg:   data[1],
			units: binary.BigEndian.Uint16(data[2:4]),
		}
		data = data[4:]
		ms := time.Duration(op.units%3001) * time.Millisecond
		switch op.kind {
		case mScheduleOne, mReset:
			switch op.arg & 3 {
			case 2:
				op.delay = -ms // due at once
			case 3:
				op.delay = hugeDelay
			default:
				op.delay = ms
			}
		case mSchedule:
			op.delay = time.Duration(op.units%40+1) * 50 * time.Millisecond
		case mAdvance, mAdvance2:
			op.delay = time.Duration(op.units%1000) * time.Millisecond
		case mShutdownOrTick:
			op.delay = time.Duration(op.units%100) * time.Millisecond
		}
		ops = append(ops, op)
	}
	return ops
}

// encodeOp is the inverse of decodeOps for one operation; tests use it to
// write sequences by hand.
func encodeOp(kind modelOpKind, arg uint8, units uint16) []byte {
	return []byte{byte(kind), arg, byte(units >> 8), byte(units)}
}

// taskFlags derives the behaviour of a new task's job from an op's
// argument: whether it panics, and what it does to its own task.
// Durations end half a millisecond off the 1 ms grid of every deadline, so
// a run never ends at the very instant a deadline arrives.
func taskFlags(op modelOp) (panics bool, dur time.Duration, act selfAction, onRun int, actDelay time.Duration) {
	panics = op.arg&0x0c == 0x0c
	if sel := op.units >> 12; sel >= 12 {
		dur = time.Duration(sel-11)*40*time.Millisecond + 500*time.Microsecond
	}
	act = selfAction(op.arg >> 4 & 3)
	onRun = 1 + int(op.arg>>6)
	actDelay = time.Duration(int(op.units)*7%2000+1) * time.Millisecond
	return
}

func (op modelOp) String() string {
	switch op.kind {
	case mScheduleOne:
		return fmt.Sprintf("ScheduleOne(%v)", op.delay)
	case mSchedule:
		return fmt.Sprintf("Schedule(%v)", op.delay)
	case mCancel:
		return fmt.Sprintf("CancelTask(#%d)", op.arg)
	case mReset:
		return fmt.Sprintf("Reset(#%d, %v)", op.arg, op.delay)
	case mAdvance, mAdvance2:
		return fmt.Sprintf("Advance(%v)", op.delay)
	case mBadArgs:
		return fmt.Sprintf("BadArgs(%d)", op.arg%6)
	case mShutdownOrTick:
		if op.arg < 16 {
			return "Shutdown"
		}
		return fmt.Sprintf("Advance(%v)", op.delay)
	}
	return "?"
}

// ---------------------------------------------------------------------------
// The model.

type mState uint8

const (
	mPending mState = iota
	mCancelled
	mDone
)

type mTask struct {
	repeating bool
	interval  time.Duration
	next      time.Duration // next deadline since the start; unused when never
	never     bool          // the deadline cannot be represented: never due
	state     mState
	runs      int
	busyUntil time.Duration // the end of the latest run

	panics   bool
	dur      time.Duration // how long each run lasts; 0 for an instant
	act      selfAction
	onRun    int
	actDelay time.Duration
}

// model is the specification: a list of tasks, every one scanned on every
// step. Times are durations since the bubble started.
type model struct {
	now       time.Duration
	tasks     []*mTask
	shut      bool
	live      int
	fired     uint64
	cancelled uint64
	panics    uint64
	skipped   uint64
}

// runRec is one run of a job: which task, at which instant, its how-many-th
// run, and the result of the job's action on its own task, if any.
type runRec struct {
	task   int
	at     time.Duration
	run    int
	action string
}

func (m *model) deadline(delay time.Duration) (time.Duration, bool) {
	if delay == hugeDelay {
		return 0, true
	}
	return m.now + max(delay, 0), false
}

func (m *model) add(repeating bool, delay time.Duration, t *mTask) int {
	t.repeating = repeating
	if repeating {
		t.interval = delay
	}
	t.next, t.never = m.deadline(delay)
	m.tasks = append(m.tasks, t)
	m.live++
	return len(m.tasks) - 1
}

func (m *model) cancel(i int) bool {
	if m.shut || i < 0 {
		return false
	}
	t := m.tasks[i]
	if t.state != mPending {
		return false
	}
	t.state = mCancelled
	m.live--
	m.cancelled++
	return true
}

func (m *model) reset(i int, delay time.Duration) bool {
	if m.shut || i < 0 {
		return false
	}
	t := m.tasks[i]
	if t.state != mPending {
		return false
	}
	t.next, t.never = m.deadline(delay)
	return true
}

// advance moves the clock by d and returns the runs that happen on the way,
// in time order, and the indexes of the tasks whose run panicked.
func (m *model) advance(d time.Duration) (runs []runRec, panicked []int) {
	target := m.now + d
	if m.shut {
		m.now = target
		return nil, nil
	}
	for {
		best := -1
		for i, t := range m.tasks {
			if t.state != mPending || t.never || t.next > target {
				continue
			}
			if best < 0 || t.next < m.tasks[best].next {
				best = i
			}
		}
		if best < 0 {
			break
		}
		t := m.tasks[best]
		at := t.next
		m.now = at
		if t.busyUntil > at {
			// Only a repeating task can still be running: skip this one.
			m.skipped++
			t.next += t.interval
			continue
		}
		t.busyUntil = at + t.dur
		t.runs++
		m.fired++
		if t.repeating {
			t.next += t.interval
		} else {
			t.state = mDone
			m.live--
		}
		rec := runRec{task: best, at: at, run: t.runs}
		if t.onRun == t.runs {
			switch t.act {
			case actCancelSelf:
				rec.action = fmt.Sprintf("cancel=%v", m.cancel(best))
			case actResetSelf:
				rec.action = fmt.Sprintf("reset=%v", m.reset(best, t.actDelay))
			}
		}
		if t.panics {
			m.panics++
			panicked = append(panicked, best)
		}
		runs = append(runs, rec)
	}
	m.now = target
	return runs, panicked
}

// running is the number of runs going on now.
func (m *model) running() int {
	n := 0
	for _, t := range m.tasks {
		if t.busyUntil > m.now {
			n++
		}
	}
	return n
}

// idle is the instant the last run started so far ends.
func (m *model) idle() time.Duration {
	end := m.now
	for _, t := range m.tasks {
		end = max(end, t.busyUntil)
	}
	return end
}

func (m *model) liveRepeating() int {
	n := 0
	for _, t := range m.tasks {
		if t.repeating && t.state == mPending {
			n++
		}
	}
	return n
}

// ---------------------------------------------------------------------------
// The harness: the real scheduler, driven by the same operations.

type harness struct {
	t       *testing.T
	workers int
	s       *schedule.Scheduler
	start   time.Time
	m       model

	mu       sync.Mutex
	ids      []schedule.TaskID // by task index; written before the task can run
	jobRuns  []int             // runs so far, by task index
	runs     []runRec          // runs since the last check
	panicked []schedule.TaskID // panic handler calls since the last check
	seen     map[schedule.TaskID]bool
}

// job returns the job of task i: it records the fake instant it runs at,
// performs the task's action on its own task, and panics if told to.
func (h *harness) job(i int, mt mTask) func() {
	return func() {
		at := time.Since(h.start)
		h.mu.Lock()
		h.jobRuns[i]++
		run := h.jobRuns[i]
		id := h.ids[i]
		h.mu.Unlock()
		rec := runRec{task: i, at: at, run: run}
		if mt.onRun == run {
			switch mt.act {
			case actCancelSelf:
				rec.action = fmt.Sprintf("cancel=%v", h.s.CancelTask(id))
			case actResetSelf:
				rec.action = fmt.Sprintf("reset=%v", h.s.Reset(id, mt.actDelay))
			}
		}
		h.mu.Lock()
		h.runs = append(h.runs, rec)
		h.mu.Unlock()
		if mt.dur > 0 {
			time.Sleep(mt.dur)
		}
		if mt.panics {
			panic(fmt.Sprintf("task %d run %d", i, run))
		}
		if mt.act == actGoexit && mt.onRun == run {
			runtime.Goexit()
		}
	}
}

// jobWith is job for ScheduleOneWith and ScheduleWith: it also checks that
// the job is handed its own TaskID and the value given with it.
func (h *harness) jobWith(i int, mt mTask) func(schedule.TaskID, any) {
	return func(id schedule.TaskID, arg any) {
		h.mu.Lock()
		want := h.ids[i]
		h.mu.Unlock()
		if id != want || arg != any(i) {
			h.mu.Lock()
			h.runs = append(h.runs, runRec{task: i, action: fmt.Sprintf("wrong id %#x or arg %v", id, arg)})
			h.mu.Unlock()
		}
		h.job(i, mt)()
	}
}

func (h *harness) target(arg uint8) (schedule.TaskID, int) {
	switch {
	case arg == targetZero || len(h.m.tasks) == 0:
		return 0, -1
	case arg == targetUnknown:
		return unknownID, -1
	}
	i := int(arg) % len(h.m.tasks)
	return h.ids[i], i
}

func (h *harness) newID(id schedule.TaskID, err error) bool {
	t := h.t
	if !assert.NoError(t, err) {
		return false
	}
	ok := assert.NotZero(t, id, "TaskID 0 handed out")
	ok = assert.False(t, h.seen[id], "TaskID %#x handed out twice", id) && ok
	h.seen[id] = true
	return ok
}

// step applies op to both the scheduler and the model and reports whether
// their results agree.
func (h *harness) step(op modelOp) bool {
	t, s, m := h.t, h.s, &h.m
	ok := true
	switch op.kind {
	case mScheduleOne, mSchedule:
		repeating := op.kind == mSchedule
		if len(m.tasks) >= modelMaxTasks || (repeating && m.liveRepeating() >= modelMaxRepeating) {
			return true // keep the sequence cheap
		}
		mt := &mTask{}
		mt.panics, mt.dur, mt.act, mt.onRun, mt.actDelay = taskFlags(op)
		switch {
		case h.workers < modelMaxTasks:
			mt.dur = 0 // only instant jobs: the pool may be small
		case mt.dur > 0:
			mt.panics = false // a long job's panic would come at its end
		}
		i := len(m.tasks)
		h.mu.Lock()
		h.ids = append(h.ids, 0)
		h.jobRuns = append(h.jobRuns, 0)
		h.mu.Unlock()
		var id schedule.TaskID
		var err error
		// The ID is written into h.ids under h.mu before the job can run:
		// jobs due at once wait for the harness to hold nothing.
		h.mu.Lock()
		switch with := op.arg&1 == 1; {
		case repeating && with:
			id, err = s.ScheduleWith(h.jobWith(i, *mt), i, op.delay)
		case repeating:
			id, err = s.Schedule(h.job(i, *mt), op.delay)
		case with:
			id, err = s.ScheduleOneWith(h.jobWith(i, *mt), i, op.delay)
		default:
			id, err = s.ScheduleOne(h.job(i, *mt), op.delay)
		}
		h.ids[i] = id
		h.mu.Unlock()
		if m.shut {
			h.mu.Lock()
			h.ids = h.ids[:i]
			h.jobRuns = h.jobRuns[:i]
			h.mu.Unlock()
			return assert.ErrorIs(t, err, schedule.ErrShutdown) && assert.Zero(t, id)
		}
		h.mu.Lock()
		h.ids[i] = id
		h.mu.Unlock()
		m.add(repeating, op.delay, mt)
		ok = h.newID(id, err)
	case mCancel:
		id, i := h.target(op.arg)
		ok = assert.Equal(t, m.cancel(i), s.CancelTask(id), "CancelTask(%#x)", id)
	case mReset:
		id, i := h.target(op.arg)
		ok = assert.Equal(t, m.reset(i, op.delay), s.Reset(id, op.delay), "Reset(%#x, %v)", id, op.delay)
	case mBadArgs:
		ok = h.badArgs(op.arg % 6)
	case mShutdownOrTick:
		if op.arg < 16 {
			m.shut = true
			if op.arg%2 == 0 {
				s.Shutdown()
			} else {
				// It waits for the runs still going.
				ok = assert.NoError(t, s.ShutdownContext(context.Background()))
				m.now = m.idle()
			}
			ok = assert.True(t, s.IsShutdown()) && ok
			break
		}
		return h.advance(op.delay)
	case mAdvance, mAdvance2:
		return h.advance(op.delay)
	}
	// Whatever was due at once (delay <= 0) runs now.
	return h.advance(0) && ok
}

func (h *harness) badArgs(which uint8) bool {
	t, s := h.t, h.s
	noop := func() {}
	switch which {
	case 0:
		id, err := s.ScheduleOne(nil, time.Second)
		return assert.ErrorIs(t, err, schedule.ErrNilJob) && assert.Zero(t, id)
	case 1:
		id, err := s.Schedule(nil, time.Second)
		return assert.ErrorIs(t, err, schedule.ErrNilJob) && assert.Zero(t, id)
	case 2, 3:
		interval := time.Duration(which-2) * -time.Second // 0 or -1s
		id, err := s.Schedule(noop, interval)
		return assert.ErrorIs(t, err, schedule.ErrInvalidInterval) && assert.Zero(t, id)
	case 4:
		return assert.False(t, s.CancelTask(0)) && assert.False(t, s.Reset(0, time.Second))
	default:
		return assert.False(t, s.CancelTask(unknownID)) && assert.False(t, s.Reset(unknownID, time.Second))
	}
}

// advance sleeps d of fake time, lets the bubble settle, and compares what
// ran with what the model says ran.
func (h *harness) advance(d time.Duration) bool {
	t := h.t
	time.Sleep(d)
	synctest.Wait()
	want, wantPanicked := h.m.advance(d)
	require.Equal(t, h.m.now, time.Since(h.start), "model clock out of step")

	h.mu.Lock()
	got, gotPanicked := h.runs, h.panicked
	h.runs, h.panicked = nil, nil
	h.mu.Unlock()
	byTime := func(a, b runRec) int {
		if a.at != b.at {
			return int(a.at - b.at)
		}
		return a.task - b.task
	}
	slices.SortFunc(got, byTime)
	slices.SortFunc(want, byTime)
	ok := assert.Equal(t, want, got, "runs (task, fake instant, run number, self action)")

	var wantIDs []schedule.TaskID
	for _, i := range wantPanicked {
		wantIDs = append(wantIDs, h.ids[i])
	}
	ok = assert.ElementsMatch(t, wantIDs, gotPanicked, "panic handler calls") && ok
	return h.checkCounters() && ok
}

func (h *harness) checkCounters() bool {
	t, s, m := h.t, h.s, &h.m
	st := settledStats(s)
	wantLive := m.live
	if m.shut {
		wantLive = 0
	}
	ok := assert.Equal(t, wantLive, s.Len(), "Len")
	ok = assert.Equal(t, wantLive, st.Pending, "Stats.Pending") && ok
	ok = assert.Equal(t, m.fired, st.Started, "Stats.Started") && ok
	ok = assert.Equal(t, m.cancelled, st.Cancelled, "Stats.Cancelled") && ok
	ok = assert.Equal(t, m.panics, st.Panics, "Stats.Panics") && ok
	ok = assert.Equal(t, m.skipped, st.Skipped, "Stats.Skipped") && ok
	ok = assert.Equal(t, m.running(), st.Running, "Stats.Running") && ok
	ok = assert.Zero(t, st.MaxLateness, "Stats.MaxLateness: fake time is exact") && ok
	if m.shut {
		return ok
	}
	ok = assert.Zero(t, st.Waiting, "Stats.Waiting once settled") && ok
	if schedule.CancelStrategyOf(s) == schedule.EagerCancel {
		ok = assert.Equal(t, st.Pending, st.HeapEntries, "eager heap holds exactly the live tasks") && ok
		ok = assert.Zero(t, st.Tombstones, "eager tombstones") && ok
	} else {
		ok = assert.Equal(t, st.Pending+st.Tombstones, st.HeapEntries, "lazy heap = live + tombstones") && ok
	}
	return ok
}

// runModel runs ops against a fresh scheduler and the model, in a bubble,
// stopping at the first step where they disagree.
func runModel(t *testing.T, st schedtest.Strategy, workers int, ops []modelOp) {
	// A sequence takes milliseconds. One that hangs (a spinning or stuck
	// scheduler keeps the bubble's fake clock from ever settling) crashes
	// the test binary instead of waiting for -timeout, so that the fuzzer
	// records the input.
	watchdog := time.AfterFunc(modelWatchdog, func() {
		panic(fmt.Sprintf("%v scheduler: sequence still running after %v, probably hung:\n%s",
			st, modelWatchdog, describeOps(ops)))
	})
	defer watchdog.Stop()
	synctest.Test(t, func(t *testing.T) {
		h := &harness{t: t, workers: workers, start: time.Now(), seen: map[schedule.TaskID]bool{}}
		s := st.Start(t, workers, schedule.WithPanicHandler(func(id schedule.TaskID, _ any) {
			h.mu.Lock()
			h.panicked = append(h.panicked, id)
			h.mu.Unlock()
		}))
		require.Equal(t, st.Kind, schedule.CancelStrategyOf(s))
		h.s = s
		for i, op := range ops {
			if !h.step(op) {
				require.FailNowf(t, "departs from the model", "%v scheduler, at step %d of:\n%s", st, i, describeOps(ops[:i+1]))
			}
		}
		// One more long step lets everything still due within a minute run.
		if !h.advance(time.Minute) {
			require.FailNowf(t, "departs from the model", "%v scheduler, after:\n%s", st, describeOps(ops))
		}
	})
}

func describeOps(ops []modelOp) string {
	var b strings.Builder
	for i, op := range ops {
		fmt.Fprintf(&b, "  %3d %v\n", i, op)
	}
	return b.String()
}

// randomOps returns n random operations from a seeded generator.
func randomOps(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	data := make([]byte, 4*n)
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	return data
}

// workersFor picks a pool size from the input. Instant jobs work with any
// size, because fake time waits for every job to finish. Jobs that last are
// allowed only with a pool larger than the number of tasks.
func workersFor(data []byte) int {
	if len(data) == 0 {
		return 1
	}
	b := data[len(data)-1]
	if b%8 >= 4 {
		return modelMaxTasks
	}
	return 1 + int(b%4)
}

// TestSchedulerMatchesModel replays seeded random sequences against both
// strategies. FuzzSchedulerMatchesModel explores further.
func TestSchedulerMatchesModel(t *testing.T) {
	seeds := 40
	if testing.Short() {
		seeds = 10
	}
	for _, st := range schedtest.Strategies {
		t.Run(st.String(), func(t *testing.T) {
			for seed := range uint64(seeds) {
				data := randomOps(seed, modelMaxOps)
				runModel(t, st, workersFor(data), decodeOps(data))
				if t.Failed() {
					require.FailNowf(t, "departs from the model", "seed %d", seed)
				}
			}
		})
	}
}

// TestModelScenarios runs hand-written sequences that exercise one rule
// each, so that a failure names the rule.
func TestModelScenarios(t *testing.T) {
	cat := func(parts ...[]byte) []byte { return slices.Concat(parts...) }
	const (
		plain      = 0x00
		asap       = 0x02
		never      = 0x03
		cancelSelf = 0x10
		resetSelf  = 0x20
		panics     = 0x0c
	)
	const long = 0xf000 // in the delay field: runs last 160.5ms
	tests := []struct {
		name    string
		data    []byte
		workers int // 2 unless set
	}{
		{"one-shot fires at its deadline", cat(encodeOp(mScheduleOne, plain, 1500), encodeOp(mAdvance, 0, 999), encodeOp(mAdvance, 0, 999)), 0},
		{"delay of zero or less runs at once", cat(encodeOp(mScheduleOne, asap, 500), encodeOp(mScheduleOne, plain, 0)), 0},
		{"overflowing delay is pending and never due", cat(encodeOp(mScheduleOne, never, 0), encodeOp(mAdvance, 0, 999), encodeOp(mCancel, 0, 0), encodeOp(mCancel, 0, 0)), 0},
		{"repeating task runs at start + k*interval", cat(encodeOp(mSchedule, plain, 2), encodeOp(mAdvance, 0, 999), encodeOp(mAdvance, 0, 333)), 0},
		{"cancel stops a repeating task", cat(encodeOp(mSchedule, plain, 0), encodeOp(mAdvance, 0, 120), encodeOp(mCancel, 0, 0), encodeOp(mAdvance, 0, 999)), 0},
		{"cancel from inside its own job", cat(encodeOp(mSchedule, cancelSelf|0x40, 1), encodeOp(mAdvance, 0, 999)), 0},
		{"reset from inside its own job", cat(encodeOp(mSchedule, resetSelf, 3), encodeOp(mAdvance, 0, 999), encodeOp(mAdvance, 0, 999)), 0},
		{"one-shot cannot cancel or reset itself", cat(encodeOp(mScheduleOne, cancelSelf, 5), encodeOp(mScheduleOne, resetSelf, 5), encodeOp(mAdvance, 0, 10)), 0},
		{"reset postpones, then fires once", cat(encodeOp(mScheduleOne, plain, 100), encodeOp(mAdvance, 0, 50), encodeOp(mReset, 0, 300), encodeOp(mAdvance, 0, 999), encodeOp(mReset, 0, 5)), 0},
		{"reset earlier than the entry", cat(encodeOp(mScheduleOne, plain, 2000), encodeOp(mReset, 0, 10), encodeOp(mAdvance, 0, 999)), 0},
		{"reset to now runs at once", cat(encodeOp(mScheduleOne, plain, 2000), encodeOp(mReset, asap, 10)), 0},
		{"reset moves a repeating task's phase", cat(encodeOp(mSchedule, plain, 3), encodeOp(mAdvance, 0, 30), encodeOp(mReset, 0, 7), encodeOp(mAdvance, 0, 999)), 0},
		{"reset after cancel fails", cat(encodeOp(mScheduleOne, plain, 10), encodeOp(mCancel, 0, 0), encodeOp(mReset, 0, 10), encodeOp(mAdvance, 0, 999)), 0},
		{"panicking repeating job keeps running", cat(encodeOp(mSchedule, panics, 1), encodeOp(mScheduleOne, panics, 5), encodeOp(mAdvance, 0, 999)), 0},
		{"deadline during a long run is skipped", cat(encodeOp(mSchedule, plain, long|1), encodeOp(mAdvance, 0, 999)), modelMaxTasks},
		{"reset to now during a long run is skipped", cat(encodeOp(mSchedule, plain, long|1), encodeOp(mAdvance, 0, 120), encodeOp(mReset, asap, 0), encodeOp(mAdvance, 0, 999)), modelMaxTasks},
		{"cancel during a long run stops later runs", cat(encodeOp(mSchedule, plain, long|1), encodeOp(mAdvance, 0, 150), encodeOp(mCancel, 0, 0), encodeOp(mAdvance, 0, 999)), modelMaxTasks},
		{"shutdown waits for long runs", cat(encodeOp(mSchedule, plain, long|1), encodeOp(mScheduleOne, plain, long|5), encodeOp(mAdvance, 0, 110), encodeOp(mShutdownOrTick, 1, 0), encodeOp(mAdvance, 0, 999)), modelMaxTasks},
		{"bad arguments", cat(encodeOp(mBadArgs, 0, 0), encodeOp(mBadArgs, 1, 0), encodeOp(mBadArgs, 2, 0), encodeOp(mBadArgs, 3, 0), encodeOp(mBadArgs, 4, 0), encodeOp(mBadArgs, 5, 0)), 0},
		{"shutdown drops pending tasks and refuses calls", cat(encodeOp(mScheduleOne, plain, 100), encodeOp(mSchedule, plain, 1), encodeOp(mShutdownOrTick, 0, 0), encodeOp(mScheduleOne, plain, 1), encodeOp(mCancel, 0, 0), encodeOp(mReset, 1, 1), encodeOp(mAdvance, 0, 999), encodeOp(mShutdownOrTick, 1, 0)), 0},
		{"ids of finished tasks are dead", cat(encodeOp(mScheduleOne, asap, 0), encodeOp(mScheduleOne, plain, 0), encodeOp(mCancel, 0, 0), encodeOp(mReset, 0, 1), encodeOp(mScheduleOne, plain, 5), encodeOp(mCancel, 0, 0)), 0},
	}
	for _, st := range schedtest.Strategies {
		for _, tc := range tests {
			t.Run(st.String()+"/"+tc.name, func(t *testing.T) {
				workers := tc.workers
				if workers == 0 {
					workers = 2
				}
				runModel(t, st, workers, decodeOps(tc.data))
			})
		}
	}
}

// TestModelDecodingIsBounded checks the decoder keeps inputs cheap.
func TestModelDecodingIsBounded(t *testing.T) {
	ops := decodeOps(randomOps(1, 10*modelMaxOps))
	assert.Len(t, ops, modelMaxOps)
	for _, op := range ops {
		switch op.kind {
		case mSchedule:
			assert.GreaterOrEqual(t, op.delay, 50*time.Millisecond)
			assert.LessOrEqual(t, op.delay, 2*time.Second)
		case mAdvance, mAdvance2, mShutdownOrTick:
			assert.Less(t, op.delay, time.Second)
		case mScheduleOne, mReset:
			assert.True(t, op.delay == hugeDelay || (op.delay >= -3*time.Second && op.delay <= 3*time.Second), "%v", op.delay)
		}
	}
	assert.Empty(t, decodeOps([]byte{1, 2, 3}), "a partial op is ignored")
}
