//go:build !linux

package main

import (
	"errors"
	"time"
)

// usage is the process's resource use so far.
type usage struct {
	cpu   time.Duration
	ctxsw uint64
}

// readUsage fails outside Linux: the context-switch counts of getrusage
// cover every thread of a process only there, and the measurement needs
// them.
func readUsage() (usage, error) {
	return usage{}, errors.New("the host measurement needs Linux (getrusage context switches of every thread)")
}
