package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"sync"
	"time"
)

// modeResult is one server's measurement in one round.
type modeResult struct {
	Mode        string
	Round       int
	Live        int
	Silent      int
	ConnectTime time.Duration
	Servers     []serverResult
	Loaders     []loaderResult
	// The processes' CPU time over their whole lives, and the largest peak
	// resident set among them.
	ServerCPU, LoaderCPU   time.Duration
	ServerPeak, LoaderPeak int64
}

// runLoad measures every server in every round, writes the report to
// stdout and progress to stderr, and returns the report.
func runLoad(ctx context.Context, c config, stdout, stderr io.Writer) (*report, error) {
	// The children's standard error reaches stderr through goroutines of
	// os/exec, alongside the progress lines.
	stderr = &lockedWriter{w: stderr}
	rep := &report{cfg: c}
	writeHeader(stdout, c)
	for round := range c.Rounds {
		for _, mode := range c.Modes {
			res, err := runMode(ctx, c, mode, round, stderr)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", label(mode), err)
			}
			rep.results = append(rep.results, res)
		}
	}
	rep.write(stdout)
	return rep, nil
}

// runMode runs one server's processes and load processes through the
// window and collects their results.
func runMode(ctx context.Context, c config, mode string, round int, stderr io.Writer) (res modeResult, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	res = modeResult{Mode: mode, Round: round, Silent: c.silentCount()}
	res.Live = c.Conns - res.Silent
	var children []*child
	defer func() {
		if err != nil {
			for _, ch := range children {
				ch.kill()
			}
		}
	}()
	tag := label(mode)
	if c.Rounds > 1 {
		tag = fmt.Sprintf("%s, round %d", tag, round+1)
	}
	logf := func(format string, args ...any) {
		fmt.Fprintf(stderr, "[%s] "+format+"\n", append([]any{tag}, args...)...)
	}
	idle := c.Idle.String()

	servers := make([]*child, c.ServerProcs)
	for i := range servers {
		args := []string{"-role", "server", "-mode", mode, "-idle", idle, "-listen", "127.0.0.1:0",
			"-workers", strconv.Itoa(c.Workers), "-loops", strconv.Itoa(c.Loops)}
		if c.ProfileDir != "" {
			args = append(args, "-cpuprofile", filepath.Join(c.ProfileDir, fmt.Sprintf("%s-%d-%d.pprof", mode, round+1, i)))
		}
		ch, err := startChild(ctx, fmt.Sprintf("server %d", i), args, stderr)
		if err != nil {
			return res, err
		}
		servers[i] = ch
		children = append(children, ch)
	}
	var addrs []string
	for _, s := range servers {
		m, err := s.expect(ctx, "ready")
		if err != nil {
			return res, err
		}
		addrs = append(addrs, m.Addr)
	}

	// Load processes, each from a loopback source address of its own, new
	// in every run.
	net2, net3 := 1+rand.IntN(254), rand.IntN(256)
	loaders := make([]*child, c.Loaders)
	for i := range loaders {
		args := []string{"-role", "loader", "-index", strconv.Itoa(i),
			"-live", strconv.Itoa(share(res.Live, c.Loaders, i)),
			"-silent", strconv.Itoa(share(res.Silent, c.Loaders, i)),
			"-idle", idle, "-beat", c.Beat.String(), "-fall", c.Fall.String(), "-grace", c.Grace.String(),
			"-source", fmt.Sprintf("127.%d.%d.%d", net2, net3, i+1),
			"-dialers", strconv.Itoa(c.Dialers), "-seed", strconv.FormatUint(c.Seed+uint64(round), 10)}
		for _, a := range addrs {
			args = append(args, "-server", a)
		}
		ch, err := startChild(ctx, fmt.Sprintf("load process %d", i), args, stderr)
		if err != nil {
			return res, err
		}
		loaders[i] = ch
		children = append(children, ch)
	}
	logf("%s, %s: connecting %s live clients and %s that will fall silent",
		plural(c.ServerProcs, "server process", "server processes"), plural(c.Loaders, "load process", "load processes"),
		commas(int64(res.Live)), commas(int64(res.Silent)))

	sum := func() clientCounts {
		var s clientCounts
		for _, l := range loaders {
			if p := l.progress(); p != nil {
				s.add(*p)
			}
		}
		return s
	}
	start := time.Now()
	if _, err := collect(ctx, loaders, "connected", func() {
		s := sum()
		logf("connecting %v: %s/%s connected, %s failed", time.Since(start).Round(time.Second),
			commas(s.LiveConnected+s.SilentConnected), commas(int64(c.Conns)), commas(s.Failed))
	}); err != nil {
		return res, err
	}
	res.ConnectTime = time.Since(start)

	for _, ch := range append(append([]*child(nil), servers...), loaders...) {
		if err := ch.send(cmdGo); err != nil {
			return res, err
		}
	}
	wstart := time.Now()
	logf("all connected in %v; window of %v (fall %v + timeout %v + grace %v)",
		res.ConnectTime.Round(time.Millisecond), c.window(), c.Fall, c.Idle, c.Grace)
	msgs, err := collect(ctx, loaders, "result", func() {
		s := sum()
		logf("window %v/%v: silent closed %s/%s, live closed %s",
			time.Since(wstart).Round(time.Second), c.window(),
			commas(s.SilentClosed), commas(int64(res.Silent)), commas(s.LiveLost+s.SilentLostEarly))
	})
	if err != nil {
		return res, err
	}
	for _, m := range msgs {
		res.Loaders = append(res.Loaders, *m.Loader)
	}
	for _, s := range servers {
		if err := s.send(cmdReport); err != nil {
			return res, err
		}
		m, err := s.expect(ctx, "result")
		if err != nil {
			return res, err
		}
		res.Servers = append(res.Servers, *m.Server)
	}

	logf("closing")
	for _, l := range loaders {
		cpu, peak, err := l.finish(ctx)
		if err != nil {
			return res, err
		}
		res.LoaderCPU += cpu
		res.LoaderPeak = max(res.LoaderPeak, peak)
	}
	for _, s := range servers {
		cpu, peak, err := s.finish(ctx)
		if err != nil {
			return res, err
		}
		res.ServerCPU += cpu
		res.ServerPeak = max(res.ServerPeak, peak)
	}
	logf("done in %v", time.Since(start).Round(time.Second))
	return res, nil
}

// share is process i's part of n spread over k processes.
func share(n, k, i int) int {
	s := n / k
	if i < n%k {
		s++
	}
	return s
}

// lockedWriter serializes writes to w.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
