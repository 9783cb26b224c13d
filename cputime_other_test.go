//go:build !unix || aix

package schedule_test

import "time"

// cpuTime is not available here: benchmarks then report wall time only.
func cpuTime() (d time.Duration, ok bool) { return 0, false }
