package schedule

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/panjf2000/ants/v2"
)

// Scheduler runs jobs after a delay or periodically on a bounded pool of
// goroutines. All its methods are safe for concurrent use, including from
// inside a running job.
//
// One owner goroutine keeps every deadline in a min-heap and sleeps on a
// single timer set for the earliest one (owner.go). Due jobs go, in
// deadline order, to a queue that at most workers drain runs on the ants
// pool empty (fire.go); when every worker is busy they wait their turn
// without holding up scheduling. Callers reach the owner through a batched
// inbox (inbox.go), and postponing a deadline needs no message at all.
type Scheduler struct {
	// Fields are grouped by who writes them, with a cache line between
	// groups, so that a write on one path does not evict what another path
	// only reads: every call reads the first group, adds write the second,
	// the owner the third, runs the fourth (see docs/scaling.md).

	// Set by New; closed once, by Shutdown. Read by every call.
	cfg       config
	workers   int
	epoch     time.Time // deadlines are nanoseconds since epoch (monotonic)
	closed    atomic.Bool
	pool      *ants.Pool
	runFn     func() // s.run, made once so that submitting a run allocates nothing
	wake      chan struct{}
	quit      chan struct{}
	ownerDone chan struct{}
	poolDone  chan struct{}
	stopOnce  sync.Once
	_         cacheLinePad

	// The inbox lanes, each with the slot allocator of its chunks
	// (inbox.go); every add and every request for the owner takes the lock
	// of one lane.
	lanes [laneCount]lane

	slab slab

	// sleepUntil is written by the owner: while it sleeps, the deadline its
	// timer is set for (never when none); 0 while it is awake. Callers read
	// it to decide whether a request must wake the owner (inbox.go).
	sleepUntil atomic.Int64
	// busyLanes has bit k set while lane k holds requests; trimLanes while
	// it has chunks to give back (inbox.go).
	busyLanes atomic.Uint32
	trimLanes atomic.Uint32
	// movedEarlier is the earliest deadline a Reset has moved a task to,
	// ahead of its heap entry, without a request (never when none): callers
	// lower it, the owner takes it when it fixes the heap (moved.go).
	movedEarlier atomic.Int64
	_            cacheLinePad

	// The owner goroutine's state (owner.go). Nothing else touches these.
	heap        deadlineHeap
	ops         []op             // the lane being processed
	smallDrains int              // drains in a row that used little of ops' capacity
	freed       []uint32         // slots to free at the end of the loop iteration
	dueNow      []due            // due tasks collected for the run queue
	dueCount    int              // due tasks collected in this loop iteration
	intervals   map[uint32]int64 // slot to interval, for the repeating tasks the owner holds
	retryAt     int64            // when to try again to start runs the pool refused; 0: none
	// Published by the owner at the end of each loop iteration.
	heapLen atomic.Int64
	loops   atomic.Uint64 // loop iterations completed
	wakeups atomic.Uint64 // times the owner woke from sleep
	skipped atomic.Uint64
	ended   atomic.Int64 // tasks that stopped being pending other than by CancelTask
	deadOwn atomic.Int64 // the owner's part of the tombstone count (counters.go)
	_       cacheLinePad

	runs runQueue // due jobs and the drain runs that take them (fire.go)
	_    cacheLinePad

	// Counters written by runs as jobs start and end.
	fired       atomic.Uint64
	panics      atomic.Uint64
	dropped     atomic.Uint64
	maxLateness atomic.Int64
	// recentLateness is the largest lateness since TakeMaxLateness last
	// swapped it out; lateness counts starts by lateness bucket.
	recentLateness atomic.Int64
	lateness       [len(LatenessBounds) + 1]atomic.Uint64
}

// cacheLinePad keeps the fields after it off the cache line of those
// before it.
type cacheLinePad [64]byte

// poolSpare is how many more workers New's pool has than jobs may run.
const poolSpare = 2

// New returns a running Scheduler whose jobs run on at most workers
// goroutines at a time (its pool keeps up to two more, idle, for a smooth
// hand-over between runs). It returns ErrInvalidWorkers when workers is not
// positive, the error of the first Option that rejects its argument, and
// the error of the pool's construction.
//
// The bound holds with WithPool too: the Scheduler then occupies at most
// workers of that pool's workers.
//
// Call Shutdown or ShutdownContext when done, to stop the scheduler's
// goroutines and release its pool.
func New(workers int, opts ...Option) (*Scheduler, error) {
	if workers <= 0 {
		return nil, ErrInvalidWorkers
	}
	s := &Scheduler{
		cfg:       config{strategy: LazyCancel},
		workers:   workers,
		epoch:     time.Now(),
		wake:      make(chan struct{}, 1),
		quit:      make(chan struct{}),
		ownerDone: make(chan struct{}),
	}
	for _, o := range opts {
		if err := o(&s.cfg); err != nil {
			return nil, err
		}
	}
	s.pool = s.cfg.pool
	if s.pool == nil {
		// Non-blocking, so that starting a run never waits inside ants (see
		// fire.go); it comes last so that no pool option can undo it.
		opts := append([]ants.Option{ants.WithDisablePurge(true)}, s.cfg.poolOptions...)
		opts = append(opts, ants.WithNonblocking(true))
		// Two spare workers: a run that has left the run queue still holds
		// its ants worker for a moment before ants takes it back, and a run
		// started meanwhile would otherwise be refused and wait for a retry.
		// The scheduler's own count keeps its jobs to workers at a time.
		p, err := ants.NewPool(workers+poolSpare, opts...)
		if err != nil {
			return nil, err
		}
		s.pool = p
		s.poolDone = make(chan struct{})
	}
	if s.cfg.strategy == EagerCancel {
		s.heap.index = &s.slab
	}
	s.slab.init(rand.Uint64)
	s.initLanes()
	s.movedEarlier.Store(never)
	s.runs.init(s.workers)
	s.runFn = s.run
	go s.loop()
	return s, nil
}

