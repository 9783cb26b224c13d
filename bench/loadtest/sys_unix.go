//go:build unix

package loadtest

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// cpuTime returns the CPU time, user and system, this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// contextSwitches returns the number of times this process's threads
// gave up their processor, voluntarily (to wait: an idle thread going to
// sleep, a goroutine blocking in a system call) or not.
func contextSwitches() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return int64(ru.Nvcsw) + int64(ru.Nivcsw)
}

// residentSet returns the process's resident set size in bytes, or
// fallback where /proc does not tell.
func residentSet(fallback int64) int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return fallback
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return fallback
	}
	pages, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return fallback
	}
	return pages * int64(os.Getpagesize())
}

// OpenFileLimit returns the process's hard limit on open files, which the
// Go runtime raises the soft limit to at start, and false where the
// system does not tell.
func OpenFileLimit() (uint64, bool) {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return 0, false
	}
	return uint64(l.Max), true
}

// PeakRSS returns the peak resident set of the exited process ps, in
// bytes, or 0 where the system does not tell.
func PeakRSS(ps *os.ProcessState) int64 {
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok {
		return 0
	}
	return maxrssBytes(int64(ru.Maxrss))
}
