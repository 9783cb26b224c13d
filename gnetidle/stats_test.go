package gnetidle_test

import "github.com/go-schedule/schedule/gnetidle"

// idleStats has the fields of the schedprom module's IdleStats, to which
// users convert a Detector's Stats in one expression, without either
// module importing the other (so that neither's users download the
// other's dependencies). This line fails to compile if Stats changes
// shape; schedprom's IdleStats must then change with it.
var _ = idleStats(gnetidle.Stats{})

type idleStats struct {
	Watched int
	Events  [3]uint64
	Closed  uint64
}
