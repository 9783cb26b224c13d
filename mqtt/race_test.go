//go:build race

package mqtt_test

// raceEnabled is true under the race detector, which allows at most 8,128
// live goroutines per process and slows everything down: tests that
// connect many clients connect fewer.
const raceEnabled = true
