//go:build race

package netdeadline_test

const raceEnabled = true