// ScheduleOne runs job once, delay from now. A delay of zero or less runs
// it as soon as a worker is free; a delay too long to represent (about 18
// years from New) is accepted, and the job never comes due.
//
// It returns ErrNilJob for a nil job, ErrShutdown after Shutdown, and
// ErrTooManyTasks when 2^32-1 tasks are held at once. When 65,536
// requests are already waiting for the owner goroutine, it waits until the
// owner has taken them.
func (s *Scheduler) ScheduleOne(job func(), delay time.Duration) (TaskID, error) {
	if job == nil {
		return 0, ErrNilJob
	}
	return s.add(nil, job, delay, 0)
}

// ScheduleOneWith is ScheduleOne for a job that receives its own TaskID and
// a value of the caller's: job(id, arg) runs once, delay from now.
//
// One job function can then serve every task, each with its own data,
// without a closure per task: with arg a pointer (or a map, a channel, a
// func), scheduling allocates nothing. The ID passed to job is the one
// ScheduleOneWith returns, so a job can tell a current task from an older
// one it replaced.
//
// It returns ErrNilJob for a nil job and otherwise behaves as ScheduleOne.
// arg may be nil.
func (s *Scheduler) ScheduleOneWith(job func(id TaskID, arg any), arg any, delay time.Duration) (TaskID, error) {
	if job == nil {
		return 0, ErrNilJob
	}
	return s.add(job, arg, delay, 0)
}

// Schedule runs job every interval, the first time interval from now. Runs
// are due at fixed times, start + k·interval, so lateness does not
// accumulate. A run that comes due while the previous run of the same task
// is still going, or that was missed while the scheduler or the pool was
// stalled, is skipped (see Stats.Skipped), so the task never runs
// concurrently with itself and never bursts to catch up.
//
// It returns ErrNilJob for a nil job, ErrInvalidInterval for an interval of
// zero or less, ErrShutdown after Shutdown, and ErrTooManyTasks when 2^32-1
// tasks are held at once. When 65,536 requests are already waiting for the
// owner goroutine, it waits until the owner has taken them.
func (s *Scheduler) Schedule(job func(), interval time.Duration) (TaskID, error) {
	if job == nil {
		return 0, ErrNilJob
	}
	if interval <= 0 {
		return 0, ErrInvalidInterval
	}
	return s.add(nil, job, interval, interval)
}

// ScheduleWith is Schedule for a job that receives its own TaskID and a
// value of the caller's: job(id, arg) runs every interval, as ScheduleOneWith
// describes for one-shots. It returns the errors Schedule returns.
func (s *Scheduler) ScheduleWith(job func(id TaskID, arg any), arg any, interval time.Duration) (TaskID, error) {
	if job == nil {
		return 0, ErrNilJob
	}
	if interval <= 0 {
		return 0, ErrInvalidInterval
	}
	return s.add(job, arg, interval, interval)
}

// CancelTask stops the task id. It reports whether this call stopped it:
// a one-shot task will not run, and a repeating task starts no further run,
// even when CancelTask is called from inside its own job. It does not wait
// for a run already under way. The job, and everything it holds, is no
// longer referenced by the scheduler once no run of it is under way.
//
// A one-shot task stops being pending when it comes due: from then on it
// runs as soon as a worker is free, and CancelTask returns false. It also
// returns false for an unknown or already cancelled task, for 0, for an ID
// of another Scheduler, and after Shutdown.
//
// With EagerCancel the call hands the heap removal to the owner goroutine,
// and waits, as ScheduleOne does, when 65,536 requests are already waiting.
// With LazyCancel it never waits.
func (s *Scheduler) CancelTask(id TaskID) bool {
	t := s.slab.lookup(id)
	if t == nil || s.closed.Load() {
		return false
	}
	slot := s.slab.slotOf(id)
	if !t.lock(id.gen()) {
		return false
	}
	var w uint64
	for {
		w = t.word.Load()
		if wordStatus(w) != statusPending {
			t.unlock(id.gen())
			return false
		}
		if t.word.CompareAndSwap(w, w|statusCancelled) {
			break
		}
	}
	if w&flagRunning == 0 {
		// No run is in flight and none can start any more: let the job go
		// now. (A run in flight lets it go when it ends; see finish.)
		t.release()
	}
	t.unlock(id.gen())
	// Eager: the owner removes the entry now. Lazy: the entry stays as a
	// tombstone, and counting the cancel wakes the owner when tombstones may
	// call for a rebuild (counters.go).
	s.countCancel(slot)
	if s.cfg.strategy == EagerCancel {
		s.send(op{slot: slot, gen: id.gen(), kind: opRemove}, 0)
	}
	return true
}

