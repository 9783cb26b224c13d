package main

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-schedule/schedule/bench/loadtest"
)

// label names a server in the report.
func label(mode string) string {
	if mode == modeWrapped {
		return "netdeadline listener"
	}
	return "plain listener"
}

// cpuPerConn is a measurement's server CPU per second per connection, µs.
func (m measured) cpuPerConn() (float64, bool) {
	u := m.server.Usage
	return loadtest.CPUPerConn(u.CPU, u.Window, u.AvgConns)
}

// p99 is a measurement's request latency p99.
func (m measured) p99() time.Duration {
	d, _ := loadtest.Quantile(m.latency, 0.99)
	return d
}

// writeReport prints every measurement, the ratios of each round, and
// their medians, and returns the failures: the wrapped server's are
// go-schedule's, the plain one's the baseline's.
func writeReport(w io.Writer, c config, all []measured) []loadtest.Failure {
	fmt.Fprintln(w)
	tab := loadtest.NewTable(w, 0, all, func(m measured) string { return fmt.Sprintf("%s, round %d", label(m.mode), m.round+1) })
	tab.Row("requests answered / failed in the window", func(m measured) string {
		return loadtest.Commas(m.ok) + " / " + loadtest.Commas(m.failed)
	})
	tab.Row("requests the server answered per second", func(m measured) string {
		return loadtest.Commas(int64(float64(m.server.Requests)/m.server.Window.Seconds() + 0.5))
	})
	tab.Quantiles("request latency", func(m measured) []int64 { return m.latency })
	tab.Row("server CPU per connection", func(m measured) string {
		us, ok := m.cpuPerConn()
		return loadtest.OrDash(ok, strconv.FormatFloat(us, 'f', 2, 64)+" µs/s")
	})
	tab.Row("server CPU per request", func(m measured) string {
		if m.server.Requests == 0 {
			return "-"
		}
		return strconv.FormatFloat(float64(m.server.CPU.Nanoseconds())/1e3/float64(m.server.Requests), 'f', 2, 64) + " µs"
	})
	tab.Row("server CPU, % of a core", func(m measured) string {
		return strconv.FormatFloat(100*m.server.CPU.Seconds()/m.server.Window.Seconds(), 'f', 1, 64) + "%"
	})
	tab.Row("server memory per connection (RSS)", func(m measured) string { return perConn(m.server.RSSDelta, m.server.Conns) })
	tab.Row("server Go heap + stacks per connection", func(m measured) string { return perConn(m.server.HeapDelta, m.server.Conns) })
	tab.Row("connections at the window's start", func(m measured) string { return loadtest.Commas(m.server.Conns) })
	tab.Flush()

	// Ratios within each round, where both servers ran back to back.
	var cpu, p99 []float64
	fmt.Fprintln(w)
	for round := range c.Rounds {
		var wrapped, plain *measured
		for i := range all {
			if all[i].round == round {
				if all[i].mode == modeWrapped {
					wrapped = &all[i]
				} else {
					plain = &all[i]
				}
			}
		}
		if wrapped == nil || plain == nil {
			continue
		}
		wc, ok1 := wrapped.cpuPerConn()
		pc, ok2 := plain.cpuPerConn()
		line := fmt.Sprintf("round %d, netdeadline / plain:", round+1)
		if ok1 && ok2 {
			cpu = append(cpu, wc/pc)
			line += fmt.Sprintf(" server CPU per connection %.2f×", wc/pc)
		}
		if plain.p99() > 0 {
			p99 = append(p99, float64(wrapped.p99())/float64(plain.p99()))
			line += fmt.Sprintf(", request latency p99 %.2f×", float64(wrapped.p99())/float64(plain.p99()))
		}
		fmt.Fprintln(w, line)
	}
	if mc, ok := loadtest.Median(cpu); ok {
		mp, _ := loadtest.Median(p99)
		fmt.Fprintf(w, "median of %d rounds, netdeadline / plain: server CPU per connection %.2f×, request latency p99 %.2f×\n", len(cpu), mc, mp)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "latency: from writing a request to reading its whole response, seen by the client")
	fmt.Fprintln(w, "CPU: the server process over the window, per second and per average open connection")

	var f []loadtest.Failure
	for _, m := range all {
		if m.failed > 0 || m.ok == 0 {
			f = append(f, loadtest.Failure{
				Server:   fmt.Sprintf("%s, round %d", label(m.mode), m.round+1),
				Baseline: m.mode == modePlain,
				Count:    fmt.Sprintf("requests answered %d, failed %d (%s)", m.ok, m.failed, strings.Join(slices.Compact(m.errs), "; ")),
			})
		}
	}
	return f
}

// perConn formats bytes per connection.
func perConn(bytes, conns int64) string {
	if conns == 0 {
		return "-"
	}
	return strconv.FormatFloat(float64(bytes)/float64(conns)/1024, 'f', 1, 64) + " KiB"
}
