package main

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/go-schedule/schedule/bench/loadtest"
)

// label names a server in the report.
func label(mode string) string {
	switch mode {
	case modeSchedule:
		return "gnet + go-schedule"
	case modeTick:
		return "gnet + OnTick heap"
	case modeNet:
		return "net + read deadline"
	case modeTickFix:
		return "gnet + OnTick heap, fixed per read"
	case modeReset:
		return "go-schedule alone, Reset per read"
	case modeStamp:
		return "go-schedule alone, time per read"
	}
	return mode
}

// report is a whole run's results.
type report struct {
	cfg     config
	results []modeResult // round by round, each round in the order it ran
}

func writeHeader(w io.Writer, c config) {
	s := c.silentCount()
	fmt.Fprintf(w, "idleload: %s connections: %s live, %s falling silent within %v; a byte every %v; idle timeout %v, grace %v\n",
		loadtest.Commas(int64(c.Conns)), loadtest.Commas(int64(c.Conns-s)), loadtest.Commas(int64(s)), c.Fall, c.Beat, c.Idle, c.Grace)
	loops := "one per CPU"
	if c.Loops > 0 {
		loops = strconv.Itoa(c.Loops)
	}
	fmt.Fprintf(w, "idleload: for each server %s and %s; gnet event loops %s; go-schedule pool %d; %s; seed %d\n",
		loadtest.Plural(c.ServerProcs, "server process", "server processes"), loadtest.Plural(c.Loaders, "load process", "load processes"),
		loops, c.Workers, loadtest.Plural(c.Rounds, "round", "rounds"), c.Seed)
}

// totals are one result's figures, summed over its processes.
type totals struct {
	loadtest.LoadResult                // merged
	servers             loadtest.Usage // summed
	maxGoroutines       int64          // the most in one server process
	idleClosed          int64
	serverLateness      []int64 // µs, sorted
}

func (m modeResult) totals() totals {
	t := totals{LoadResult: loadtest.MergeLoads(m.Loaders)}
	for _, s := range m.Servers {
		t.servers.Add(s.Usage)
		t.maxGoroutines = max(t.maxGoroutines, s.Goroutines)
		t.idleClosed += s.IdleClosed
		t.serverLateness = append(t.serverLateness, s.Lateness...)
	}
	slices.Sort(t.serverLateness)
	return t
}

// checks are the counts of a result that must be right.
func (m modeResult) checks() []loadtest.Check {
	t := m.totals()
	return []loadtest.Check{
		loadtest.None("connections that failed", t.Failed),
		loadtest.Exact("silent connections closed / expected", t.SilentClosed, m.Silent),
		loadtest.Exact("closes counted by the servers / expected", t.idleClosed, m.Silent),
		loadtest.None("live connections closed", t.LiveLost+t.SilentLostEarly),
		loadtest.None("connections closed early", t.Early),
	}
}

// failures lists the wrong counts of every result.
func (r *report) failures() []loadtest.Failure {
	var f []loadtest.Failure
	for _, m := range r.results {
		for _, c := range m.checks() {
			if !c.OK {
				f = append(f, loadtest.Failure{
					Server:   label(m.Mode) + r.roundTag(m),
					Baseline: baseline(m.Mode),
					Count:    c.Name + " " + c.Value,
				})
			}
		}
	}
	return f
}

// baseline reports whether the server of mode is measured for comparison
// only: it does not run on go-schedule, so its wrong counts do not fail
// the run.
func baseline(mode string) bool {
	switch mode {
	case modeTick, modeNet, modeTickFix:
		return true
	}
	return false
}

func (r *report) roundTag(m modeResult) string {
	if r.cfg.Rounds <= 1 {
		return ""
	}
	return fmt.Sprintf(" (round %d)", m.Round+1)
}

// The figures of a result, as numbers, for the table and the summary.
func (t totals) latenessAt(p float64) (time.Duration, bool) { return loadtest.Quantile(t.Lateness, p) }

func (t totals) perConn(bytes int64) (float64, bool) {
	if t.servers.Conns == 0 {
		return 0, false
	}
	return float64(bytes) / float64(t.servers.Conns), true
}

// cpuPerConn is the servers' CPU time per second and per average open
// connection, in microseconds per second.
func (t totals) cpuPerConn() (float64, bool) {
	return loadtest.CPUPerConn(t.servers.CPU, t.servers.Window, t.servers.AvgConns)
}

// write prints a table per round and, over several rounds, the medians.
func (r *report) write(w io.Writer) {
	for round := range r.cfg.Rounds {
		var rs []modeResult
		for _, m := range r.results {
			if m.Round == round {
				rs = append(rs, m)
			}
		}
		if len(rs) == 0 {
			continue
		}
		fmt.Fprintln(w)
		if r.cfg.Rounds > 1 {
			var order []string
			for _, m := range rs {
				order = append(order, m.Mode)
			}
			fmt.Fprintf(w, "round %d, run in the order %s\n", round+1, strings.Join(order, ", "))
		}
		// The columns in the order of -servers in every round.
		slices.SortStableFunc(rs, func(a, b modeResult) int {
			return slices.Index(r.cfg.Modes, a.Mode) - slices.Index(r.cfg.Modes, b.Mode)
		})
		writeTable(w, rs)
	}
	if r.cfg.Rounds > 1 {
		r.writeMedians(w)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "lateness: from a silent client's last byte plus the timeout to the end of its connection, as the client saw it;")
	fmt.Fprintln(w, "  the server's: from its last read plus the timeout to its close, as the server saw it")
	fmt.Fprintln(w, "memory: at the window's start, after a collection, less the same before any connection; kernel socket memory not included")
	fmt.Fprintln(w, "CPU: server processes over the window (reads of every byte, closes of the silent), per second and average open connection")
	for _, m := range r.results {
		if t := m.totals(); len(t.Errors) > 0 {
			fmt.Fprintf(w, "%s%s, first errors:\n  %s\n", label(m.Mode), r.roundTag(m), strings.Join(t.Errors, "\n  "))
		}
	}
}

