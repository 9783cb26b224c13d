package loadtest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
)

// FileMargin is how many descriptors a process needs besides its
// connections: listeners, pipes, the runtime's and the server library's
// pollers.
const FileMargin = 200

// MaxLoaders is the most load processes a run may have: load process i
// dials from 127.X.Y.(i+1) (see Loopback), and the last byte of an address
// runs from 1 to 254, 0 naming the network and 255 its broadcast address.
const MaxLoaders = 254

// Spread returns how many server and load processes a run of conns
// connections needs, with at most perProcess connections in any process:
// servers and loaders as given, or, where 0, as few as perProcess allows.
// serverNoun names the server processes in its errors ("brokers"). It
// refuses more load processes than MaxLoaders, counts that put more than
// perProcess connections into one process, and a perProcess too close to
// this system's limit of open files per process (see FileMargin).
//
// conns and perProcess must be positive, servers and loaders not negative.
func Spread(conns, perProcess, servers, loaders int, serverNoun string) (int, int, error) {
	if servers == 0 {
		servers = ceilDiv(conns, perProcess)
	}
	if loaders == 0 {
		loaders = ceilDiv(conns, perProcess)
	}
	if loaders > MaxLoaders {
		return 0, 0, fmt.Errorf("at most %d load processes", MaxLoaders)
	}
	if n := ceilDiv(conns, servers); n > perProcess {
		return 0, 0, fmt.Errorf("%d %s would hold %d connections each, more than -per-process %d", servers, serverNoun, n, perProcess)
	}
	if n := ceilDiv(conns, loaders); n > perProcess {
		return 0, 0, fmt.Errorf("%d load processes would hold %d connections each, more than -per-process %d", loaders, n, perProcess)
	}
	if lim, ok := OpenFileLimit(); ok && uint64(perProcess)+FileMargin > lim {
		return 0, 0, fmt.Errorf("-per-process %d is too close to this machine's limit of %d open files per process", perProcess, lim)
	}
	return servers, loaders, nil
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// Share returns process i's part of n spread over k processes: n/k, one
// more for the first n%k processes.
func Share(n, k, i int) int {
	s := n / k
	if i < n%k {
		s++
	}
	return s
}

// SilentCount returns how many of n clients fall silent when a share of
// them, from 0 to 1, does: the nearest whole number.
func SilentCount(n int, share float64) int { return int(float64(n)*share + 0.5) }

// Loopback is a network of loopback source addresses, 127.X.Y.0/24, for the
// load processes of one set of servers: load process i dials from
// 127.X.Y.(i+1). An address of its own gives every load process all the
// ephemeral ports of an address, and a network new in every run keeps the
// sockets that an earlier run left in TIME_WAIT out of the way.
type Loopback struct{ x, y int }

// loopbacks is how many networks RandomLoopbacks chooses from: X from 1 to
// 254, Y from 0 to 255.
const loopbacks = 254 * 256

// RandomLoopbacks returns n distinct loopback networks chosen at random,
// none in 127.0.0.0/16, where the servers listen. It returns an error if n
// is more than there are.
func RandomLoopbacks(n int) ([]Loopback, error) {
	if n > loopbacks {
		return nil, errors.New("more loopback networks than there are")
	}
	nets := make([]Loopback, 0, n)
	seen := make(map[Loopback]bool, n)
	for len(nets) < n {
		l := Loopback{1 + rand.IntN(254), rand.IntN(256)}
		if !seen[l] {
			seen[l] = true
			nets = append(nets, l)
		}
	}
	return nets, nil
}

// Source returns the address load process i dials from, 127.X.Y.(i+1); i
// runs from 0 to MaxLoaders-1.
func (l Loopback) Source(i int) string {
	return "127." + strconv.Itoa(l.x) + "." + strconv.Itoa(l.y) + "." + strconv.Itoa(i+1)
}

// String returns the network in CIDR notation.
func (l Loopback) String() string { return fmt.Sprintf("127.%d.%d.0/24", l.x, l.y) }
