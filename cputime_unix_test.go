//go:build unix && !aix

package schedule_test

import (
	"syscall"
	"time"
)

// cpuTime returns the user plus system CPU time this process has used so
// far, from getrusage(RUSAGE_SELF); ok is false if the call failed.
func cpuTime() (d time.Duration, ok bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
