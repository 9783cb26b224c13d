//go:build !(unix && !aix) && !windows

package main

import "time"

// cpuTime is the fallback for systems where the benchmark has no way to
// read the process's CPU time: it reports ok false, and the figures that
// need it are left out of the results as not measured.
func cpuTime() (d time.Duration, ok bool) { return 0, false }
