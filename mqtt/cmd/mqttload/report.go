package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/go-schedule/schedule"
	"github.com/go-schedule/schedule/bench/loadtest"
)

// report is a whole run's results.
type report struct {
	cfg   config
	modes []modeResult
}

// modeLabel names a mode in the report.
func modeLabel(mode string) string {
	switch mode {
	case modeListener:
		return "go-schedule listener"
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
		loadtest.Commas(int64(c.Clients)), loadtest.Commas(int64(c.Clients-s)), loadtest.Commas(int64(s)), c.Fall)
	fmt.Fprintf(w, "mqttload: keep-alive %ds (timeout %v), grace %v; for each keep-alive %s and %s; go-schedule pool of %d; seed %d\n",
		c.KeepAlive, c.timeout(), c.Grace, loadtest.Plural(c.Brokers, "broker process", "broker processes"),
		loadtest.Plural(c.Loaders, "load process", "load processes"), c.Workers, c.Seed)
}

// totals are a mode's figures, summed over its processes.
type totals struct {
	loadtest.LoadResult                                    // merged
	brokers                                 loadtest.Usage // summed
	willsSilent, willsLive, brokerKeepAlive int64
	packets                                 int64
	wakeups, fired                          uint64
	maxJobLateness                          time.Duration
	lateness                                [schedule.LatenessBuckets]uint64
}

func (m modeResult) totals() totals {
	t := totals{LoadResult: loadtest.MergeLoads(m.Loaders)}
	for _, b := range m.Servers {
		t.brokers.Add(b.Usage)
		t.willsSilent += b.WillsSilent
		t.willsLive += b.WillsLive
		t.brokerKeepAlive += b.KeepAliveDisconnects
		t.packets += b.Packets
		t.wakeups += b.Wakeups
		t.fired += b.Fired
		t.maxJobLateness = max(t.maxJobLateness, b.MaxJobLateness)
		for i, n := range b.Lateness {
			t.lateness[i] += n
		}
	}
	return t
}

// failures lists the counts that are wrong, for every mode; mochi's own
// keep-alive is the baseline.
func (r *report) failures() []loadtest.Failure {
	var f []loadtest.Failure
	for _, m := range r.modes {
		for _, c := range m.checks() {
			if !c.OK {
				f = append(f, loadtest.Failure{Server: modeLabel(m.Mode), Baseline: m.Mode == modeMochi, Count: c.Name + " " + c.Value})
			}
		}
	}
	return f
}

// checks are the counts of a mode that must be right.
func (m modeResult) checks() []loadtest.Check {
	t := m.totals()
	return []loadtest.Check{
		loadtest.None("connections that failed", t.Failed),
		loadtest.Exact("silent clients disconnected / expected", t.SilentClosed, m.Silent),
		loadtest.Exact("wills published / expected", t.willsSilent, m.Silent),
		loadtest.Exact("keep-alive disconnects seen by the brokers", t.brokerKeepAlive, m.Silent),
		loadtest.None("live clients wrongly disconnected", t.LiveLost+t.SilentLostEarly),
		loadtest.None("wills of live clients published", t.willsLive),
		loadtest.None("silent clients disconnected early", t.Early),
	}
}

// column is a mode's column in the report's table.
type column struct {
	m modeResult
	t totals
}

