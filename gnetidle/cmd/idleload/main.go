// Command idleload load-tests idle-connection detection in Go TCP servers,
// three ways, on the same load, in one run:
//
//   - schedule: gnet with package gnetidle, one go-schedule task per
//     connection, pushed out by each read;
//   - tick: gnet with what its maintainer suggested in gnet#635, a min-heap
//     of expiry times kept by the server and driven by OnTick;
//   - net: the standard library's net server, a goroutine per connection
//     that sets a read deadline before each read;
//   - tickfix, only when asked for with -servers: tick written the plain
//     way, with each read moving the connection down the heap under the
//     heap's mutex;
//   - reset and stamp, only when asked for with -servers: gnet with
//     go-schedule written directly on the Scheduler, reader idle only,
//     each read pushing the connection's task out with a Reset (reset,
//     gnetidle's way) or storing the time for the task to re-arm itself
//     when it comes due (stamp, Netty's way), to compare the two without
//     the rest of gnetidle.
//
// For each, it starts server processes (gateway shards, each on a loopback
// port of its own) and load processes that connect raw TCP clients to them.
// Every client sends a byte every -beat from the moment it connects. Most
// keep doing so; a share (-silent) stop at a moment chosen at random within
// -fall after every client is connected, and then send nothing, so that
// only the server can notice them: it must close each of them -idle after
// its last byte, and no other.
//
// The report puts the servers side by side: silent connections closed
// against expected, and closes the servers counted against expected; live
// connections closed (must be 0); connections closed early (must be 0);
// detection lateness past the timeout (p50, p99, max), as the silent
// clients saw it, from their last byte to the end of their connection;
// server memory per connection (resident set and Go heap), server CPU per
// connection per second, and goroutines. Progress goes to standard error.
//
// Usage, from the module's directory (gnetidle/):
//
//	cd gnetidle/cmd/idleload && go run . [flags]
//
// The flags are:
//
//	-conns n         connections in all, live and silent (default 10000)
//	-silent f        share of them that fall silent (default 0.1)
//	-idle d          the servers' idle timeout (default 5s)
//	-beat d          interval between a client's bytes (default idle/5)
//	-fall d          window after the start in which silent clients stop (default 2 × idle)
//	-grace d         wait after the last silent client's deadline before counting (default 2s)
//	-servers list    servers to measure, in order (default schedule,tick,net; tickfix, reset, stamp too)
//	-rounds n        measure the servers this many times, interleaved, each round
//	                 starting one server further on in the list (default 1)
//	-per-process n   connections per process at most (default 15000); server and
//	                 load processes are as many as that needs, unless set:
//	-server-procs n  server processes (gateway shards) per server
//	-loaders n       load processes
//	-dialers n       connections each load process opens at once (default 64)
//	-loops n         gnet event loops per server process (default: one per CPU)
//	-workers n       go-schedule's pool size per server process (default 4)
//	-seed n          seed of the random phases and silent moments (default 1)
//	-cpuprofile dir  write a CPU profile of each server process over the window
//	                 to dir/MODE-ROUND-INDEX.pprof
//
// A process may hold only so many open files (20,000 on the machine the
// figures in docs/gnet.md come from), hence the processes: by default one
// server process and one load process per 15,000 connections. Every load
// process dials from a loopback source address of its own (127.x.y.z,
// picked at random for each run), so that neither the ephemeral ports of
// one address nor the sockets left in TIME_WAIT by an earlier run limit a
// run.
//
// The exit status is 0 when, for every go-schedule server and round,
// exactly the silent connections were closed, none early, by the servers'
// own count too, and no live one; 1 when such a count is wrong or the run
// failed, and the last lines say which; 2 for invalid flags. The servers
// that do not run on go-schedule (the OnTick heaps and net) are baselines:
// a wrong count of theirs is reported as the baseline's and does not fail
// the run.
package main

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/go-schedule/schedule/bench/loadtest"
)

// The servers measured.
const (
	modeSchedule = "schedule"
	modeTick     = "tick"
	modeNet      = "net"
	modeTickFix  = "tickfix" // only when asked for: tick, fixing the heap on every read
	modeReset    = "reset"   // only when asked for: go-schedule with a Reset per read
	modeStamp    = "stamp"   // only when asked for: go-schedule with a time stored per read
)

// allModes are the servers measured by default; knownModes, all there are.
var (
	allModes   = []string{modeSchedule, modeTick, modeNet}
	knownModes = []string{modeSchedule, modeTick, modeNet, modeTickFix, modeReset, modeStamp}
)

func main() { loadtest.Main(run) }

// run is main with its context, arguments and streams made explicit; it
// returns the exit status. A process started with -role is a child of a
// run; otherwise it runs the whole load test.
var run = loadtest.Command("idleload", parseFlags, runLoad, runChild)

