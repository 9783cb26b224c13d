// Package schedule runs very many delayed and periodic jobs cheaply, on a
// bounded pool of goroutines.
//
// It is built for programs that hold hundreds of thousands to millions of
// deadlines and move them far more often than they fire, such as an IoT
// gateway with a timeout per device connection that every heartbeat pushes
// out again:
//
//	s, _ := schedule.New(8) // jobs run on at most 8 goroutines
//	defer s.Shutdown()
//	id, _ := s.ScheduleOne(func() { disconnect(dev) }, 90*time.Second)
//	// on every heartbeat from dev:
//	s.Reset(id, 90*time.Second)
//
// For deadlines kept by key (device ID, connection) the heartbeat package
// does the bookkeeping: [github.com/go-schedule/schedule/heartbeat.Monitor]
// watches keys and reports the ones that fall silent.
//
// All deadlines live in one min-heap owned by one goroutine, which sleeps
// on a single [time.Timer] set for the earliest of them. Postponing a
// deadline ([Scheduler.Reset]) allocates nothing and sends the scheduler
// no request; due jobs run on an ants pool
// ([github.com/panjf2000/ants/v2.Pool]), at most workers at a time, in
// deadline order when workers are busy.
//
// # Lazy or eager cancel
//
// With [LazyCancel] (the default, package
// [github.com/go-schedule/schedule/lazycancel]) [Scheduler.CancelTask] is
// O(1), never waits for the scheduler and sends it no request: it marks the
// task cancelled and leaves its heap entry behind as a tombstone, which is
// discarded when it reaches the top, or when tombstones pass a fixed share
// of the heap and the heap is rebuilt. With [EagerCancel] (package
// [github.com/go-schedule/schedule/eagercancel]) the cancel asks the
// scheduler to remove the entry at once, in O(log n), and the heap holds
// exactly the live tasks.
//
// # Timing
//
// A job starts when the scheduler's timer wakes it after the job's
// deadline, as promptly as any Go timer: on Linux the runtime waits for
// timers in epoll_wait, whose timeout is in whole milliseconds, so on an
// otherwise idle machine a job starts up to about a millisecond late
// (golang/go#53824). The scheduler adds no mechanism of its own to beat
// that: it sleeps on its Go timer only. [Stats].Lateness, a histogram
// whose bounds [LatenessBounds] returns, and [Stats].LatenessSum report
// how late jobs started.
//
// The scheduler's goroutine wakes for deadlines that really come due, for
// requests that cannot wait, and, a bounded number of times a second, to
// fix the deadlines that [Scheduler.Reset] postponed; with [LazyCancel],
// also at the old deadline of a tombstone that reaches the top of the heap
// before a rebuild, to discard it. [Stats].Wakeups counts its wake-ups.
// With no task pending, no job running and no tombstone left, it does not
// wake at all. The process around it still wakes a few times a second for
// ants, which runs a clock goroutine on a 500 ms ticker in every pool, this
// Scheduler's included, and no option stops it (docs/benchmarks.md, "An
// idle process").
//
// # Guarantees
//
//   - A due job is never lost: it runs, or it is counted in [Stats].Dropped
//     ([Scheduler.Shutdown], or a [WithPool] pool released under the
//     scheduler).
//   - A job that panics or ends its goroutine ([runtime.Goexit]) does not
//     stop later jobs from running, and a job that blocks holds up only its
//     own worker. Neither a job nor a shared pool (full, or released) keeps
//     [Scheduler.Shutdown] from returning: the scheduler never waits inside
//     ants.
//   - A repeating task runs at start + k·interval, never overlaps itself and
//     never bursts to catch up.
//   - TaskIDs are never 0 and never reused, and an ID of one Scheduler
//     names a task of another only by a chance too small to matter (see
//     [TaskID]).
//   - Bad input gets an error ([ErrNilJob], [ErrInvalidInterval],
//     [ErrInvalidWorkers], [ErrNilPool], [ErrBlockingPool], [ErrNilLogger],
//     [ErrUnknownStrategy], [ErrTooManyTasks], [ErrShutdown]), never a
//     panic.
//   - A job that can no longer run is not kept reachable: cancelling a task
//     or shutting down lets its job, and what it captures, go.
//
// Every method is safe for concurrent use, including from inside a job.
// The README and docs/guarantees.md map each guarantee to the test that
// proves it; docs/benchmarks.md compares the library with the Go runtime's
// timers and with timing-wheel libraries.
package schedule

