package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-schedule/schedule/bench/loadtest"
)

// request is what every connection sends: a small keep-alive GET.
const request = "GET / HTTP/1.1\r\nHost: httpload\r\n\r\n"

// measured is one server's measurement in one round.
type measured struct {
	mode    string
	round   int
	server  serverResult
	ok      int64   // requests answered in the window
	failed  int64   // requests failed in the window
	latency []int64 // of the requests answered in the window, µs, sorted
	errs    []string
}

// runLoad runs every round, writes the report and returns the wrong counts.
func runLoad(ctx context.Context, c config, stdout, stderr io.Writer) ([]loadtest.Failure, error) {
	stderr = &loadtest.LockedWriter{W: stderr}
	fmt.Fprintf(stdout, "httpload: %s keep-alive connections, a request each every %v; ReadTimeout %v, IdleTimeout %v; window %v; %d rounds; go-schedule pool of %d\n",
		loadtest.Commas(int64(c.Conns)), c.Every, c.ReadTimeout, c.IdleTimeout, c.Window, c.Rounds, c.Workers)
	var all []measured
	for round := range c.Rounds {
		order := []string{modePlain, modeWrapped}
		if round%2 == 1 {
			order[0], order[1] = order[1], order[0]
		}
		for _, mode := range order {
			m, err := measure(ctx, c, mode, round, stderr)
			if err != nil {
				return nil, fmt.Errorf("%s, round %d: %w", mode, round+1, err)
			}
			all = append(all, m)
		}
	}
	return writeReport(stdout, c, all), nil
}

// measure starts one server, connects the load, measures a window and
// stops both.
func measure(ctx context.Context, c config, mode string, round int, stderr io.Writer) (measured, error) {
	logf := loadtest.Logger(stderr, fmt.Sprintf("%s %d", mode, round+1))
	res := measured{mode: mode, round: round}
	sc := loadtest.ServerConfig{Mode: mode, Workers: c.Workers}
	args := append(sc.Args(), "-read-timeout", c.ReadTimeout.String(), "-idle-timeout", c.IdleTimeout.String())
	srv, err := loadtest.Start[serverResult](ctx, "server", loadtest.RoleServer, args, stderr)
	if err != nil {
		return res, err
	}
	defer srv.Finish(context.Background())
	ready, err := srv.Expect(ctx, loadtest.EventReady)
	if err != nil {
		return res, err
	}

	conns, err := dialAll(ctx, ready.Addr, c.Conns, c.Dialers)
	defer func() {
		for _, cn := range conns {
			cn.Close()
		}
	}()
	if err != nil {
		return res, err
	}
	logf("%d connections open", len(conns))

	var measuring atomic.Bool
	var mu sync.Mutex
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i, cn := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Spread the connections' requests evenly over the period.
			offset := time.Duration(int64(c.Every) * int64(i) / int64(len(conns)))
			lat, ok, failed, errs := client(cn, offset, c.Every, &measuring, stop)
			mu.Lock()
			res.latency = append(res.latency, lat...)
			res.ok += ok
			res.failed += failed
			if len(res.errs) < 5 {
				res.errs = append(res.errs, errs...)
			}
			mu.Unlock()
		}()
	}
	// One period for every connection to have sent a request, then the
	// window.
	time.Sleep(c.Every)
	if err := srv.Send(loadtest.CmdGo); err != nil {
		close(stop)
		wg.Wait()
		return res, err
	}
	measuring.Store(true)
	select {
	case <-time.After(c.Window):
	case <-ctx.Done():
	}
	measuring.Store(false)
	if err := srv.Send(loadtest.CmdReport); err != nil {
		close(stop)
		wg.Wait()
		return res, err
	}
	msg, err := srv.Expect(ctx, loadtest.EventResult)
	close(stop)
	wg.Wait()
	if err != nil {
		return res, err
	}
	res.server = *msg.Server
	slices.Sort(res.latency)
	logf("window done: %d requests answered, %d failed", res.ok, res.failed)
	return res, ctx.Err()
}

// dialAll opens n connections to addr, dialers at a time.
func dialAll(ctx context.Context, addr string, n, dialers int) ([]net.Conn, error) {
	conns := make([]net.Conn, n)
	errs := make([]error, n)
	sem := make(chan struct{}, dialers)
	var wg sync.WaitGroup
	var d net.Dialer
	for i := range conns {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			conns[i], errs[i] = d.DialContext(ctx, "tcp", addr)
		}()
	}
	wg.Wait()
	var open []net.Conn
	var first error
	for i, cn := range conns {
		if errs[i] != nil {
			if first == nil {
				first = errs[i]
			}
			continue
		}
		open = append(open, cn)
	}
	return open, first
}

// client sends a request on cn every period, the first after offset, until
// stop; it returns the latencies (µs) and the counts of the requests it
// made while measuring was set, and the first errors.
func client(cn net.Conn, offset, period time.Duration, measuring *atomic.Bool, stop <-chan struct{}) (lat []int64, ok, failed int64, errs []string) {
	br := bufio.NewReader(cn)
	t := time.NewTimer(offset)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		t.Reset(period)
		in := measuring.Load()
		start := time.Now()
		err := roundTrip(cn, br)
		took := time.Since(start)
		if !in {
			if err != nil {
				return // broken before or after the window: nothing to count
			}
			continue
		}
		if err != nil {
			failed++
			errs = append(errs, err.Error())
			return
		}
		ok++
		lat = append(lat, took.Microseconds())
	}
}

// roundTrip writes the request and reads the whole response.
func roundTrip(cn net.Conn, br *bufio.Reader) error {
	if _, err := io.WriteString(cn, request); err != nil {
		return err
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("status %s", strconv.Itoa(resp.StatusCode))
	}
	return err
}
