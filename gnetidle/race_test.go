//go:build race

package gnetidle

// raceEnabled is true under the race detector, which slows everything down:
// tests that open many connections open fewer.
const raceEnabled = true
