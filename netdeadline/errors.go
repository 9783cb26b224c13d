package netdeadline

import "errors"

var (
	// ErrNilScheduler is returned by [NewConn] and [NewListener] for a nil
	// Scheduler.
	ErrNilScheduler = errors.New("netdeadline: nil scheduler")

	// ErrNilConn is returned by [NewConn] for a nil connection.
	ErrNilConn = errors.New("netdeadline: nil connection")

	// ErrNilListener is returned by [NewListener] for a nil listener.
	ErrNilListener = errors.New("netdeadline: nil listener")
)
