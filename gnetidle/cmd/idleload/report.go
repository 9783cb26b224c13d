package main

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
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
	}
	return mode
}

// report is a whole run's results.
type report struct {
	cfg     config
	results []modeResult // round by round, in the order of cfg.Modes
}

func writeHeader(w io.Writer, c config) {
	s := c.silentCount()
	fmt.Fprintf(w, "idleload: %s connections: %s live, %s falling silent within %v; a byte every %v; idle timeout %v, grace %v\n",
		commas(int64(c.Conns)), commas(int64(c.Conns-s)), commas(int64(s)), c.Fall, c.Beat, c.Idle, c.Grace)
	loops := "one per CPU"
	if c.Loops > 0 {
		loops = strconv.Itoa(c.Loops)
	}
	fmt.Fprintf(w, "idleload: for each server %s and %s; gnet event loops %s; go-schedule pool %d; %s; seed %d\n",
		plural(c.ServerProcs, "server process", "server processes"), plural(c.Loaders, "load process", "load processes"),
		loops, c.Workers, plural(c.Rounds, "round", "rounds"), c.Seed)
}

// totals are one result's figures, summed over its processes.
type totals struct {
	clientCounts
	idleClosed      int64
	lateness        []int64 // µs, sorted
	serverLateness  []int64 // µs, sorted
	conns           int64
	avgConns        float64
	rss, heap       int64
	goroutines      int64 // all server processes, at the window's start
	goroutinesDelta int64
	maxGoroutines   int64 // the most in one server process
	cpu             time.Duration
	window          time.Duration
	errors          []string
}

func (m modeResult) totals() totals {
	var t totals
	for _, l := range m.Loaders {
		t.add(l.clientCounts)
		t.lateness = append(t.lateness, l.Lateness...)
		t.errors = append(t.errors, l.Errors...)
	}
	for _, s := range m.Servers {
		t.idleClosed += s.IdleClosed
		t.serverLateness = append(t.serverLateness, s.Lateness...)
		t.conns += s.Conns
		t.avgConns += s.AvgConns
		t.rss += s.RSSDelta
		t.heap += s.HeapDelta
		t.goroutines += s.Goroutines
		t.goroutinesDelta += s.GoroutinesDelta
		t.maxGoroutines = max(t.maxGoroutines, s.Goroutines)
		t.cpu += s.CPU
		t.window = max(t.window, s.Window)
	}
	slices.Sort(t.lateness)
	slices.Sort(t.serverLateness)
	return t
}

// check is a count that must be right.
type check struct {
	name, value string
	ok          bool
}

func (m modeResult) checks() []check {
	t := m.totals()
	var cs []check
	of := func(name string, got int64, want int) {
		cs = append(cs, check{name, commas(got) + " / " + commas(int64(want)), got == int64(want)})
	}
	zero := func(name string, got int64) {
		cs = append(cs, check{name, commas(got), got == 0})
	}
	zero("connections that failed", t.Failed)
	of("silent connections closed / expected", t.SilentClosed, m.Silent)
	of("closes counted by the servers / expected", t.idleClosed, m.Silent)
	zero("live connections closed", t.LiveLost+t.SilentLostEarly)
	zero("connections closed early", t.Early)
	return cs
}

// failures lists the wrong counts of every result.
func (r *report) failures() []string {
	var f []string
	for _, m := range r.results {
		for _, c := range m.checks() {
			if !c.ok {
				f = append(f, fmt.Sprintf("%s%s: %s %s", label(m.Mode), r.roundTag(m), c.name, c.value))
			}
		}
	}
	return f
}

func (r *report) roundTag(m modeResult) string {
	if r.cfg.Rounds <= 1 {
		return ""
	}
	return fmt.Sprintf(" (round %d)", m.Round+1)
}

// The figures of a result, as numbers, for the table and the summary.
func (t totals) latenessAt(p float64) (time.Duration, bool) { return quantile(t.lateness, p) }

// quantile returns quantile p of sorted microseconds.
func quantile(sorted []int64, p float64) (time.Duration, bool) {
	if len(sorted) == 0 {
		return 0, false
	}
	i := int(p * float64(len(sorted)-1))
	return time.Duration(sorted[i]) * time.Microsecond, true
}

func (t totals) perConn(bytes int64) (float64, bool) {
	if t.conns == 0 {
		return 0, false
	}
	return float64(bytes) / float64(t.conns), true
}

// cpuPerConn is the servers' CPU time per second and per average open
// connection, in microseconds per second.
func (t totals) cpuPerConn() (float64, bool) {
	if t.avgConns == 0 || t.window == 0 || t.cpu == 0 {
		return 0, false
	}
	return float64(t.cpu.Microseconds()) / t.window.Seconds() / t.avgConns, true
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
			fmt.Fprintf(w, "round %d\n", round+1)
		}
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
		if t := m.totals(); len(t.errors) > 0 {
			fmt.Fprintf(w, "%s%s, first errors:\n  %s\n", label(m.Mode), r.roundTag(m), strings.Join(t.errors, "\n  "))
		}
	}
}

