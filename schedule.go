package schedule

import (
	"context"
	"math"
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
// Calls hand their requests over without waiting for the scheduler to act
// on them. The requests waiting to be applied are bounded, though: a call
// that finds that bound reached, because calls come faster than the
// scheduler applies them, waits until the scheduler has taken them, or
// until [Scheduler.Shutdown]. The methods say which of them may wait so.
type Scheduler struct {
	// The parts (see the overview in doc.go) are laid out with a cache
	// line between groups, so that a write on one path does not evict what
	// another path only reads.

	// Set by New; read by every call.
	clock
	cancel canceller
	_      cacheLinePad

	slab      slab
	inbox     inbox
	scheduled shardedCount
	_         cacheLinePad
	owner     owner
	_         cacheLinePad
	runner    runner
	_         cacheLinePad
	out       outcomes

	stopOnce sync.Once
	quit     chan struct{} // closed by Shutdown: the owner drops everything and ends
	poolDone chan struct{} // closed once New's pool is released; nil with WithPool
}

// poolSpare is how many more workers New's pool has than jobs may run.
const poolSpare = 2

// New returns a running Scheduler whose jobs run on at most workers goroutines
// at a time (its pool keeps up to two more, idle, for a smooth hand-over
// between runs). It returns [ErrInvalidWorkers] when workers is not positive
// or leaves no room for those two in an int,
// the error of the first Option given a bad argument ([ErrUnknownStrategy],
// [ErrNilPool], [ErrBlockingPool], [ErrNilLogger]), and the error of the pool's
// construction.
//
// The bound holds with [WithPool] too: the Scheduler then occupies at most
// workers of that pool's workers.
//
// Call [Scheduler.Shutdown] or [Scheduler.ShutdownContext] when done, to
// stop the scheduler's goroutines and release its pool.
func New(workers int, opts ...Option) (*Scheduler, error) {
	if workers <= 0 || workers > math.MaxInt-poolSpare {
		return nil, ErrInvalidWorkers
	}
	cfg := config{strategy: LazyCancel}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.err != nil {
		return nil, cfg.err
	}
	pool := cfg.pool
	if pool == nil {
		// Non-blocking, so that starting a run never waits inside ants (see
		// runner.go); it comes last so that no pool option can undo it.
		opts := append([]ants.Option{ants.WithDisablePurge(true)}, cfg.poolOptions...)
		opts = append(opts, ants.WithNonblocking(true))
		// Two spare workers: a run that has left the run queue still holds
		// its ants worker for a moment before ants takes it back, and a run
		// started meanwhile would otherwise be refused and wait for a retry.
		// The scheduler's own count keeps its jobs to workers at a time.
		p, err := ants.NewPool(workers+poolSpare, opts...)
		if err != nil {
			return nil, err
		}
		pool = p
	}
	s := assemble(cfg, pool, workers)
	if pool != cfg.pool {
		s.poolDone = make(chan struct{})
	}
	go s.owner.loop()
	return s, nil
}

// assemble builds a Scheduler whose jobs run on pool, at most workers at a
// time, without starting its owner goroutine.
func assemble(cfg config, pool *ants.Pool, workers int) *Scheduler {
	s := &Scheduler{clock: clock{time.Now()}, quit: make(chan struct{})}
	s.slab.init(rand.Uint64)
	s.inbox.init()
	s.runner.init(pool, workers, s.clock, &s.slab, &s.inbox, &s.out, cfg.onPanic, cfg.logger)
	s.cancel = newCanceller(cfg.strategy, &s.slab, &s.inbox)
	s.owner.init(ownerShares{
		clock:  s.clock,
		slab:   &s.slab,
		inbox:  &s.inbox,
		runner: &s.runner,
		cancel: s.cancel,
		out:    &s.out,
		quit:   s.quit,
	}, cfg.strategy == EagerCancel)
	return s
}

// ScheduleOne runs job once, delay from now. A delay of zero or less runs
// it as soon as a worker is free; a delay too long to represent (about 9
// years from New) is accepted, and the job never comes due.
//
// It returns [ErrNilJob] for a nil job, [ErrShutdown] after
// [Scheduler.Shutdown], and [ErrTooManyTasks] when the scheduler is full.
// It may wait while requests back up (see [Scheduler]).
func (s *Scheduler) ScheduleOne(job func(), delay time.Duration) (TaskID, error) {
	if job == nil {
		return 0, ErrNilJob
	}
	return s.add(jobOf(job), delay, 0)
}

// ScheduleOneWith is [Scheduler.ScheduleOne] for a job that receives its own
// [TaskID] and a value of the caller's: job(id, arg) runs once, delay from now.
//
// One job function can then serve every task, each with its own data,
// without a closure per task: with arg a pointer (or a map, a channel, a
// func), scheduling allocates nothing, but for the scheduler's own storage,
// which grows in blocks as the number of tasks it holds does. The ID passed
// to job is the one ScheduleOneWith returns, so a job can tell a current
// task from an older one it replaced.
//
// It returns [ErrNilJob] for a nil job and otherwise behaves as ScheduleOne.
// arg may be nil.
func (s *Scheduler) ScheduleOneWith(job func(id TaskID, arg any), arg any, delay time.Duration) (TaskID, error) {
	if job == nil {
		return 0, ErrNilJob
	}
	return s.add(jobWith(job, arg), delay, 0)
}

// ScheduleAt runs job once, at the instant at: [Scheduler.ScheduleOne] for a
// deadline already known as a time, such as a lease's expiry or a message's
// not-after. It is ScheduleOne(job, time.Until(at)): the delay is reckoned when
// ScheduleAt is called, on the monotonic clock when at carries a monotonic
// reading (as time.Now and its Add do) and against the wall clock of that
// moment otherwise; a later change of the wall clock does not move the
// deadline. An instant now or in the past, the zero Time included, runs job as
// soon as a worker is free; one more than about 9 years after New is accepted,
// and the job never comes due.
//
// It returns the errors ScheduleOne returns, and waits as it does.
func (s *Scheduler) ScheduleAt(job func(), at time.Time) (TaskID, error) {
	if job == nil {
		return 0, ErrNilJob
	}
	return s.add(jobOf(job), time.Until(at), 0)
}

// ScheduleAtWith is [Scheduler.ScheduleAt] for a job that receives its own
// [TaskID] and a value of the caller's, as [Scheduler.ScheduleOneWith]
// describes: job(id, arg) runs once, at the instant at. It returns the
// errors ScheduleOneWith returns, and waits as it does.
func (s *Scheduler) ScheduleAtWith(job func(id TaskID, arg any), arg any, at time.Time) (TaskID, error) {
	if job == nil {
		return 0, ErrNilJob
	}
	return s.add(jobWith(job, arg), time.Until(at), 0)
}

// Schedule runs job every interval, the first time interval from now. Runs
// are due at fixed times, start + k·interval, so lateness does not
// accumulate. A run that comes due while the previous run of the same task
// is still going, or that was missed while the scheduler or the pool was
// stalled, is skipped (see [Stats].Skipped), so the task never runs
// concurrently with itself and never bursts to catch up.
//
// It returns [ErrNilJob] for a nil job, [ErrInvalidInterval] for an
// interval of zero or less, [ErrShutdown] after Shutdown, and
// [ErrTooManyTasks] when the scheduler is full. It may wait while requests
// back up (see [Scheduler]).
func (s *Scheduler) Schedule(job func(), interval time.Duration) (TaskID, error) {
	if job == nil {
		return 0, ErrNilJob
	}
	if interval <= 0 {
		return 0, ErrInvalidInterval
	}
	return s.add(jobOf(job), interval, interval)
}

// ScheduleWith is [Scheduler.Schedule] for a job that receives its own [TaskID]
// and a value of the caller's: job(id, arg) runs every interval, as
// [Scheduler.ScheduleOneWith] describes for one-shots. It returns the errors
// Schedule returns, and may wait as Schedule may.
func (s *Scheduler) ScheduleWith(job func(id TaskID, arg any), arg any, interval time.Duration) (TaskID, error) {
	if job == nil {
		return 0, ErrNilJob
	}
	if interval <= 0 {
		return 0, ErrInvalidInterval
	}
	return s.add(jobWith(job, arg), interval, interval)
}

// CancelTask stops the task id. It reports whether this call stopped it:
// a one-shot task will not run, and a repeating task starts no further run,
// even when CancelTask is called from inside its own job. It does not wait
// for a run already under way. The job, and everything it holds, is no
// longer referenced by the scheduler once no run of it is under way or
// waiting for a worker.
//
// A one-shot task stops being pending when it comes due: from then on it
// runs as soon as a worker is free, and CancelTask returns false. It also
// returns false for an unknown or already cancelled task, for 0, for an ID
// of another Scheduler, and after Shutdown.
//
// With [EagerCancel] the call sends the scheduler a request, and may wait,
// as ScheduleOne may, while requests back up. With [LazyCancel] it never
// waits.
func (s *Scheduler) CancelTask(id TaskID) bool {
	t := s.slab.lookup(id)
	if t == nil || s.IsShutdown() {
		return false
	}
	// The cell is looked up before the task's lock is taken: if the task
	// has gone since, and its chunk with it, the lock turns the cancel away
	// and the cell is not touched.
	slot := s.slab.slotOf(id)
	if !t.cancel(id.gen(), s.slab.argCell(slot)) {
		return false
	}
	s.cancel.cancelled(slot, id.gen(), s.slab.shardOf(slot))
	return true
}

// Reset moves the next run of the pending task id to delay from now; a
// repeating task then continues every interval from that run. It reports false,
// and changes nothing, when id is not pending: unknown, cancelled, a one-shot
// that has come due (see [Scheduler.CancelTask]), an ID of another Scheduler,
// or after Shutdown. Unlike [time.Timer.Reset], it never re-arms a one-shot
// that has come due: schedule a new task for that.
//
// Reset is the heartbeat path: it allocates nothing and sends no request
// when it postpones a deadline (the usual case) or moves it earlier to a
// time well ahead; the scheduler catches up with such moves in bulk, not
// once per call. Moving a deadline earlier to shortly from now sends the
// scheduler a request, and may then wait, as ScheduleOne may, while
// requests back up.
func (s *Scheduler) Reset(id TaskID, delay time.Duration) bool {
	t := s.slab.lookup(id)
	if t == nil || s.IsShutdown() {
		return false
	}
	when := s.clock.deadline(delay)
	old, ok := t.moveTo(id.gen(), when)
	if !ok {
		return false
	}
	if when < old {
		// The entry may now be later than the task: tell the owner.
		if delay >= deferMoves {
			s.inbox.noteMovedEarlier(when)
		} else {
			slot := s.slab.slotOf(id)
			s.inbox.send(s.slab.shardOf(slot), op{slot: slot, gen: id.gen(), kind: opEarlier}, when)
		}
	}
	return true
}

// Deadline returns the instant at which task id is due. For a pending task it
// is the next deadline, as Reset last set it; inside a repeating task's job,
// that is the deadline of the task's next run. For a one-shot that has come due
// and whose job waits for a worker or is running, it is the deadline it came
// due at, so a job of [Scheduler.ScheduleOneWith] can learn, from inside, the
// instant it was due; this holds after Shutdown too, for a job that was already
// running. It reports false for a task that is cancelled or finished, for an
// unknown ID or 0, for an ID of another Scheduler, and for a pending task after
// Shutdown. The instant is reckoned from the monotonic clock, as the deadline
// is: a change of the wall clock since the task was scheduled does not shift
// it. A deadline too far out to represent is reported as about 9 years after
// New.
func (s *Scheduler) Deadline(id TaskID) (time.Time, bool) {
	t := s.slab.lookup(id)
	if t == nil {
		return time.Time{}, false
	}
	w, ok := t.stateAt(id.gen())
	if !ok {
		return time.Time{}, false
	}
	switch wordStatus(w) {
	case statusCancelled:
		return time.Time{}, false
	case statusPending:
		if s.IsShutdown() {
			return time.Time{}, false // Shutdown dropped it
		}
	}
	return time.Now().Add(time.Duration(wordWhen(w) - s.now())), true
}

// Len returns the number of pending tasks: one-shot tasks that have not
// come due and repeating tasks not cancelled. Tombstones do not count.
// After Shutdown it returns 0.
func (s *Scheduler) Len() int {
	if s.IsShutdown() {
		return 0
	}
	// Ends before starts, so that every end counted comes with its start.
	n := -s.owner.ended.Load() - int64(s.cancel.cancels())
	n += int64(s.scheduled.sum())
	return int(max(n, 0))
}

// shardedCount is a count kept in one cache line per slab shard, so that
// no line takes a write from every core: the adds behind Len and Stats
// (Scheduler.scheduled), each counted in the shard it took its slot from,
// and the cancels (counted by the cancel strategy), each in its task's
// shard, which for a caller that adds and cancels on one core is that
// core's. Writers add to their shard's n; readers sum the shards.
type shardedCount [shardCount]struct {
	n atomic.Uint64
	_ cacheLinePad
}

func (c *shardedCount) sum() uint64 {
	var n uint64
	for i := range c {
		n += c[i].n.Load()
	}
	return n
}

// IsShutdown reports whether [Scheduler.Shutdown] or
// [Scheduler.ShutdownContext] has been called.
func (s *Scheduler) IsShutdown() bool { return s.inbox.closed.Load() }

// Shutdown stops the scheduler. It is idempotent, safe to call concurrently
// with any other method (Shutdown and [Scheduler.ShutdownContext] included) and
// from inside a job, and returns without waiting for running jobs. Once it
// returns, no worker takes another job: pending tasks and due jobs that no
// worker had taken are dropped (counted in [Stats].Dropped) and their jobs are
// no longer referenced; ScheduleOne and Schedule return [ErrShutdown], and
// CancelTask and Reset return false. Jobs already running run to their end. A
// job a worker had just taken either starts, perhaps just after Shutdown
// returns, or, if the worker sees the shutdown first, is dropped too: to know
// that no job runs any more, use [Scheduler.ShutdownContext]. A pool created by
// New is released; one given by [WithPool] is left alone.
func (s *Scheduler) Shutdown() { s.stop() }

// ShutdownContext is [Scheduler.Shutdown] followed by a wait, until ctx is
// done, for the jobs still running or about to start and, for a pool created by
// New, for all of its goroutines to exit. It returns nil when they have, and no
// job starts afterwards; it returns ctx.Err() otherwise. The scheduler is shut
// down either way. It never waits for work that is not the scheduler's: with
// [WithPool], jobs of others running on the pool do not hold it up. Called from
// inside a job it waits for that job too, so it can only return ctx.Err()
// there.
func (s *Scheduler) ShutdownContext(ctx context.Context) error {
	s.stop()
	for _, done := range []<-chan struct{}{s.runner.q.idle, s.poolDone} {
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
		s.inbox.close()
		close(s.quit)
		<-s.owner.done
		// The owner has dropped what was pending and queues nothing more:
		// close the run queue and drop the due jobs no drain has taken.
		s.runner.close()
		if s.poolDone != nil {
			// Released exactly once, here. Waiting for the workers to exit is
			// left to a goroutine of its own, so that Shutdown returns at once
			// and [Scheduler.ShutdownContext] can give up when its context ends.
			go func() {
				// The only call that releases the pool (ants' Release and
				// ReleaseContext race when called concurrently). It returns
				// once every worker and ants' own goroutines have exited.
				_ = s.runner.pool.ReleaseContext(context.Background())
				close(s.poolDone)
			}()
		}
	})
}

// add allocates a task for job j, due delay from now, and queues it for
// the owner. Each part is asked once, in turn: the slab for a slot, its ID
// and, if j has an argument, its cell; the task to begin; the inbox to
// carry the add.
func (s *Scheduler) add(j job, delay, interval time.Duration) (TaskID, error) {
	if s.IsShutdown() {
		return 0, ErrShutdown
	}
	id, slot, t, cell, k, ok := s.slab.allocID(j.arg != nil)
	if !ok {
		return 0, ErrTooManyTasks
	}
	when := t.begin(s.clock, j, cell, delay, interval != 0)
	gen := id.gen()
	// Counted before the owner can see the task, so that no snapshot counts
	// its end without its start.
	c := &s.scheduled[k].n
	c.Add(1)
	if !s.inbox.send(k, op{slot: slot, gen: gen, kind: opAdd, interval: int64(interval)}, when) {
		// Shut down meanwhile: the task was never scheduled.
		c.Add(^uint64(0))
		t.abandon()
		s.slab.free([]uint32{slot})
		return 0, ErrShutdown
	}
	return id, nil
}