// How the package works, for its maintainers.
//
// A Scheduler is three kinds of goroutine around shared parts, each part a
// type in a file of its own, and each state change a method beside the
// data it changes:
//
//   - Callers (schedule.go) allocate tasks in the slab (slab.go), move a
//     task's state word through the transitions of task.go, and send the
//     owner requests through the inbox (inbox.go).
//   - The owner goroutine (owner.go) is alone with the deadline heap
//     (heap.go) and its timer. It pushes every entry itself, and tells a
//     task's current entry from its tombstones by their tags. The heap
//     knows nothing of its users: it pushes, pops its earliest entry when
//     that is due by a limit it is given, removes, lowers and rebuilds with
//     a keep function it is given. The cancel strategy (cancel.go) is what
//     differs between lazy and eager cancel: what a cancel and a deadline
//     moved earlier do to the heap, when it is rebuilt and how much room a
//     rebuilt heap keeps; it counts the cancels. It holds no reference to the owner or to a task; the owner
//     passes it the heap and does the rebuilds it asks for.
//   - Drains (runner.go), on the ants pool, take due tasks from the run
//     queue, which the owner fills, and run their jobs.
//
// task.go (the state word and its transitions, the generation, and the
// job), job.go (how a slot keeps a job: its func as one word, and its
// argument in the slab's argument column), clock.go (the clock deadlines
// are read on) and slab.go are leaves that all three share; no other file
// stores to the word or swaps it.
// Each counter is declared beside the code that writes it
// (Scheduler.scheduled in schedule.go, the strategies' cancelCount in
// cancel.go, outcomes in runner.go), and stats.go reads them for Stats;
// options.go, errors.go and poolcheck.go serve New.
// invariants.go holds the checks that the build tag invariants compiles
// in (invariants_on.go); without it they compile away.
//
// Control goes down, never back: the owner pulls requests from the inbox
// rather than hand it a callback, the slab and the task call no one back,
// and the heap calls back only in a rebuild, with the keep function the
// owner gives it. And on a fired one-shot's path no goroutine enters a
// file twice:
//
//   - The owner takes the earliest entry out of the heap when its deadline
//     is near (deadlineHeap.popBy, limit now plus lookAhead), and then asks
//     the task what it is: due, not due yet, a tombstone or a postponed
//     deadline (owner.collect). The heap knows entries' deadlines, not
//     tasks; the owner puts an entry that stays back itself (push). The
//     popped entry's place stays a hole that the push fills with one sift
//     down from the top, so a pop and a push back cost what reading the
//     top and fixing it in place would.
//   - The owner's take of a lane's requests hands back the buffer of the
//     requests it applied last (inbox.take): one visit both borrows and
//     returns.
//   - The run queue carries the task, its ID and its argument cell with
//     each due task, found as the owner classified the entry (slab.held),
//     so that a drain goes to the task once before its job: task.run runs the job and lets go, and the
//     runner counts the start before it and recovers a panic around it.
//     The run that lets go last ends the task's life in the same call
//     (task.free, with the slab's generation base), and the slab only
//     takes back the slots free for reuse (slab.vacate).
//
// What still takes two calls to one file, and why, is in the walk, file by
// file, in bench/results/2026-11-28-pathwalk/README.md.
//
// One word per idea, in names and comments alike:
//
//   - run: one execution of a job (runner.runJob, task.run); Stats.Started
//     counts the runs started.
//   - due: a task whose deadline has passed and that the owner has handed
//     over to run (statusDue, task.comeDue); a timer fires, a task comes
//     due.
//   - drain: a pool job that takes due tasks from the run queue and runs
//     their jobs until the queue is empty (runner.drain).
//   - collect, hand over: the owner collects the tasks that came due
//     (owner.collectDue, owner.collect) and hands them over to the run
//     queue (owner.handOver); it runs no job itself.
//   - hole: the place of the heap's earliest entry, popped, until a push
//     fills it or the last entry does (deadlineHeap.hole).
//   - take, apply: the owner takes callers' requests from the inbox
//     (inbox.take) and applies them (owner.applyRequests, owner.apply). A
//     barrier is a request that names no task, for the tests (opBarrier).
//   - begin, abandon: a task's life begins when a caller fills its slot
//     (task.begin); an add that Shutdown overtook is abandoned
//     (task.abandon).
//   - hold, let go: the owner (flagOwned) and a run (flagRunning) each hold
//     a task's slot, and each lets go of it (task.letGo, owner.letGo,
//     task.endRun); whoever lets go last frees the slot.
//   - free, vacant: a task's life ends when its last holder lets go
//     (task.free; slab.free for the owner's), and its slot goes back to
//     the slab (slab.vacate) and waits there, vacant, for reuse
//     (slabShard.vacant, chunk.vacant).
//   - retire: a slot whose generations have come round is never used again
//     (task.free leaves it at generation 0).
//   - job, argument: what a task runs, a func() or a func(TaskID, any)
//     with its argument; the slot keeps the func's word (task.job), and
//     the argument sits in its chunk's argument column (job.go,
//     slab.argCell, slab.newArgCell).
//   - clear: a job's references, its argument's included, are cleared, so
//     that the garbage collector can reclaim what they hold
//     (task.clearJob).
//   - tombstone, discard: a heap entry that no longer stands for a pending
//     task (its tag is not its task's current one, or its task is
//     cancelled) is a tombstone; the owner discards it when it reaches the
//     top, or in a rebuild (owner.classify, canceller.discarded).
//   - rebuild: the heap is rebuilt in O(n), without its tombstones
//     (owner.rebuild, deadlineHeap.retain and heapify).
//   - drop: a job that will never run though nobody cancelled it (at
//     Shutdown, or on a released pool) is dropped, and counted in
//     Stats.Dropped (owner.dropAll, runner.dropDue).
//   - trim: the slab takes chunks whose slots are all vacant out of its
//     directory, for the garbage collector (slab.trim, slab.trimAsked,
//     slabShard.trimmable).
//   - shrink: a buffer's capacity is fitted to what it holds
//     (deadlineHeap.shrink, deadlineHeap.shrinkAfterRebuild,
//     inbox.reuse, runQueue.rewind).
//   - claim, unclaim: the owner or a drain claims the start of a drain
//     (runQueue.claim), and withdraws the claim when the pool refuses it
//     (runQueue.unclaim).
//   - release: ants' word, for a pool only (ants.Pool.Release).
