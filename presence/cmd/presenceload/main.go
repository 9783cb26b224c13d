// Command presenceload measures fleet presence under load on loopback: it
// runs gateway processes (presencegate's device handling, package
// internal/gate) and client processes that connect devices to them and
// heartbeat, then kills one gateway with SIGKILL and follows the records
// its death causes. It prints one table.
//
// Usage, from the module's directory (presence/):
//
//	go run ./cmd/presenceload                                  # 99,900 devices, 5 gateways, presence on and off
//	go run ./cmd/presenceload -devices 2000 -gateways 3 -quiet 5s   # a small run
//	go run ./cmd/presenceload -devices 6000 -gateways 3 -cpuprofile /tmp/gw   # and each gateway's CPU profile of the quiet window
//
// What it measures, per mode (presence on: an embedded NATS server in this
// process and a presence.Node in each gateway; off: the same gateways
// recording nothing):
//
//   - connect: seconds until every device has its OK, and the engine's
//     inbound messages per online recorded;
//   - quiet window (-quiet, every device heartbeating every -beat): the
//     heartbeats sent, the engine's inbound messages and their rate per
//     heartbeat, and the gateways' CPU (µs per device per second) and
//     resident memory (bytes per device above the gateway's own before any
//     device connected);
//   - kill (presence on): one gateway killed with SIGKILL; its devices, the
//     node_lost records made for them, the devices recorded more than once
//     or not at all within 2×lease + 5 s, the time from the kill to the
//     last record, and the engine's inbound messages per record.
//
// This machine allows 20,000 open files per process, and 28,232 ephemeral
// ports per source address: devices are spread over gateway and client
// processes of at most 19,980 connections each, and over source addresses
// 20,000 devices each, new ones for each phase (127.1.0.2 upwards in the
// first), since a closed connection's port stays in TIME_WAIT for 60 s.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"
)

const (
	exitOK    = 0
	exitFail  = 1
	exitUsage = 2
)

// perProcess is the most connections one process holds: the 20,000 open
// files a process may have here, less room for its other descriptors.
const perProcess = 19_980

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) >= 2 && args[0] == "-role" {
		switch args[1] {
		case "gate":
			return runGate(ctx, args[2:], stdout, stderr)
		case "client":
			return runClient(ctx, args[2:], stdout, stderr)
		}
	}
	var c config
	fs := flag.NewFlagSet("presenceload", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&c.devices, "devices", 5*perProcess, "devices in all")
	fs.IntVar(&c.gateways, "gateways", 5, "gateway processes")
	fs.DurationVar(&c.lease, "lease", 2*time.Second, "node lease (whole seconds)")
	fs.DurationVar(&c.timeout, "timeout", time.Minute, "heartbeat timeout")
	fs.DurationVar(&c.beat, "beat", 10*time.Second, "heartbeat interval per device")
	fs.DurationVar(&c.quiet, "quiet", 20*time.Second, "the quiet window, every device heartbeating")
	fs.IntVar(&c.reps, "reps", 1, "repetitions; each runs presence on, then off")
	fs.BoolVar(&c.kill, "kill", true, "kill one gateway with SIGKILL (presence on)")
	fs.StringVar(&c.modes, "modes", "on,off", "modes to run: on, off, or both")
	fs.StringVar(&c.cpuprofile, "cpuprofile", "", "write each gateway's CPU profile of the quiet window (and the kill) to PREFIX-gwN-MODE-REP.pprof")
	// The flag package would print a bad flag's error and then the whole
	// usage, burying the error: print the error alone with a one-line hint,
	// and the usage for -h only.
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	fs.SetOutput(stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stderr, "usage: presenceload [flags]")
			fs.PrintDefaults()
			return exitOK
		}
		fmt.Fprintln(stderr, "presenceload:", err)
		fmt.Fprintln(stderr, "run 'presenceload -h' for the flags")
		return exitUsage
	}
	if err := c.validate(); err != nil {
		fmt.Fprintln(stderr, "presenceload:", err)
		return exitUsage
	}
	var results []result
	for rep := range c.reps {
		for _, on := range c.modeList() {
			r, err := phase(ctx, c, on)
			if err != nil {
				fmt.Fprintf(stderr, "presenceload: rep %d presence %v: %v\n", rep+1, onOff(on), err)
				return exitFail
			}
			results = append(results, r)
			fmt.Fprintln(stdout, r.raw())
		}
	}
	printTable(stdout, c, results)
	for _, r := range results {
		if r.connected != r.devices || r.killed.twice > 0 || r.killed.missing > 0 {
			fmt.Fprintf(stderr, "presenceload: counts are not exact: %s\n", r.raw())
			return exitFail
		}
	}
	return exitOK
}
