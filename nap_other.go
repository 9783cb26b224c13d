//go:build !linux

package schedule

import "time"

// canNap is false where the Go runtime's timers wake in time on their own:
// the other platforms' pollers take timeouts finer than a millisecond.
const canNap = false

// kernelSleep is never called where canNap is false.
func kernelSleep(time.Duration) {}
