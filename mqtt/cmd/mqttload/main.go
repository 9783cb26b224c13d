// Command mqttload load-tests MQTT keep-alive in a mochi-mqtt broker, in
// three ways on the same load in the same run: mochi's own keep-alive on
// the go-schedule listener (package github.com/go-schedule/schedule/mqtt,
// NewTCP: the connections' deadlines served from a Scheduler), the
// go-schedule hook (NewKeepAlive), and mochi's own keep-alive on its own
// listener, a runtime timer per connection, the baseline.
//
// For each of them, it starts brokers (gateway shards, each a process
// of its own on its own loopback port) and load processes that connect
// real clients to them over loopback. Most clients are
// github.com/eclipse/paho.mqtt.golang clients that keep the connection
// alive by pinging. The others are bare TCP clients that send a CONNECT
// with a will, ping like the live ones until a moment chosen at random
// within -fall after every client is connected, and then send nothing, so
// that only the broker can notice them: it must disconnect each of them
// 1.5 × Keep Alive after its last packet and publish its will.
//
// The report puts them side by side: silent clients disconnected
// against expected, wills published against expected, live clients
// wrongly disconnected, silent clients disconnected early, detection
// lateness past 1.5 × Keep Alive (p50, p99, max, measured by each silent
// client from its last write to the end of its connection), the broker's
// detection lateness (the same, to the moment the broker gives the client
// up: mochi's OnDisconnect for it, after the will and the close, read on
// the wall clock that the processes of a run share), the wills' lateness at
// a subscriber, and the brokers' memory and CPU per connection. Progress
// goes to standard error while it runs.
//
// Usage:
//
//	cd mqtt/cmd/mqttload && go run . [flags]
//
// The flags are:
//
//	-clients n       clients in all, live and silent (default 10000)
//	-silent f        share of the clients that fall silent (default 0.1)
//	-keepalive s     Keep Alive of every client, in seconds (default 4)
//	-fall d          window after the start in which silent clients fall silent (default 2 × keep-alive)
//	-grace d         wait after the last silent client's deadline before counting (default 2s)
//	-mode m          all (default: listener, hook, then mochi), listener, hook,
//	                 mochi, or several in the order given: mochi,listener; the
//	                 mode hook+deadline is a diagnostic, the hook with mochi's
//	                 deadline left on as well
//	-per-process n   connections per process at most (default 15000); brokers and
//	                 load processes are as many as that needs, unless set:
//	-brokers n       broker processes (gateway shards)
//	-loaders n       load processes
//	-dialers n       connections each load process opens at once (default 64)
//	-workers n       go-schedule's pool size in each broker (default 4)
//	-seed n          seed for the choice of the silent moments (default 1)
//	-together        run the keep-alives at the same time rather than one after
//	                 the other: each on brokers and load processes of its own,
//	                 with their windows started together, so that load from
//	                 elsewhere on the machine falls on both alike (it takes
//	                 twice the processes, and the machine must have room for
//	                 both)
//	-cpuprofile dir  write a CPU profile of each broker process over the
//	                 window to dir/MODE-broker-N.pprof (for go tool pprof)
//
// A process may hold only so many open files (20,000 on the machine the
// figures in docs/mqtt.md come from), hence the processes: by default one
// broker and one load process per 15,000 connections, so 7 of each for
// 100,000. Every load process dials from a loopback source address of its
// own (127.x.y.z, picked at random for each run), so that neither the
// 28,232 ephemeral ports of one address nor the sockets that a previous
// run left in TIME_WAIT limit a run. Run it from the module's directory
// (mqtt/).
//
// The exit status is 0 when, for every keep-alive on go-schedule (listener,
// hook), exactly the silent clients were disconnected, none early, with
// exactly their wills published, and no live client was disconnected; 1
// when one of their counts is wrong or the run failed (standard error says
// which); 2 for invalid flags. A wrong count of the baseline, mochi's own
// keep-alive, is reported as the baseline's and does not fail the run.
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

// Modes: which keep-alive a broker runs.
const (
	modeListener = "listener" // mochi's keep-alive on mqtt.NewTCP
	modeSchedule = "hook"     // mqtt.NewKeepAlive
	modeMochi    = "mochi"    // the baseline
	// modeBoth is a diagnostic: the hook, with mochi's deadline left on as
	// well, so that it measures what the hook costs on top of mochi's own
	// keep-alive, the broker's runtime timers being the same.
	modeBoth = "hook+deadline"
)

// modes lists every mode, in the order of -mode all.
var modes = []string{modeListener, modeSchedule, modeMochi, modeBoth}

func main() { loadtest.Main(run) }

// run is main with its context, arguments and streams made explicit; it
// returns the exit status. A process started with -role is a broker or a
// load process of a run; otherwise it runs the whole load test.
var run = loadtest.Command("mqttload", parseFlags, runLoad, runChild)

