package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/go-schedule/schedule/bench/loadtest"
)

// modeResult is one keep-alive's measurement.
type modeResult struct {
	Mode   string
	Live   int // paho clients
	Silent int // clients that fall silent
	loadtest.Result[brokerResult]
	// BrokerLateness is brokerLateness of the result: how late the brokers
	// gave up the silent clients, sorted, in microseconds.
	BrokerLateness []int64
}

// runLoad measures every mode of c, writes the report to stdout and
// progress to stderr, and returns the counts that were wrong.
func runLoad(ctx context.Context, c config, stdout, stderr io.Writer) ([]loadtest.Failure, error) {
	writeHeader(stdout, c)
	rep, err := measure(ctx, c, stderr)
	if err != nil {
		return nil, err
	}
	rep.write(stdout)
	return rep.failures(), nil
}

// measure measures every mode of c, writing progress to stderr.
func measure(ctx context.Context, c config, stderr io.Writer) (*report, error) {
	// The children's standard error is copied to stderr by goroutines of
	// os/exec, concurrently with the progress lines.
	stderr = &loadtest.LockedWriter{W: stderr}
	rep := &report{cfg: c}
	// Each mode's load processes dial from a loopback network of their
	// own, different in every run.
	nets, err := loadtest.RandomLoopbacks(len(c.Modes))
	if err != nil {
		return nil, err
	}
	if !c.Together {
		for i, mode := range c.Modes {
			res, err := runMode(ctx, c, mode, nets[i], nil, stderr)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", mode, err)
			}
			rep.modes = append(rep.modes, res)
		}
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
// window and collects their results. Its load processes dial from net.
// With a barrier, it starts the window only once every mode waiting at the
// barrier is connected.
func runMode(ctx context.Context, c config, mode string, net loadtest.Loopback, all *barrier, stderr io.Writer) (modeResult, error) {
	res := modeResult{Mode: mode, Silent: c.silentCount()}
	res.Live = c.Clients - res.Silent
	m := loadtest.Measurement[brokerResult]{
		Servers:    c.Brokers,
		ServerName: "broker",
		ServerArgs: func(i int) []string {
			sc := loadtest.ServerConfig{Mode: mode, Workers: c.Workers}
			if c.CPUProfile != "" {
				sc.Profile = filepath.Join(c.CPUProfile, fmt.Sprintf("%s-broker-%d.pprof", mode, i))
			}
			return sc.Args()
		},
		Loaders: c.Loaders,
		Load: loadtest.LoadConfig{Live: res.Live, Silent: res.Silent,
			Fall: c.Fall, Grace: c.Grace, Dialers: c.Dialers, Seed: c.Seed},
		Net:        net,
		LoaderArgs: []string{"-keepalive", strconv.Itoa(c.KeepAlive)},
		Timeout:    c.timeout(),
		Stderr:     stderr,
		Tag:        mode,
		LiveName:   "paho clients",
		Connecting: func(sum loadtest.ClientCounts, since time.Duration) string {
			return fmt.Sprintf("connecting %v: %s/%s paho, %s/%s silent, %s failed", since.Round(time.Second),
				loadtest.Commas(sum.LiveConnected), loadtest.Commas(int64(res.Live)),
				loadtest.Commas(sum.SilentConnected), loadtest.Commas(int64(res.Silent)), loadtest.Commas(sum.Failed))
		},
		// Silent clients fall silent within -fall and must be disconnected
		// within 1.5 × Keep Alive of their last packet.
		InWindow: func(sum loadtest.ClientCounts, since time.Duration) string {
			return fmt.Sprintf("window %v/%v: silent disconnected %s/%s, live lost %s",
				since.Round(time.Second), c.Fall+c.timeout()+c.Grace,
				loadtest.Commas(sum.SilentClosed), loadtest.Commas(int64(res.Silent)), loadtest.Commas(sum.LiveLost+sum.SilentLostEarly))
		},
	}
	if all != nil {
		m.Connected = func(ctx context.Context, took time.Duration) error {
			loadtest.Logger(stderr, mode)("all connected in %v; waiting for the other keep-alive", took.Round(time.Millisecond))
			return all.wait(ctx)
		}
	}
	var err error
	if res.Result, err = loadtest.Measure(ctx, m); err != nil {
		return res, err
	}
	res.BrokerLateness = brokerLateness(res.Loaders, res.Servers, c.timeout())
	return res, nil
}
