package gnetidle

// WatchOf returns the Watch that Opened keeps for the descriptor fd, or nil.
// Call it on the connection's event loop.
func WatchOf(d *Detector, fd int) *Watch { return d.conns.load(fd) }

// RaceEnabled tells the external tests whether the race detector is on.
const RaceEnabled = raceEnabled
