//go:build !unix

package main

import (
	"os"
	"time"
)

// cpuTime is not measured on this system.
func cpuTime() time.Duration { return 0 }

// residentSet returns fallback: the resident set is not measured on this
// system.
func residentSet(fallback int64) int64 { return fallback }

// openFileLimit is not known on this system.
func openFileLimit() (uint64, bool) { return 0, false }

// peakRSS is not measured on this system.
func peakRSS(*os.ProcessState) int64 { return 0 }
