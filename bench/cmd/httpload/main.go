// Command httpload compares a net/http server on a listener wrapped by
// package netdeadline (its connections' deadlines served from a go-schedule
// Scheduler) with the same server on a plain listener (the runtime's
// deadlines), on the same load in one run.
//
// The server has a ReadTimeout and an IdleTimeout, so that net/http moves
// each connection's read deadline several times per request. The load is
// many keep-alive connections, each sending a small GET every -every, at
// moments spread evenly over that period. Each server runs in a process of
// its own, so that its CPU time is its own; the parent process is the
// load, and it runs the servers one after the other, alternating their
// order from one round to the next, so that a change in the machine's load
// does not fall on one of them only.
//
// Usage:
//
//	cd bench && go run ./cmd/httpload [flags]
//
// The report gives, for each server: requests answered and failed, request
// latency p50/p99/max as the client sees it (from writing the request to
// reading the whole response), the server's CPU time per second per
// connection and per request over the window, its memory per connection,
// and the wrapped server's ratios to the plain one.
//
// The exit status is 0 when the wrapped server answered every request; 1
// when it failed one, or the run failed; 2 for invalid flags. Failures of
// the plain server are reported as the baseline's.
package main

import (
	"github.com/go-schedule/schedule/bench/loadtest"
)

func main() { loadtest.Main(run) }

// run is main with its context, arguments and streams made explicit; a
// process started with -role is a server.
var run = loadtest.Command("httpload", parseFlags, runLoad, runChild)
