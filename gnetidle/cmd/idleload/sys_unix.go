//go:build unix

package main

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

// openFileLimit returns the process's limit on open files.
func openFileLimit() (uint64, bool) {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return 0, false
	}
	return uint64(l.Max), true
}

// peakRSS returns the peak resident set of the exited process ps, in
// bytes.
func peakRSS(ps *os.ProcessState) int64 {
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok {
		return 0
	}
	return maxrssBytes(ru.Maxrss)
}
