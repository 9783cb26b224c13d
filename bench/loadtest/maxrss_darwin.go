//go:build darwin

package loadtest

// maxrssBytes converts getrusage's ru_maxrss, in bytes on macOS.
func maxrssBytes(v int64) int64 { return v }
