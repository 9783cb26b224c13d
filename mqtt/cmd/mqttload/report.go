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

// report is a whole run's results.
type report struct {
	cfg   config
	modes []modeResult
}

// modeLabel names a mode in the report.
func modeLabel(mode string) string {
	switch mode {
	case modeSchedule:
		return "go-schedule hook"
	case modeBoth:
		return "hook + mochi deadline"
	}
	return "mochi deadline"
}

func writeHeader(w io.Writer, c config) {
	s := c.silentCount()
	fmt.Fprintf(w, "mqttload: %s clients: %s paho clients pinging, %s bare clients falling silent within %v\n",
		commas(int64(c.Clients)), commas(int64(c.Clients-s)), commas(int64(s)), c.Fall)
	fmt.Fprintf(w, "mqttload: keep-alive %ds (timeout %v), grace %v; for each keep-alive %s and %s; go-schedule pool of %d; seed %d\n",
		c.KeepAlive, c.timeout(), c.Grace, plural(c.Brokers, "broker process", "broker processes"),
		plural(c.Loaders, "load process", "load processes"), c.Workers, c.Seed)
}

// totals are a mode's figures, summed over its processes.
type totals struct {
	loaderCounts
	early, willsSilent, willsLive, brokerKeepAlive int64
	lateness                                       []int64 // µs, sorted
	conns                                          int64
	avgConns                                       float64
	rss, heap, goroutines                          int64
	cpu                                            time.Duration
	window                                         time.Duration
	packets, gcs, switches                         int64
	wakeups, fired                                 uint64
	maxJobLateness                                 time.Duration
	errors                                         []string
}

func (m modeResult) totals() totals {
	var t totals
	for _, l := range m.Loaders {
		t.add(l.loaderCounts)
		t.early += l.Early
		t.lateness = append(t.lateness, l.Lateness...)
		t.errors = append(t.errors, l.Errors...)
	}
	slices.Sort(t.lateness)
	for _, b := range m.Brokers {
		t.willsSilent += b.WillsSilent
		t.willsLive += b.WillsLive
		t.brokerKeepAlive += b.KeepAliveDisconnects
		t.conns += b.Conns
		t.avgConns += b.AvgConns
		t.rss += b.RSSDelta
		t.heap += b.HeapDelta
		t.goroutines += b.Goroutines
		t.cpu += b.CPU
		t.window = max(t.window, b.Window)
		t.packets += b.Packets
		t.gcs += int64(b.GCs)
		t.switches += b.Switches
		t.wakeups += b.Wakeups
		t.fired += b.Fired
		t.maxJobLateness = max(t.maxJobLateness, b.MaxJobLateness)
	}
	return t
}

// failures lists the counts that are wrong, for every mode.
func (r *report) failures() []string {
	var f []string
	for _, m := range r.modes {
		for _, c := range m.checks() {
			if !c.ok {
				f = append(f, fmt.Sprintf("%s: %s %s", modeLabel(m.Mode), c.name, c.value))
			}
		}
	}
	return f
}

// check is one count that must be right.
type check struct {
	name, value string
	ok          bool
}

func (m modeResult) checks() []check {
	t := m.totals()
	of := func(got int64, want int) (string, bool) {
		return commas(got) + " / " + commas(int64(want)), got == int64(want)
	}
	zero := func(got int64) (string, bool) { return commas(got), got == 0 }
	var cs []check
	add := func(name string, v string, ok bool) { cs = append(cs, check{name, v, ok}) }
	v, ok := zero(t.Failed)
	add("connections that failed", v, ok)
	v, ok = of(t.SilentClosed, m.Silent)
	add("silent clients disconnected / expected", v, ok)
	v, ok = of(t.willsSilent, m.Silent)
	add("wills published / expected", v, ok)
	v, ok = of(t.brokerKeepAlive, m.Silent)
	add("keep-alive disconnects seen by the brokers", v, ok)
	v, ok = zero(t.LiveLost + t.SilentLostEarly)
	add("live clients wrongly disconnected", v, ok)
	v, ok = zero(t.willsLive)
	add("wills of live clients published", v, ok)
	v, ok = zero(t.early)
	add("silent clients disconnected early", v, ok)
	return cs
}

