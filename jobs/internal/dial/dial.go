// Package dial holds what the jobs commands share about reaching NATS at
// start, so that an unreachable engine is reported within the commands'
// bound whatever the number of URLs given.
package dial

import (
	"strings"
	"time"
)

// Within is how long a command may take to connect and open its queue
// before it reports the engine unreachable: the commands promise 15 s,
// and this leaves room to print and exit.
const Within = 12 * time.Second

// connectShare is the part of Within that connecting may use, whatever
// the number of URLs: the client tries each URL in turn, each for its
// own timeout.
const connectShare = 5 * time.Second

// minTimeout is the shortest timeout one URL is given: a server that is
// up answers a loopback or LAN dial well within it.
const minTimeout = time.Second

// Timeout returns the connect timeout for each of urls (comma-separated),
// so that trying them all takes about connectShare: at least minTimeout
// each, which with more than five URLs that all black-hole their dials
// may take longer than connectShare.
func Timeout(urls string) time.Duration {
	n := strings.Count(urls, ",") + 1
	return max(connectShare/time.Duration(n), minTimeout)
}
