package main

import (
	"slices"
	"time"

	"github.com/go-schedule/schedule/bench/loadtest"
)

// brokerLateness returns how late the brokers gave up the silent clients,
// sorted, in microseconds: for each client that both a load process
// (LastWrites) and a broker (GaveUp) name, from its last write plus
// timeout to the broker's OnDisconnect for it. Both moments are read from
// the wall clock, which the processes of a run, all on one machine, share.
// A client that only one side names has none, so that the count shows
// what is missing.
func brokerLateness(loads []loadtest.LoadResult, brokers []brokerResult, timeout time.Duration) []int64 {
	var us []int64
	for _, b := range brokers {
		for id, gaveUp := range b.GaveUp {
			for _, l := range loads {
				if last, ok := l.LastWrites[id]; ok {
					us = append(us, (time.Duration(gaveUp-last) - timeout).Microseconds())
					break
				}
			}
		}
	}
	slices.Sort(us)
	return us
}