// writeTable prints results side by side.
func writeTable(w io.Writer, rs []modeResult) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	row := func(name string, cells ...string) {
		fmt.Fprintf(tw, "%s\t%s\t\n", name, strings.Join(cells, "\t"))
	}
	ts := make([]totals, len(rs))
	var head []string
	for i, m := range rs {
		ts[i] = m.totals()
		head = append(head, label(m.Mode))
	}
	each := func(f func(m modeResult, t totals) string) []string {
		out := make([]string, len(rs))
		for i := range rs {
			out[i] = f(rs[i], ts[i])
		}
		return out
	}
	row("", head...)
	row("connect time", each(func(m modeResult, _ totals) string { return m.ConnectTime.Round(10 * time.Millisecond).String() })...)
	checks := rs[0].checks()
	for i := range checks {
		row(checks[i].name, each(func(m modeResult, _ totals) string {
			c := m.checks()[i]
			if c.ok {
				return c.value + "  ok"
			}
			return c.value + "  WRONG"
		})...)
	}
	for _, q := range []struct {
		name string
		p    float64
	}{{"detection lateness p50", 0.5}, {"detection lateness p99", 0.99}, {"detection lateness max", 1}} {
		row(q.name, each(func(_ modeResult, t totals) string {
			d, ok := t.latenessAt(q.p)
			return orDash(ok, fmtLateness(d))
		})...)
	}
	row("server-side lateness p50 / p99 / max", each(func(_ modeResult, t totals) string {
		var qs []string
		for _, p := range []float64{0.5, 0.99, 1} {
			d, ok := quantile(t.serverLateness, p)
			qs = append(qs, orDash(ok, fmtLateness(d)))
		}
		return strings.Join(qs, " / ")
	})...)
	row("server memory per connection (RSS)", each(func(_ modeResult, t totals) string {
		v, ok := t.perConn(t.rss)
		return orDash(ok, kib(v))
	})...)
	row("server Go heap + stacks per connection", each(func(_ modeResult, t totals) string {
		v, ok := t.perConn(t.heap)
		return orDash(ok, kib(v))
	})...)
	row("server CPU per connection", each(func(_ modeResult, t totals) string {
		v, ok := t.cpuPerConn()
		return orDash(ok, strconv.FormatFloat(v, 'f', 2, 64)+" µs/s")
	})...)
	row("server CPU, all server processes", each(func(_ modeResult, t totals) string {
		if t.window == 0 {
			return "-"
		}
		return strconv.FormatFloat(100*t.cpu.Seconds()/t.window.Seconds(), 'f', 1, 64) + "% of a core"
	})...)
	row("server goroutines per connection", each(func(_ modeResult, t totals) string {
		if t.conns == 0 {
			return "-"
		}
		return strconv.FormatFloat(float64(t.goroutinesDelta)/float64(t.conns), 'f', 3, 64)
	})...)
	row("server goroutines, largest process", each(func(_ modeResult, t totals) string { return commas(t.maxGoroutines) })...)
	row("connections at the window's start", each(func(_ modeResult, t totals) string { return commas(t.conns) })...)
	row("CPU time, servers / load processes, whole run", each(func(m modeResult, _ totals) string {
		return m.ServerCPU.Round(10*time.Millisecond).String() + " / " + m.LoaderCPU.Round(10*time.Millisecond).String()
	})...)
	row("peak memory of a server / load process", each(func(m modeResult, _ totals) string {
		return mib(m.ServerPeak) + " / " + mib(m.LoaderPeak)
	})...)
	tw.Flush()
}

// writeMedians prints, for each server, the median over the rounds of the
// figures that vary from run to run.
func (r *report) writeMedians(w io.Writer) {
	fmt.Fprintln(w)
	fmt.Fprintf(w, "medians over %d rounds\n", r.cfg.Rounds)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	var head []string
	for _, m := range r.cfg.Modes {
		head = append(head, label(m))
	}
	fmt.Fprintf(tw, "\t%s\t\n", strings.Join(head, "\t"))
	median := func(mode string, f func(t totals) (float64, bool)) (float64, bool) {
		var vs []float64
		for _, m := range r.results {
			if m.Mode == mode {
				if v, ok := f(m.totals()); ok {
					vs = append(vs, v)
				}
			}
		}
		if len(vs) == 0 {
			return 0, false
		}
		slices.Sort(vs)
		if len(vs)%2 == 1 {
			return vs[len(vs)/2], true
		}
		return (vs[len(vs)/2-1] + vs[len(vs)/2]) / 2, true
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
			d, ok := quantile(t.serverLateness, 0.99)
			return float64(d), ok
		}, durF},
		{"server memory per connection (RSS)", func(t totals) (float64, bool) { return t.perConn(t.rss) }, kib},
		{"server Go heap + stacks per connection", func(t totals) (float64, bool) { return t.perConn(t.heap) }, kib},
		{"server CPU per connection", totals.cpuPerConn, func(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) + " µs/s" }},
	}
	for _, rw := range rows {
		var cells []string
		for _, mode := range r.cfg.Modes {
			v, ok := median(mode, rw.f)
			cells = append(cells, orDash(ok, rw.format(v)))
		}
		fmt.Fprintf(tw, "%s\t%s\t\n", rw.name, strings.Join(cells, "\t"))
	}
	tw.Flush()
}

func lateF(p float64) func(t totals) (float64, bool) {
	return func(t totals) (float64, bool) {
		d, ok := t.latenessAt(p)
		return float64(d), ok
	}
}

func durF(v float64) string { return fmtLateness(time.Duration(v)) }

// fmtLateness rounds a lateness for the table.
func fmtLateness(d time.Duration) string {
	if d < 10*time.Millisecond && d > -10*time.Millisecond {
		return d.Round(10 * time.Microsecond).String()
	}
	return d.Round(time.Millisecond).String()
}

func orDash(ok bool, s string) string {
	if !ok {
		return "-"
	}
	return s
}

// kib formats bytes in KiB.
func kib(b float64) string { return strconv.FormatFloat(b/1024, 'f', 2, 64) + " KiB" }

// mib formats bytes in MiB, or "-" for 0 (not measured).
func mib(b int64) string {
	if b == 0 {
		return "-"
	}
	return strconv.FormatInt(b>>20, 10) + " MiB"
}

// plural formats n with the singular or the plural noun.
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return commas(int64(n)) + " " + many
}

// commas formats n with thousands separators.
func commas(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
