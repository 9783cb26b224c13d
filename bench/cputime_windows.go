//go:build windows

package main

import (
	"syscall"
	"time"
)

// cpuTime returns the user plus kernel CPU time this process has used so
// far, from GetProcessTimes; ok is false if the call failed.
func cpuTime() (d time.Duration, ok bool) {
	var creation, exit, kernel, user syscall.Filetime
	h, err := syscall.GetCurrentProcess()
	if err == nil {
		err = syscall.GetProcessTimes(h, &creation, &exit, &kernel, &user)
	}
	if err != nil {
		return 0, false
	}
	// A Filetime counts 100 ns intervals.
	ticks := func(f syscall.Filetime) int64 { return int64(f.HighDateTime)<<32 | int64(f.LowDateTime) }
	return time.Duration((ticks(kernel) + ticks(user)) * 100), true
}
