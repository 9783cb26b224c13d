package jobs

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"time"
)

// Defaults of [WorkerConfig].
const (
	DefaultLease   = 15 * time.Second
	DefaultWorkers = 16
)

// DefaultRetry is the waits after failed attempts 1 to 5 when
// [WorkerConfig.Retry] is nil.
var DefaultRetry = []time.Duration{time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 20 * time.Second}

var (
	// ErrInvalidLease is returned for a lease that is not whole seconds of
	// at least one.
	ErrInvalidLease = errors.New("jobs: a lease is whole seconds, at least 1s")
	// ErrInvalidWorkers is returned for fewer than one worker.
	ErrInvalidWorkers = errors.New("jobs: workers must be at least 1")
	// ErrInvalidRetry is returned for a retry wait that is not positive.
	ErrInvalidRetry = errors.New("jobs: retry waits must be positive")
	// ErrNilHandler is returned for a WorkerConfig without a Handler.
	ErrNilHandler = errors.New("jobs: a worker needs a handler")
)

// Job is what a handler gets: one attempt of one job.
type Job struct {
	Key     string
	Payload []byte
	Attempt int       // 1 for the first attempt
	Due     time.Time // the attempt's due time, to the millisecond
}

// Handler runs one attempt. A nil error makes the job done; an error (or a
// panic) makes it due again after the next retry wait, or dead when none
// is left. ctx ends when the worker abandons the attempt ([Worker.Stop]'s
// grace ran out): a handler should then return soon.
type Handler func(ctx context.Context, j Job) error

// EventKind names an Event.
type EventKind string

// The events a worker reports.
const (
	EventStart      EventKind = "start"
	EventDone       EventKind = "done"
	EventFail       EventKind = "fail"
	EventDead       EventKind = "dead"
	EventSuperseded EventKind = "superseded"
)

// Event reports an attempt's start or end. Each start is followed by one
// end event, unless the worker abandons the attempt ([Worker.Stop]'s grace
// ran out) or the engine left its end unrecorded for a minute of tries (a
// warning on [WorkerConfig.Logger]); such an attempt starts again once the
// worker's lease is gone.
type Event struct {
	Kind    EventKind
	Key     string
	Attempt int
	Due     time.Time // start: the attempt's due time
	At      time.Time // when it started or ended
	Next    time.Time // fail: when the next attempt is due
	Node    string
}

// WorkerConfig configures a worker.
type WorkerConfig struct {
	// Node names the worker, [A-Za-z0-9_-]{1,64}; required. A worker
	// restarted under the same name takes over the lease of its earlier
	// life. Two live workers must not share a name.
	Node string
	// Lease is how long a worker killed without warning holds its jobs:
	// whole seconds, at least 1s; 0 means [DefaultLease].
	Lease time.Duration
	// Workers is how many attempts run at once; 0 means [DefaultWorkers].
	Workers int
	// Retry holds the waits after failed attempts: attempt N+1 is due
	// Retry[N-1] after attempt N failed, and a failure with no wait left
	// makes the job dead. Nil means [DefaultRetry]; empty means no retries.
	Retry []time.Duration
	// Handler runs the attempts; required.
	Handler Handler
	// OnEvent, if not nil, is called for every start and end, from the
	// goroutine of the attempt: calls for different attempts run
	// concurrently, so OnEvent must be safe for concurrent use, and an
	// attempt's end is recorded before its end event is reported.
	OnEvent func(Event)
	// Logger receives what the worker cannot report otherwise; nil means
	// slog.Default().
	Logger *slog.Logger
}

func (c *WorkerConfig) validate() error {
	if !ValidName(c.Node) {
		return ErrInvalidName
	}
	if c.Lease == 0 {
		c.Lease = DefaultLease
	}
	if c.Lease < time.Second || c.Lease%time.Second != 0 {
		return ErrInvalidLease
	}
	if c.Workers == 0 {
		c.Workers = DefaultWorkers
	}
	if c.Workers < 1 {
		return ErrInvalidWorkers
	}
	if c.Retry == nil {
		c.Retry = DefaultRetry
	}
	// The worker keeps a copy: neither a later change to DefaultRetry nor
	// one to the caller's slice reaches a running worker.
	c.Retry = slices.Clone(c.Retry)
	for _, d := range c.Retry {
		if d <= 0 {
			return ErrInvalidRetry
		}
	}
	if c.Handler == nil {
		return ErrNilHandler
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return nil
}