// write prints the modes side by side.
func (r *report) write(w io.Writer) {
	if len(r.modes) == 0 {
		return
	}
	var cols []column
	for _, m := range r.modes {
		cols = append(cols, column{m, m.totals()})
	}
	fmt.Fprintln(w)
	tab := loadtest.NewTable(w, 0, cols, func(c column) string { return modeLabel(c.m.Mode) })
	tab.Row("connect time", func(c column) string { return c.m.ConnectTime.Round(10 * time.Millisecond).String() })
	for i, check := range r.modes[0].checks() {
		tab.Row(check.Name, func(c column) string { return c.m.checks()[i].Cell() })
	}
	tab.Quantiles("detection lateness", func(c column) []int64 { return c.t.Lateness })
	tab.Quantiles("broker detection lateness", func(c column) []int64 { return c.m.BrokerLateness })
	tab.Row("wills received by a subscriber", func(c column) string { return loadtest.Commas(int64(len(c.t.WillLateness))) })
	tab.Quantiles("will lateness", func(c column) []int64 { return c.t.WillLateness })
	tab.Row("broker memory per connection (RSS)", func(c column) string { return perConn(c.t.brokers.RSSDelta, c.t.brokers.Conns) })
	tab.Row("broker Go heap + stacks per connection", func(c column) string { return perConn(c.t.brokers.HeapDelta, c.t.brokers.Conns) })
	tab.Row("broker goroutines per connection", func(c column) string {
		b := c.t.brokers
		if b.Conns == 0 {
			return "-"
		}
		return strconv.FormatFloat(float64(b.GoroutinesDelta)/float64(b.Conns), 'f', 2, 64)
	})
	tab.Row("broker CPU per connection", func(c column) string {
		us, ok := loadtest.CPUPerConn(c.t.brokers.CPU, c.t.brokers.Window, c.t.brokers.AvgConns)
		return loadtest.OrDash(ok, strconv.FormatFloat(us, 'f', 2, 64)+" µs/s")
	})
	tab.Row("broker CPU, all brokers", func(c column) string {
		b := c.t.brokers
		if b.Window == 0 || b.CPU == 0 {
			return "-"
		}
		return strconv.FormatFloat(100*b.CPU.Seconds()/b.Window.Seconds(), 'f', 1, 64) + "% of a core"
	})
	tab.Row("packets read by the brokers per second", func(c column) string {
		if c.t.brokers.Window == 0 {
			return "-"
		}
		return loadtest.Commas(int64(float64(c.t.packets)/c.t.brokers.Window.Seconds() + 0.5))
	})
	tab.Row("broker CPU per packet read", func(c column) string {
		if c.t.packets == 0 || c.t.brokers.CPU == 0 {
			return "-"
		}
		return strconv.FormatFloat(float64(c.t.brokers.CPU.Nanoseconds())/1e3/float64(c.t.packets), 'f', 2, 64) + " µs"
	})
	tab.Row("broker context switches per packet read", func(c column) string {
		if c.t.packets == 0 {
			return "-"
		}
		return strconv.FormatFloat(float64(c.t.brokers.Switches)/float64(c.t.packets), 'f', 2, 64)
	})
	tab.Row("garbage collections in the window, all brokers", func(c column) string { return loadtest.Commas(int64(c.t.brokers.GCs)) })
	tab.Row("scheduler wake-ups per second / jobs run, all brokers", func(c column) string {
		if c.m.Mode == modeMochi || c.t.brokers.Window == 0 {
			return "-"
		}
		return strconv.FormatFloat(float64(c.t.wakeups)/c.t.brokers.Window.Seconds(), 'f', 1, 64) + " / " + loadtest.Commas(int64(c.t.fired))
	})
	tab.Row("largest lateness of a scheduler job start, at most (bucket bound)", func(c column) string {
		if c.m.Mode == modeMochi {
			return "-"
		}
		return loadtest.FormatQuantile([]int64{c.t.maxJobLateness.Microseconds()}, 1)
	})
	tab.Row("scheduler job starts later than 1 ms / 10 ms", func(c column) string {
		if c.m.Mode == modeMochi {
			return "-"
		}
		return loadtest.Commas(int64(lateStarts(c.t.lateness, time.Millisecond))) + " / " +
			loadtest.Commas(int64(lateStarts(c.t.lateness, 10*time.Millisecond)))
	})
	tab.Row("connections at the window's start", func(c column) string { return loadtest.Commas(c.t.brokers.Conns) })
	tab.Row("CPU time, brokers / load processes, whole run", func(c column) string { return c.m.CPU() })
	tab.Row("peak memory of a broker / load process", func(c column) string { return c.m.Peak() })
	tab.Flush()
	if rs := r.ratios(); len(rs) > 0 {
		fmt.Fprintln(w)
		for _, r := range rs {
			fmt.Fprintf(w, "%s / %s: broker CPU per connection %s, detection lateness p99 %s, will lateness p99 %s, broker detection p99 %s\n",
				r.mode, modeLabel(modeMochi), r.cpu, r.p99, r.willP99, r.brokerP99)
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "lateness: from a silent client's last packet + 1.5 × keep-alive to the end of its connection, seen by the client")
	fmt.Fprintln(w, "broker lateness: from the same moment to the broker's OnDisconnect for the client (will published, connection closed), on the wall clock")
	fmt.Fprintln(w, "will lateness: from the same moment to the arrival of the client's will at a subscriber (one per broker, in the load process)")
	fmt.Fprintln(w, "memory: at the window's start, after a collection, less the same before any client connected")
	fmt.Fprintln(w, "CPU: broker processes over the window (pings, silent clients' disconnects and wills), per average open connection")
	for _, c := range cols {
		if len(c.t.Errors) > 0 {
			fmt.Fprintf(w, "%s, first errors:\n  %s\n", modeLabel(c.m.Mode), strings.Join(c.t.Errors, "\n  "))
		}
	}
}

// ratio is one mode's figures over mochi's deadline's, in the same run,
// formatted.
type ratio struct{ mode, cpu, p99, willP99, brokerP99 string }

// ratios returns the ratios of every mode to mochi's deadline, when the
// run measured it.
func (r *report) ratios() []ratio {
	var own *totals
	var ownBroker []int64
	for _, m := range r.modes {
		if m.Mode == modeMochi {
			t := m.totals()
			own, ownBroker = &t, m.BrokerLateness
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
		b := t.brokers
		if b.AvgConns == 0 || b.Window == 0 {
			return 0
		}
		return b.CPU.Seconds() / b.Window.Seconds() / b.AvgConns
	}
	p99 := func(sorted []int64) float64 {
		d, _ := loadtest.Quantile(sorted, 0.99)
		return float64(d)
	}
	var rs []ratio
	for _, m := range r.modes {
		if m.Mode == modeMochi {
			continue
		}
		t := m.totals()
		rs = append(rs, ratio{mode: modeLabel(m.Mode), cpu: div(perConnCPU(&t), perConnCPU(own)),
			p99: div(p99(t.Lateness), p99(own.Lateness)), willP99: div(p99(t.WillLateness), p99(own.WillLateness)),
			brokerP99: div(p99(m.BrokerLateness), p99(ownBroker))})
	}
	return rs
}

// lateStarts counts the job starts in buckets (see schedule.Stats.Lateness)
// later than bound, which must be one of schedule.LatenessBounds.
func lateStarts(buckets [schedule.LatenessBuckets]uint64, bound time.Duration) uint64 {
	var n uint64
	for i, b := range schedule.LatenessBounds() {
		if b >= bound {
			for _, c := range buckets[i+1:] {
				n += c
			}
			return n
		}
	}
	return 0
}

// perConn formats bytes per connection.
func perConn(bytes, conns int64) string {
	if conns == 0 {
		return "-"
	}
	return strconv.FormatFloat(float64(bytes)/float64(conns)/1024, 'f', 1, 64) + " KiB"
}