// Reset moves the next run of the pending task id to delay from now; a
// repeating task then continues every interval from that run. It reports
// false, and changes nothing, when id is not pending: unknown, cancelled, a
// one-shot that has come due (see CancelTask), an ID of another Scheduler,
// or after Shutdown. Unlike time.Timer.Reset, it never re-arms a one-shot
// that has fired: schedule a new task for that.
//
// Reset is the heartbeat path: it allocates nothing, and postponing a
// deadline (the usual case) does not involve the owner goroutine at all;
// the heap entry is fixed when it reaches the top. Neither does moving a
// deadline earlier to a second or more from now: the owner fixes such
// entries together, in one pass, before the earliest of them comes due
// (moved.go). Moving a deadline earlier to less than a second from now
// sends the owner a request, and then waits, as ScheduleOne does, when
// 65,536 requests are already waiting.
func (s *Scheduler) Reset(id TaskID, delay time.Duration) bool {
	t := s.slab.lookup(id)
	if t == nil || s.closed.Load() {
		return false
	}
	when := s.deadline(delay)
	if !t.lock(id.gen()) {
		return false
	}
	var w uint64
	for {
		w = t.word.Load()
		if wordStatus(w) != statusPending {
			t.unlock(id.gen())
			return false
		}
		if t.word.CompareAndSwap(w, packWord(when, w&flagMask)) {
			break
		}
	}
	t.unlock(id.gen())
	if when < wordWhen(w) {
		// The entry may now be later than the task: tell the owner.
		if delay >= deferMoves {
			s.noteMovedEarlier(when)
		} else {
			s.send(op{slot: s.slab.slotOf(id), gen: id.gen(), kind: opEarlier}, when)
		}
	}
	return true
}

// Len returns the number of pending tasks: one-shot tasks that have not
// come due and repeating tasks not cancelled. Tombstones do not count.
// After Shutdown it returns 0.
func (s *Scheduler) Len() int {
	if s.closed.Load() {
		return 0
	}
	return int(s.pending())
}

// IsShutdown reports whether Shutdown or ShutdownContext has been called.
func (s *Scheduler) IsShutdown() bool { return s.closed.Load() }

// Shutdown stops the scheduler. It is idempotent, safe to call
// concurrently with any other method (Shutdown and ShutdownContext
// included) and from inside a job, and returns without waiting for running
// jobs. Once it returns, no job starts; pending tasks and due jobs that had
// not started are dropped (counted in Stats.Dropped) and their jobs are no
// longer referenced; ScheduleOne and Schedule return ErrShutdown, and
// CancelTask and Reset return false. A pool created by New is released; one
// given by WithPool is left alone.
func (s *Scheduler) Shutdown() { s.stop() }

// ShutdownContext is Shutdown followed by a wait, until ctx is done, for
// the jobs still running and, for a pool created by New, for all of its
// goroutines to exit. It returns nil when they have and ctx.Err()
// otherwise; the scheduler is shut down either way. It never waits for work
// that is not the scheduler's: with WithPool, jobs of others running on the
// pool do not hold it up. Called from inside a job it waits for that job
// too, so it can only return ctx.Err() there.
func (s *Scheduler) ShutdownContext(ctx context.Context) error {
	s.stop()
	for _, done := range []<-chan struct{}{s.runs.idle, s.poolDone} {
		if done == nil {
			continue
		}
		select {
		case <-done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// stop does the part of shutting down that every caller waits for. Only
// the first call does anything; later and concurrent ones wait for it.
func (s *Scheduler) stop() {
	s.stopOnce.Do(func() {
		s.closeLanes()
		close(s.quit)
		<-s.ownerDone
		// The owner has dropped what was pending and queues nothing more:
		// close the run queue and drop the due jobs no run has taken.
		s.closeRuns()
		if s.poolDone != nil {
			// Released exactly once, here. Waiting for the workers to exit is
			// left to a goroutine of its own, so that Shutdown returns at once
			// and ShutdownContext can give up when its context ends.
			go func() {
				// The only call that releases the pool (ants' Release and
				// ReleaseContext race when called concurrently). It returns
				// once every worker and ants' own goroutines have exited.
				_ = s.pool.ReleaseContext(context.Background())
				close(s.poolDone)
			}()
		}
	})
}

// deadline converts a delay from now into a deadline, clamped to
// [now, never].
func (s *Scheduler) deadline(delay time.Duration) int64 {
	now := s.now()
	if delay <= 0 {
		return now
	}
	if int64(delay) > never-now {
		return never
	}
	return now + int64(delay)
}

func (s *Scheduler) now() int64 { return int64(time.Since(s.epoch)) }
