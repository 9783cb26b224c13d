//go:build linux

package main

import (
	"syscall"
	"time"
)

// usage is the process's resource use so far.
type usage struct {
	// cpu is user plus system CPU time.
	cpu time.Duration
	// ctxsw counts voluntary and involuntary context switches; on Linux
	// RUSAGE_SELF covers every thread of the process, exited ones too.
	ctxsw uint64
}

// readUsage returns the process's resource use from getrusage(RUSAGE_SELF).
func readUsage() (usage, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return usage{}, err
	}
	return usage{
		cpu:   time.Duration(ru.Utime.Nano() + ru.Stime.Nano()),
		ctxsw: uint64(ru.Nvcsw + ru.Nivcsw),
	}, nil
}