// config is a whole run's.
type config struct {
	Clients    int
	Silent     float64
	KeepAlive  int // seconds
	Fall       time.Duration
	Grace      time.Duration
	Modes      []string
	PerProcess int
	Brokers    int
	Loaders    int
	Dialers    int
	Workers    int
	Seed       uint64
	CPUProfile string // directory for the brokers' CPU profiles, or ""
	Together   bool   // run the modes at the same time
}

// silentCount is the number of clients that fall silent.
func (c config) silentCount() int { return loadtest.SilentCount(c.Clients, c.Silent) }

// timeout is how long a client may stay silent: 1.5 × Keep Alive.
func (c config) timeout() time.Duration { return time.Duration(c.KeepAlive) * 1500 * time.Millisecond }

func parseFlags(args []string, output io.Writer) (config, error) {
	c := config{Clients: 10000, Silent: 0.1, KeepAlive: 4, Grace: 2 * time.Second,
		PerProcess: 15000, Dialers: 64, Workers: 4, Seed: 1}
	fs := loadtest.NewFlagSet("mqttload", output,
		"Load-tests MQTT keep-alive in mochi-mqtt brokers: mochi's keep-alive on the go-schedule",
		"listener, the go-schedule hook, and mochi's own, with paho clients that ping and bare",
		"clients that fall silent.")
	mode := "all"
	fs.IntVar(&c.Clients, "clients", c.Clients, "clients in all, live and silent")
	fs.Float64Var(&c.Silent, "silent", c.Silent, "`share` of the clients that fall silent, from 0 to 1")
	fs.IntVar(&c.KeepAlive, "keepalive", c.KeepAlive, "Keep Alive of every client, in `seconds` (mochi's own keep-alive, on either\nlistener, rounds 1.5 × an odd Keep Alive down to whole seconds, and so disconnects early)")
	fs.DurationVar(&c.Fall, "fall", 0, "window after the start in which silent clients fall silent (default 2 × keep-alive)")
	fs.DurationVar(&c.Grace, "grace", c.Grace, "wait after the last silent client's deadline before counting")
	fs.StringVar(&mode, "mode", mode, "keep-alive to measure: all (listener, hook, then mochi), listener, hook, mochi,\nor several in the order given (mochi,listener); hook+deadline, a diagnostic,\nis the hook with mochi's deadline left on as well")
	fs.IntVar(&c.PerProcess, "per-process", c.PerProcess, "connections per process at most, below the system's limit of open files per process")
	fs.IntVar(&c.Brokers, "brokers", 0, "broker processes, each a gateway shard (default: as -per-process needs)")
	fs.IntVar(&c.Loaders, "loaders", 0, "load processes (default: as -per-process needs)")
	fs.IntVar(&c.Dialers, "dialers", c.Dialers, "connections each load process opens at once")
	fs.IntVar(&c.Workers, "workers", c.Workers, "go-schedule's pool size in each broker")
	fs.Uint64Var(&c.Seed, "seed", c.Seed, "seed for the choice of the silent moments")
	fs.BoolVar(&c.Together, "together", false, "run the keep-alives at the same time, each on its own brokers and load processes,\nwith their windows started together, so that they share the machine's load")
	fs.StringVar(&c.CPUProfile, "cpuprofile", "", "write a CPU profile of each broker process over the window to `dir`/MODE-broker-N.pprof")
	if err := loadtest.Parse(fs, args); err != nil {
		return c, err
	}
	if mode == "all" {
		mode = modeListener + "," + modeSchedule + "," + modeMochi
	}
	c.Modes = nil
	for _, m := range strings.Split(mode, ",") {
		if !slices.Contains(modes, m) || slices.Contains(c.Modes, m) {
			return c, fmt.Errorf("-mode %q: want all, %s, or several separated by commas", mode, strings.Join(modes, ", "))
		}
		c.Modes = append(c.Modes, m)
	}
	if c.Fall == 0 {
		c.Fall = 2 * time.Duration(c.KeepAlive) * time.Second
	}
	switch {
	case c.Clients <= 0:
		return c, errors.New("-clients must be positive")
	case c.Silent < 0 || c.Silent > 1:
		return c, errors.New("-silent must be from 0 to 1")
	case c.KeepAlive <= 0 || c.KeepAlive > 65535:
		return c, errors.New("-keepalive must be from 1 to 65535 seconds")
	case c.Fall < 0 || c.Grace < 0:
		return c, errors.New("-fall and -grace must not be negative")
	case c.PerProcess <= 0 || c.Dialers <= 0 || c.Workers <= 0 || c.Brokers < 0 || c.Loaders < 0:
		return c, errors.New("-per-process, -dialers and -workers must be positive, -brokers and -loaders not negative")
	}
	var err error
	c.Brokers, c.Loaders, err = loadtest.Spread(c.Clients, c.PerProcess, c.Brokers, c.Loaders, "brokers")
	return c, err
}