// write prints the modes side by side.
func (r *report) write(w io.Writer) {
	if len(r.modes) == 0 {
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(name string, cells ...string) {
		fmt.Fprintf(tw, "%s\t%s\t\n", name, strings.Join(cells, "\t"))
	}
	var head []string
	var ts []totals
	for _, m := range r.modes {
		head = append(head, modeLabel(m.Mode))
		ts = append(ts, m.totals())
	}
	fmt.Fprintln(w)
	row("", head...)
	each := func(f func(m modeResult, t totals) string) []string {
		var out []string
		for i, m := range r.modes {
			out = append(out, f(m, ts[i]))
		}
		return out
	}
	row("connect time", each(func(m modeResult, _ totals) string { return m.ConnectTime.Round(10 * time.Millisecond).String() })...)
	for i := range r.modes[0].checks() {
		row(r.modes[0].checks()[i].name, each(func(m modeResult, _ totals) string {
			c := m.checks()[i]
			mark := "ok"
			if !c.ok {
				mark = "WRONG"
			}
			return c.value + "  " + mark
		})...)
	}
	for _, q := range []struct {
		name string
		p    float64
	}{{"detection lateness p50", 0.50}, {"detection lateness p99", 0.99}, {"detection lateness max", 1}} {
		row(q.name, each(func(_ modeResult, t totals) string { return lateness(t.lateness, q.p) })...)
	}
	row("broker memory per connection (RSS)", each(func(_ modeResult, t totals) string { return perConn(t.rss, t.conns) })...)
	row("broker Go heap + stacks per connection", each(func(_ modeResult, t totals) string { return perConn(t.heap, t.conns) })...)
	row("broker goroutines per connection", each(func(_ modeResult, t totals) string {
		if t.conns == 0 {
			return "-"
		}
		return strconv.FormatFloat(float64(t.goroutines)/float64(t.conns), 'f', 2, 64)
	})...)
	row("broker CPU per connection", each(func(_ modeResult, t totals) string {
		if t.avgConns == 0 || t.window == 0 || t.cpu == 0 {
			return "-"
		}
		us := float64(t.cpu.Microseconds()) / t.window.Seconds() / t.avgConns
		return strconv.FormatFloat(us, 'f', 2, 64) + " µs/s"
	})...)
	row("broker CPU, all brokers", each(func(_ modeResult, t totals) string {
		if t.window == 0 || t.cpu == 0 {
			return "-"
		}
		return strconv.FormatFloat(100*t.cpu.Seconds()/t.window.Seconds(), 'f', 1, 64) + "% of a core"
	})...)
	row("packets read by the brokers per second", each(func(_ modeResult, t totals) string {
		if t.window == 0 {
			return "-"
		}
		return commas(int64(float64(t.packets)/t.window.Seconds() + 0.5))
	})...)
	row("broker CPU per packet read", each(func(_ modeResult, t totals) string {
		if t.packets == 0 || t.cpu == 0 {
			return "-"
		}
		return strconv.FormatFloat(float64(t.cpu.Nanoseconds())/1e3/float64(t.packets), 'f', 2, 64) + " µs"
	})...)
	row("broker context switches per packet read", each(func(_ modeResult, t totals) string {
		if t.packets == 0 {
			return "-"
		}
		return strconv.FormatFloat(float64(t.switches)/float64(t.packets), 'f', 2, 64)
	})...)
	row("garbage collections in the window, all brokers", each(func(_ modeResult, t totals) string { return commas(t.gcs) })...)
	row("scheduler wake-ups per second / jobs run, all brokers", each(func(m modeResult, t totals) string {
		if m.Mode == modeMochi || t.window == 0 {
			return "-"
		}
		return strconv.FormatFloat(float64(t.wakeups)/t.window.Seconds(), 'f', 1, 64) + " / " + commas(int64(t.fired))
	})...)
	row("largest lateness of a scheduler job start", each(func(m modeResult, t totals) string {
		if m.Mode == modeMochi {
			return "-"
		}
		return lateness([]int64{t.maxJobLateness.Microseconds()}, 1)
	})...)
	row("connections at the window's start", each(func(_ modeResult, t totals) string { return commas(t.conns) })...)
	row("CPU time, brokers / load processes, whole run", each(func(m modeResult, _ totals) string {
		return m.BrokerCPU.Round(10*time.Millisecond).String() + " / " + m.LoaderCPU.Round(10*time.Millisecond).String()
	})...)
	row("peak memory of a broker / load process", each(func(m modeResult, _ totals) string {
		return mib(m.BrokerPeak) + " / " + mib(m.LoaderPeak)
	})...)
	tw.Flush()
	if rs := r.ratios(); len(rs) > 0 {
		fmt.Fprintln(w)
		for _, r := range rs {
			fmt.Fprintf(w, "%s / %s: broker CPU per connection %s, detection lateness p99 %s\n", r.mode, modeLabel(modeMochi), r.cpu, r.p99)
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "lateness: from a silent client's last packet + 1.5 × keep-alive to the end of its connection, seen by the client")
	fmt.Fprintln(w, "memory: at the window's start, after a collection, less the same before any client connected")
	fmt.Fprintln(w, "CPU: broker processes over the window (pings, silent clients' disconnects and wills), per average open connection")
	for i, m := range r.modes {
		if len(ts[i].errors) > 0 {
			fmt.Fprintf(w, "%s, first errors:\n  %s\n", modeLabel(m.Mode), strings.Join(ts[i].errors, "\n  "))
		}
	}
}

// ratio is one mode's figures over mochi's deadline's, in the same run,
// formatted.
type ratio struct{ mode, cpu, p99 string }

// ratios returns the ratios of every mode to mochi's deadline, when the
// run measured it.
func (r *report) ratios() []ratio {
	var own *totals
	for _, m := range r.modes {
		if m.Mode == modeMochi {
			t := m.totals()
			own = &t
		}
	}
	if own == nil {
		return nil
	}
	div := func(a, b float64) string {
		if b <= 0 || a < 0 {
			return "-"
		}
		return strconv.FormatFloat(a/b, 'f', 2, 64) + "×"
	}
	perConnCPU := func(t *totals) float64 {
		if t.avgConns == 0 || t.window == 0 {
			return 0
		}
		return t.cpu.Seconds() / t.window.Seconds() / t.avgConns
	}
	p99 := func(t *totals) float64 {
		if len(t.lateness) == 0 {
			return 0
		}
		return float64(t.lateness[int(0.99*float64(len(t.lateness)-1))])
	}
	var rs []ratio
	for _, m := range r.modes {
		if m.Mode == modeMochi {
			continue
		}
		t := m.totals()
		rs = append(rs, ratio{mode: modeLabel(m.Mode), cpu: div(perConnCPU(&t), perConnCPU(own)), p99: div(p99(&t), p99(own))})
	}
	return rs
}

// lateness formats quantile p of the sorted latenesses in µs.
func lateness(sorted []int64, p float64) string {
	if len(sorted) == 0 {
		return "-"
	}
	i := int(p * float64(len(sorted)-1))
	d := time.Duration(sorted[i]) * time.Microsecond
	switch {
	case d < 10*time.Millisecond && d > -10*time.Millisecond:
		return d.Round(10 * time.Microsecond).String()
	default:
		return d.Round(time.Millisecond).String()
	}
}

// perConn formats bytes per connection.
func perConn(bytes, conns int64) string {
	if conns == 0 {
		return "-"
	}
	return strconv.FormatFloat(float64(bytes)/float64(conns)/1024, 'f', 1, 64) + " KiB"
}

// mib formats bytes in MiB, or "-" for 0 (not measured).
func mib(b int64) string {
	if b == 0 {
		return "-"
	}
	return strconv.FormatInt(b>>20, 10) + " MiB"
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