// column is a result's column in a table.
type column struct {
	m modeResult
	t totals
}

// writeTable prints results side by side.
func writeTable(w io.Writer, rs []modeResult) {
	cols := make([]column, len(rs))
	for i, m := range rs {
		cols[i] = column{m, m.totals()}
	}
	tab := loadtest.NewTable(w, tabwriter.AlignRight, cols, func(c column) string { return label(c.m.Mode) })
	tab.Row("connect time", func(c column) string { return c.m.ConnectTime.Round(10 * time.Millisecond).String() })
	for i, check := range rs[0].checks() {
		tab.Row(check.Name, func(c column) string { return c.m.checks()[i].Cell() })
	}
	tab.Quantiles("detection lateness", func(c column) []int64 { return c.t.Lateness })
	tab.Row("server-side lateness p50 / p99 / max", func(c column) string {
		var qs []string
		for _, p := range []float64{0.5, 0.99, 1} {
			qs = append(qs, loadtest.FormatQuantile(c.t.serverLateness, p))
		}
		return strings.Join(qs, " / ")
	})
	tab.Row("server memory per connection (RSS)", func(c column) string {
		v, ok := c.t.perConn(c.t.servers.RSSDelta)
		return loadtest.OrDash(ok, kib(v))
	})
	tab.Row("server Go heap + stacks per connection", func(c column) string {
		v, ok := c.t.perConn(c.t.servers.HeapDelta)
		return loadtest.OrDash(ok, kib(v))
	})
	tab.Row("server CPU per connection", func(c column) string {
		v, ok := c.t.cpuPerConn()
		return loadtest.OrDash(ok, strconv.FormatFloat(v, 'f', 2, 64)+" µs/s")
	})
	tab.Row("server CPU, all server processes", func(c column) string {
		s := c.t.servers
		if s.Window == 0 {
			return "-"
		}
		return strconv.FormatFloat(100*s.CPU.Seconds()/s.Window.Seconds(), 'f', 1, 64) + "% of a core"
	})
	tab.Row("server goroutines per connection", func(c column) string {
		s := c.t.servers
		if s.Conns == 0 {
			return "-"
		}
		return strconv.FormatFloat(float64(s.GoroutinesDelta)/float64(s.Conns), 'f', 3, 64)
	})
	tab.Row("server goroutines, largest process", func(c column) string { return loadtest.Commas(c.t.maxGoroutines) })
	tab.Row("connections at the window's start", func(c column) string { return loadtest.Commas(c.t.servers.Conns) })
	tab.Row("CPU time, servers / load processes, whole run", func(c column) string { return c.m.CPU() })
	tab.Row("peak memory of a server / load process", func(c column) string { return c.m.Peak() })
	tab.Flush()
}

// writeMedians prints, for each server, the median over the rounds of the
// figures that vary from run to run.
func (r *report) writeMedians(w io.Writer) {
	fmt.Fprintln(w)
	fmt.Fprintf(w, "medians over %d rounds\n", r.cfg.Rounds)
	tab := loadtest.NewTable(w, tabwriter.AlignRight, r.cfg.Modes, label)
	median := func(mode string, f func(t totals) (float64, bool)) (float64, bool) {
		var vs []float64
		for _, m := range r.results {
			if m.Mode == mode {
				if v, ok := f(m.totals()); ok {
					vs = append(vs, v)
				}
			}
		}
		return loadtest.Median(vs)
	}
	rows := []struct {
		name   string
		f      func(t totals) (float64, bool)
		format func(float64) string
	}{
		{"detection lateness p50", lateF(0.5), durF},
		{"detection lateness p99", lateF(0.99), durF},
		{"detection lateness max", lateF(1), durF},
		{"server-side lateness p99", func(t totals) (float64, bool) {
			d, ok := loadtest.Quantile(t.serverLateness, 0.99)
			return float64(d), ok
		}, durF},
		{"server memory per connection (RSS)", func(t totals) (float64, bool) { return t.perConn(t.servers.RSSDelta) }, kib},
		{"server Go heap + stacks per connection", func(t totals) (float64, bool) { return t.perConn(t.servers.HeapDelta) }, kib},
		{"server CPU per connection", totals.cpuPerConn, func(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) + " µs/s" }},
	}
	for _, rw := range rows {
		tab.Row(rw.name, func(mode string) string {
			v, ok := median(mode, rw.f)
			return loadtest.OrDash(ok, rw.format(v))
		})
	}
	tab.Flush()
}

func lateF(p float64) func(t totals) (float64, bool) {
	return func(t totals) (float64, bool) {
		d, ok := t.latenessAt(p)
		return float64(d), ok
	}
}

func durF(v float64) string { return loadtest.FormatLateness(time.Duration(v)) }

// kib formats bytes in KiB.
func kib(b float64) string { return strconv.FormatFloat(b/1024, 'f', 2, 64) + " KiB" }
