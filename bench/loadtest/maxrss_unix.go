//go:build unix && !darwin

package loadtest

// maxrssBytes converts getrusage's ru_maxrss, in kilobytes here.
func maxrssBytes(v int64) int64 { return v * 1024 }
