//go:build linux

package schedule

import (
	"syscall"
	"time"
)

// canNap reports whether this platform needs the owner's naps (nap.go): on
// Linux the Go runtime waits for its timers in epoll_wait, whose timeout
// is in whole milliseconds.
const canNap = true

// kernelSleep blocks the calling goroutine's thread in the kernel for d.
func kernelSleep(d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	for syscall.Nanosleep(&ts, &ts) == syscall.EINTR {
		// A signal (the Go runtime's preemption, for one) cut it short:
		// sleep the rest.
	}
}
