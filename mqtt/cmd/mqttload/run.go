package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"
)

// modeResult is one keep-alive's measurement.
type modeResult struct {
	Mode        string
	Live        int // paho clients
	Silent      int // clients that fall silent
	ConnectTime time.Duration
	Brokers     []brokerResult
	Loaders     []loaderResult
	// The processes' CPU time over their whole lives (connecting, the
	// window, leaving) and the largest peak resident set among them.
	BrokerCPU, LoaderCPU   time.Duration
	BrokerPeak, LoaderPeak int64
}

// runLoad measures every mode of c in turn, writes the report to stdout
// and progress to stderr, and returns the report.
func runLoad(ctx context.Context, c config, stdout, stderr io.Writer) (*report, error) {
	// The children's standard error is copied to stderr by goroutines of
	// os/exec, concurrently with the progress lines.
	stderr = &lockedWriter{w: stderr}
	rep := &report{cfg: c}
	writeHeader(stdout, c)
	// Each mode's load processes dial from a loopback network of their
	// own, different in every run: 127.net2.net3.x.
	nets := make([][2]int, 0, len(c.Modes))
	for len(nets) < len(c.Modes) {
		n := [2]int{1 + rand.IntN(254), rand.IntN(256)}
		if !slices.Contains(nets, n) {
			nets = append(nets, n)
		}
	}
	if !c.Together {
		for i, mode := range c.Modes {
			res, err := runMode(ctx, c, mode, nets[i], nil, stderr)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", mode, err)
			}
			rep.modes = append(rep.modes, res)
		}
		rep.write(stdout)
		return rep, nil
	}
	// Together: every mode at once, with their windows started at the same
	// moment, once all of them are connected.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	all := newBarrier(len(c.Modes))
	results := make([]modeResult, len(c.Modes))
	errs := make([]error, len(c.Modes))
	var wg sync.WaitGroup
	for i, mode := range c.Modes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = runMode(ctx, c, mode, nets[i], all, stderr)
			if errs[i] != nil {
				errs[i] = fmt.Errorf("%s: %w", mode, errs[i])
				cancel() // the others would wait for it at the barrier
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		// The first error in the modes' order; a mode stopped by another's
		// failure reports context.Canceled.
		if err != nil && !errors.Is(err, context.Canceled) {
			return nil, err
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	rep.modes = results
	rep.write(stdout)
	return rep, nil
}

// barrier lets a number of goroutines wait for each other.
type barrier struct {
	mu   sync.Mutex
	left int
	all  chan struct{} // closed when every goroutine has arrived
}

func newBarrier(n int) *barrier { return &barrier{left: n, all: make(chan struct{})} }

// wait returns once every goroutine has called it, or when ctx is done.
func (b *barrier) wait(ctx context.Context) error {
	b.mu.Lock()
	if b.left--; b.left == 0 {
		close(b.all)
	}
	b.mu.Unlock()
	select {
	case <-b.all:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// runMode starts the brokers and the load processes of one mode, runs the
// window and collects their results. Its load processes dial from
// 127.net[0].net[1].x. With a barrier, it starts the window only once
// every mode waiting at the barrier is connected.
func runMode(ctx context.Context, c config, mode string, net [2]int, all *barrier, stderr io.Writer) (res modeResult, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	res = modeResult{Mode: mode, Silent: c.silentCount()}
	res.Live = c.Clients - res.Silent
	var children []*child
	defer func() {
		if err != nil {
			for _, ch := range children {
				ch.kill()
			}
		}
	}()
	logf := func(format string, args ...any) {
		fmt.Fprintf(stderr, "[%s] "+format+"\n", append([]any{mode}, args...)...)
	}

	// Brokers first: the load processes need their addresses.
	brokers := make([]*child, c.Brokers)
	var addrs []string
	for i := range brokers {
		args := []string{"-role", "broker", "-mode", mode, "-workers", strconv.Itoa(c.Workers), "-listen", "127.0.0.1:0"}
		if c.CPUProfile != "" {
			args = append(args, "-cpuprofile", filepath.Join(c.CPUProfile, fmt.Sprintf("%s-broker-%d.pprof", mode, i)))
		}
		ch, err := startChild(ctx, fmt.Sprintf("broker %d", i), args, stderr)
		if err != nil {
			return res, err
		}
		brokers[i] = ch
		children = append(children, ch)
	}
	for _, b := range brokers {
		m, err := b.expect(ctx, "ready")
		if err != nil {
			return res, err
		}
		addrs = append(addrs, m.Addr)
	}

	// Load processes, each from a loopback source address of its own.
	loaders := make([]*child, c.Loaders)
	for i := range loaders {
		args := []string{"-role", "loader", "-index", strconv.Itoa(i),
			"-live", strconv.Itoa(share(res.Live, c.Loaders, i)),
			"-silent", strconv.Itoa(share(res.Silent, c.Loaders, i)),
			"-keepalive", strconv.Itoa(c.KeepAlive),
			"-fall", c.Fall.String(), "-grace", c.Grace.String(),
			"-source", fmt.Sprintf("127.%d.%d.%d", net[0], net[1], i+1),
			"-dialers", strconv.Itoa(c.Dialers),
			"-seed", strconv.FormatUint(c.Seed, 10)}
		for _, a := range addrs {
			args = append(args, "-broker", a)
		}
		ch, err := startChild(ctx, fmt.Sprintf("load process %d", i), args, stderr)
		if err != nil {
			return res, err
		}
		loaders[i] = ch
		children = append(children, ch)
	}
	logf("%s, %s: connecting %s paho clients and %s that will fall silent",
		plural(c.Brokers, "broker process", "broker processes"), plural(c.Loaders, "load process", "load processes"),
		commas(int64(res.Live)), commas(int64(res.Silent)))

	// Connect, with progress every second.
	start := time.Now()
	if err := waitAll(ctx, loaders, "connected", func() {
		var sum loaderCounts
		for _, l := range loaders {
			if p := l.progress(); p != nil {
				sum.add(*p)
			}
		}
		logf("connecting %v: %s/%s paho, %s/%s silent, %s failed",
			time.Since(start).Round(time.Second),
			commas(sum.LiveConnected), commas(int64(res.Live)),
			commas(sum.SilentConnected), commas(int64(res.Silent)), commas(sum.Failed))
	}); err != nil {
		return res, err
	}
	res.ConnectTime = time.Since(start)
	if all != nil {
		logf("all connected in %v; waiting for the other keep-alive", res.ConnectTime.Round(time.Millisecond))
		if err := all.wait(ctx); err != nil {
			return res, err
		}
	}

	// The window: silent clients fall silent within -fall and must be
	// disconnected within 1.5 × Keep Alive of their last packet.
	for _, ch := range append(append([]*child(nil), brokers...), loaders...) {
		if err := ch.send(cmdGo); err != nil {
			return res, fmt.Errorf("%s: %w", ch.name, err)
		}
	}
	window := c.Fall + c.timeout() + c.Grace
	wstart := time.Now()
	logf("all connected in %v; window of %v (fall %v + timeout %v + grace %v)",
		res.ConnectTime.Round(time.Millisecond), window, c.Fall, c.timeout(), c.Grace)
	var loaderMsgs []message
	if loaderMsgs, err = collect(ctx, loaders, "result", func() {
		var sum loaderCounts
		for _, l := range loaders {
			if p := l.progress(); p != nil {
				sum.add(*p)
			}
		}
		logf("window %v/%v: silent disconnected %s/%s, live lost %s",
			time.Since(wstart).Round(time.Second), window,
			commas(sum.SilentClosed), commas(int64(res.Silent)), commas(sum.LiveLost+sum.SilentLostEarly))
	}); err != nil {
		return res, err
	}
	for _, m := range loaderMsgs {
		res.Loaders = append(res.Loaders, *m.Loader)
	}
	for _, b := range brokers {
		if err := b.send(cmdReport); err != nil {
			return res, fmt.Errorf("%s: %w", b.name, err)
		}
		m, err := b.expect(ctx, "result")
		if err != nil {
			return res, err
		}
		res.Brokers = append(res.Brokers, *m.Broker)
	}

	// Tear down: the load processes leave, then the brokers close.
	logf("closing")
	for _, l := range loaders {
		cpu, peak, err := l.finish()
		if err != nil {
			return res, err
		}
		res.LoaderCPU += cpu
		res.LoaderPeak = max(res.LoaderPeak, peak)
	}
	for _, b := range brokers {
		cpu, peak, err := b.finish()
		if err != nil {
			return res, err
		}
		res.BrokerCPU += cpu
		res.BrokerPeak = max(res.BrokerPeak, peak)
	}
	logf("done in %v", time.Since(start).Round(time.Second))
	return res, nil
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

// plural formats n with the singular or plural noun.
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return commas(int64(n)) + " " + many
}

// share is process i's part of n spread over k processes.
func share(n, k, i int) int {
	s := n / k
	if i < n%k {
		s++
	}
	return s
}

// waitAll waits for every child's next message, of the given event,
// calling tick every second meanwhile.
func waitAll(ctx context.Context, chs []*child, event string, tick func()) error {
	_, err := collect(ctx, chs, event, tick)
	return err
}

// collect returns every child's next message, of the given event, in the
// children's order, calling tick every second meanwhile.
func collect(ctx context.Context, chs []*child, event string, tick func()) ([]message, error) {
	type got struct {
		i   int
		m   message
		err error
	}
	ch := make(chan got, len(chs))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for i, c := range chs {
		go func() {
			m, err := c.expect(ctx, event)
			ch <- got{i, m, err}
		}()
	}
	msgs := make([]message, len(chs))
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for left := len(chs); left > 0; {
		select {
		case g := <-ch:
			if g.err != nil {
				return nil, g.err
			}
			msgs[g.i] = g.m
			left--
		case <-t.C:
			tick()
		}
	}
	return msgs, nil
}

// add adds o's counts to c's.
func (c *loaderCounts) add(o loaderCounts) {
	c.LiveConnected += o.LiveConnected
	c.SilentConnected += o.SilentConnected
	c.Failed += o.Failed
	c.SilentClosed += o.SilentClosed
	c.SilentLostEarly += o.SilentLostEarly
	c.LiveLost += o.LiveLost
}
