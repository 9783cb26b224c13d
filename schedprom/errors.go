package schedprom

import "errors"

// Errors for bad arguments. A constructor given one returns a collector
// whose descriptions carry the error, so that Register returns it (wrapped)
// and a Gather reports it; nothing panics.
var (
	// ErrNilScheduler: NewCollector was given a nil scheduler.
	ErrNilScheduler = errors.New("schedprom: nil scheduler")
	// ErrNilSource: a collector was given nothing to read (a nil Watcher,
	// or a nil snapshot function).
	ErrNilSource = errors.New("schedprom: nil source")
	// ErrEmptyName: NewWatcherCollector was given an empty name.
	ErrEmptyName = errors.New("schedprom: empty metric name")
)
