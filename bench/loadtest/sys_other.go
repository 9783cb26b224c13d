//go:build !unix

package loadtest

import (
	"os"
	"time"
)

// cpuTime is not measured on this system.
func cpuTime() time.Duration { return 0 }

// contextSwitches is not measured on this system.
func contextSwitches() int64 { return 0 }

// residentSet returns fallback: the resident set is not measured on this
// system.
func residentSet(fallback int64) int64 { return fallback }

// OpenFileLimit returns false: the limit is not known on this system.
func OpenFileLimit() (uint64, bool) { return 0, false }

// PeakRSS returns 0: the peak resident set is not measured on this system.
func PeakRSS(*os.ProcessState) int64 { return 0 }
