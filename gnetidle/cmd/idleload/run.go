package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/go-schedule/schedule/bench/loadtest"
)

// modeResult is one server's measurement in one round.
type modeResult struct {
	Mode   string
	Round  int
	Live   int
	Silent int
	loadtest.Result[serverResult]
}

// runLoad measures every server in every round, writes the report to
// stdout and progress to stderr, and returns the counts that were wrong.
func runLoad(ctx context.Context, c config, stdout, stderr io.Writer) ([]loadtest.Failure, error) {
	// The children's standard error reaches stderr through goroutines of
	// os/exec, alongside the progress lines.
	stderr = &loadtest.LockedWriter{W: stderr}
	rep := &report{cfg: c}
	writeHeader(stdout, c)
	for round := range c.Rounds {
		for _, mode := range roundOrder(c.Modes, round) {
			res, err := runMode(ctx, c, mode, round, stderr)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", label(mode), err)
			}
			rep.results = append(rep.results, res)
		}
	}
	rep.write(stdout)
	return rep.failures(), nil
}

// roundOrder is the order in which the servers run in round r: modes
// turned r places, so that over the rounds each server runs first, second,
// and so on, as often as the others, and no server's figures carry a place
// it always has in a round.
func roundOrder(modes []string, r int) []string {
	k := r % len(modes)
	return append(slices.Clone(modes[k:]), modes[:k]...)
}

// runMode runs one server's processes and load processes through the
// window and collects their results.
func runMode(ctx context.Context, c config, mode string, round int, stderr io.Writer) (modeResult, error) {
	res := modeResult{Mode: mode, Round: round, Silent: c.silentCount()}
	res.Live = c.Conns - res.Silent
	tag := label(mode)
	if c.Rounds > 1 {
		tag = fmt.Sprintf("%s, round %d", tag, round+1)
	}
	// The load processes dial from a loopback network new in every run.
	nets, err := loadtest.RandomLoopbacks(1)
	if err != nil {
		return res, err
	}
	idle := c.Idle.String()
	res.Result, err = loadtest.Measure(ctx, loadtest.Measurement[serverResult]{
		Servers:    c.ServerProcs,
		ServerName: "server",
		ServerArgs: func(i int) []string {
			sc := loadtest.ServerConfig{Mode: mode, Workers: c.Workers}
			if c.ProfileDir != "" {
				sc.Profile = filepath.Join(c.ProfileDir, fmt.Sprintf("%s-%d-%d.pprof", mode, round+1, i))
			}
			return append(sc.Args(), "-idle", idle, "-loops", strconv.Itoa(c.Loops))
		},
		Loaders: c.Loaders,
		Load: loadtest.LoadConfig{Live: res.Live, Silent: res.Silent,
			Fall: c.Fall, Grace: c.Grace, Dialers: c.Dialers, Seed: c.Seed + uint64(round)},
		Net:        nets[0],
		LoaderArgs: []string{"-idle", idle, "-beat", c.Beat.String()},
		Timeout:    c.Idle,
		Stderr:     stderr,
		Tag:        tag,
		LiveName:   "live clients",
		Connecting: func(s loadtest.ClientCounts, since time.Duration) string {
			return fmt.Sprintf("connecting %v: %s/%s connected, %s failed", since.Round(time.Second),
				loadtest.Commas(s.LiveConnected+s.SilentConnected), loadtest.Commas(int64(c.Conns)), loadtest.Commas(s.Failed))
		},
		InWindow: func(s loadtest.ClientCounts, since time.Duration) string {
			return fmt.Sprintf("window %v/%v: silent closed %s/%s, live closed %s",
				since.Round(time.Second), c.window(),
				loadtest.Commas(s.SilentClosed), loadtest.Commas(int64(res.Silent)), loadtest.Commas(s.LiveLost+s.SilentLostEarly))
		},
	})
	return res, err
}