// config is a whole run's.
type config struct {
	Conns       int
	Silent      float64
	Idle        time.Duration
	Beat        time.Duration
	Fall        time.Duration
	Grace       time.Duration
	Modes       []string
	Rounds      int
	PerProcess  int
	ServerProcs int
	Loaders     int
	Dialers     int
	Loops       int
	Workers     int
	Seed        uint64
	ProfileDir  string
}

// silentCount is the number of clients that fall silent.
func (c config) silentCount() int { return loadtest.SilentCount(c.Conns, c.Silent) }

// window is how long the measured window lasts.
func (c config) window() time.Duration { return c.Fall + c.Idle + c.Grace }

func parseFlags(args []string, output io.Writer) (config, error) {
	c := config{Conns: 10000, Silent: 0.1, Idle: 5 * time.Second, Grace: 2 * time.Second,
		Rounds: 1, PerProcess: 15000, Dialers: 64, Workers: 4, Seed: 1}
	fs := loadtest.NewFlagSet("idleload", output,
		"Load-tests idle-connection detection: gnet with go-schedule, gnet with an OnTick heap,",
		"and net with a goroutine and a read deadline per connection, with raw TCP clients.")
	servers := strings.Join(allModes, ",")
	fs.IntVar(&c.Conns, "conns", c.Conns, "connections in all, live and silent")
	fs.Float64Var(&c.Silent, "silent", c.Silent, "`share` of the connections that fall silent, from 0 to 1")
	fs.DurationVar(&c.Idle, "idle", c.Idle, "the servers' idle timeout")
	fs.DurationVar(&c.Beat, "beat", 0, "interval between a client's bytes (default idle/5)")
	fs.DurationVar(&c.Fall, "fall", 0, "window after the start in which silent clients stop (default 2 × idle)")
	fs.DurationVar(&c.Grace, "grace", c.Grace, "wait after the last silent client's deadline before counting")
	fs.StringVar(&servers, "servers", servers, "servers to measure, in order: "+strings.Join(allModes, ", ")+
		"; also "+modeTickFix+", the OnTick heap fixed on every read, and "+modeReset+" and "+modeStamp+
		", go-schedule on its own with a Reset or a time stored per read")
	fs.IntVar(&c.Rounds, "rounds", c.Rounds, "measure the servers this many times, interleaved, each round starting one server further on")
	fs.IntVar(&c.PerProcess, "per-process", c.PerProcess, "connections per process at most, below the limit of open files per process")
	fs.IntVar(&c.ServerProcs, "server-procs", 0, "server processes per server (default: as -per-process needs)")
	fs.IntVar(&c.Loaders, "loaders", 0, "load processes (default: as -per-process needs)")
	fs.IntVar(&c.Dialers, "dialers", c.Dialers, "connections each load process opens at once")
	fs.IntVar(&c.Loops, "loops", 0, "gnet event loops per server process (default: one per CPU)")
	fs.IntVar(&c.Workers, "workers", c.Workers, "go-schedule's pool size per server process")
	fs.Uint64Var(&c.Seed, "seed", c.Seed, "seed of the random phases and silent moments")
	fs.StringVar(&c.ProfileDir, "cpuprofile", "", "`directory` for CPU profiles of the server processes over the window")
	if err := loadtest.Parse(fs, args); err != nil {
		return c, err
	}
	seen := map[string]bool{}
	for _, m := range strings.Split(servers, ",") {
		m = strings.TrimSpace(m)
		switch {
		case !slices.Contains(knownModes, m):
			return c, fmt.Errorf("-servers: unknown server %q; want one of %s", m, strings.Join(knownModes, ", "))
		case seen[m]:
			return c, fmt.Errorf("-servers: %q twice", m)
		}
		seen[m] = true
		c.Modes = append(c.Modes, m)
	}
	if c.Beat == 0 {
		c.Beat = c.Idle / 5
	}
	if c.Fall == 0 {
		c.Fall = 2 * c.Idle
	}
	switch {
	case c.Conns <= 0:
		return c, errors.New("-conns must be positive")
	case c.Silent < 0 || c.Silent > 1:
		return c, errors.New("-silent must be from 0 to 1")
	case c.Idle <= 0:
		return c, errors.New("-idle must be positive")
	case c.Beat <= 0 || c.Beat >= c.Idle:
		return c, errors.New("-beat must be positive and shorter than -idle")
	case c.Fall < 0 || c.Grace < 0:
		return c, errors.New("-fall and -grace must not be negative")
	case c.Rounds <= 0:
		return c, errors.New("-rounds must be positive")
	case c.PerProcess <= 0 || c.Dialers <= 0 || c.Workers <= 0:
		return c, errors.New("-per-process, -dialers and -workers must be positive")
	case c.ServerProcs < 0 || c.Loaders < 0 || c.Loops < 0:
		return c, errors.New("-server-procs, -loaders and -loops must not be negative")
	}
	var err error
	c.ServerProcs, c.Loaders, err = loadtest.Spread(c.Conns, c.PerProcess, c.ServerProcs, c.Loaders, "server processes")
	return c, err
}
