package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"
)

// metric is one figure of a cell, taken from each repetition's result.
type metric struct {
	key, title string
	get        func(*hostResult) float64
}

// metrics are the figures the report gives per cell, in table order.
var metrics = []metric{
	{"late_p50_us", "p50 µs", func(r *hostResult) float64 { return r.LateP50 }},
	{"late_p99_us", "p99 µs", func(r *hostResult) float64 { return r.LateP99 }},
	{"late_p999_us", "p99.9 µs", func(r *hostResult) float64 { return r.LateP999 }},
	{"cpu_pct", "CPU % of a core", func(r *hostResult) float64 { return r.CPUPct }},
	{"cpu_ms_per_s", "CPU ms/s", func(r *hostResult) float64 { return r.CPUMsPerS }},
	{"ctxsw_per_s", "ctx switches/s", func(r *hostResult) float64 { return r.CtxSwPerS }},
	{"packets", "packets read", func(r *hostResult) float64 { return float64(r.Packets) }},
	{"lost", "lost", func(r *hostResult) float64 { return float64(r.Lost) }},
	{"packets_per_s", "packets/s", func(r *hostResult) float64 { return r.PacketsPerS }},
	{"sender_per_s", "sent/s", func(r *hostResult) float64 { return r.SenderPerS }},
	{"expired", "keys expired", func(r *hostResult) float64 { return float64(r.Expired) }},
	{"work_per_s", "work/s", func(r *hostResult) float64 { return r.WorkPerS }},
}

// ratioKeys are the metrics compared with the runtime's, in table order.
var ratioKeys = []string{"late_p50_us", "late_p99_us", "late_p999_us", "cpu_ms_per_s", "ctxsw_per_s"}

// target is one of go-schedule's host targets: the median ratio of a
// metric to the runtime's must be at most limit.
type target struct {
	key, title string
	limit      float64
}

// Limits of the host targets, as ratios to the runtime's timers.
const (
	latencyLimit = 1.1
	cpuLimit     = 1.0
	ctxSwLimit   = 1.1
)

var targets = []target{
	{"late_p99_us", "host p99", latencyLimit},
	{"late_p999_us", "host p99.9", latencyLimit},
	{"cpu_ms_per_s", "CPU", cpuLimit},
	{"ctxsw_per_s", "context switches", ctxSwLimit},
}

// machineInfo describes where the run happened.
type machineInfo struct {
	CPU   string `json:"cpu"`
	Cores int    `json:"cores"`
	Go    string `json:"go"`
	OS    string `json:"os"`
}

// report is a whole run: written as results.json and rendered as markdown.
type report struct {
	Command string      `json:"command"`
	Date    string      `json:"date"`
	Machine machineInfo `json:"machine"`
	Config  config      `json:"config"`
	// Indicative is set when there were too few repetitions for the
	// verdicts to mean much.
	Indicative bool          `json:"indicative"`
	Runs       []hostResult  `json:"runs"`
	Cells      []cellSummary `json:"cells"`
	Verdicts   []verdict     `json:"verdicts"`
	Failures   []string      `json:"failures,omitempty"`
}

// cellSummary is one (GOMAXPROCS, shape, implementation) over the
// repetitions that succeeded.
type cellSummary struct {
	Procs int    `json:"gomaxprocs"`
	Shape string `json:"shape"`
	Impl  string `json:"impl"`
	// N is the number of repetitions that succeeded.
	N        int                `json:"n"`
	Median   map[string]float64 `json:"median"`
	Counters map[string]float64 `json:"counters,omitempty"`
	// Ratio compares go-schedule's medians with the runtime's.
	Ratio map[string]ratio `json:"ratio,omitempty"`
	// Expected is the shape's expected work rate, Unit what it counts.
	Expected float64 `json:"expected_per_s"`
	Unit     string  `json:"unit"`
}

// ratio is a go-schedule figure divided by the runtime's in the same run.
type ratio struct {
	// Median is the median of go-schedule's figures over the median of
	// the runtime's.
	Median float64 `json:"median"`
	// Min and Max are the extremes of the ratios of single repetitions,
	// over the N repetitions where both succeeded.
	Min float64 `json:"min"`
	Max float64 `json:"max"`
	N   int     `json:"n"`
}

// verdict is one host target checked for one go-schedule cell.
type verdict struct {
	Procs  int     `json:"gomaxprocs"`
	Shape  string  `json:"shape"`
	Impl   string  `json:"impl"`
	Target string  `json:"target"`
	Limit  float64 `json:"limit"`
	Ratio  float64 `json:"ratio"`
	// Measured is false when either side had no successful repetition.
	Measured bool `json:"measured"`
	Met      bool `json:"met"`
}

func newReport(c config) *report {
	return &report{
		Command:    commandLine(os.Args[1:]),
		Date:       time.Now().UTC().Format(time.RFC3339),
		Machine:    describeMachine(),
		Config:     c,
		Indicative: c.Quick || c.Count < indicativeBelowRep,
	}
}

// summarize fills Cells, Verdicts and Failures from Runs.
func (r *report) summarize() {
	r.Cells, r.Verdicts, r.Failures = nil, nil, nil
	for _, run := range r.Runs {
		if run.Error != "" {
			r.Failures = append(r.Failures, fmt.Sprintf("rep %d, GOMAXPROCS %d, %s, %s: %s",
				run.Rep, run.Procs, run.Shape, run.Impl, run.Error))
		}
	}
	for _, p := range r.Config.Procs {
		for _, sh := range r.Config.Shapes {
			for _, im := range r.Config.Impls {
				r.Cells = append(r.Cells, r.summarizeCell(p, sh, im))
			}
			for _, im := range r.Config.Impls {
				if im != implRuntime {
					r.compare(p, sh, im)
				}
			}
		}
	}
}

// loadRange returns the lowest and highest load average seen as cells
// started.
func (r *report) loadRange() (lo, hi float64, ok bool) {
	for _, run := range r.Runs {
		if run.Load1 == 0 {
			continue
		}
		if !ok {
			lo, hi, ok = run.Load1, run.Load1, true
		}
		lo, hi = min(lo, run.Load1), max(hi, run.Load1)
	}
	return lo, hi, ok
}

// okRuns returns the successful repetitions of a cell.
func (r *report) okRuns(procs int, shape, impl string) []*hostResult {
	var out []*hostResult
	for i := range r.Runs {
		run := &r.Runs[i]
		if run.Procs == procs && run.Shape == shape && run.Impl == impl && run.Error == "" {
			out = append(out, run)
		}
	}
	return out
}

func (r *report) summarizeCell(procs int, shape, impl string) cellSummary {
	runs := r.okRuns(procs, shape, impl)
	cs := cellSummary{Procs: procs, Shape: shape, Impl: impl, N: len(runs), Median: map[string]float64{}}
	if len(runs) == 0 {
		return cs
	}
	cs.Expected, cs.Unit = runs[0].ExpectedPerS, runs[0].Unit
	for _, m := range metrics {
		var xs []float64
		for _, run := range runs {
			xs = append(xs, m.get(run))
		}
		cs.Median[m.key] = median(xs)
	}
	if impl != implRuntime {
		cs.Counters = map[string]float64{}
		for _, k := range schedulerCounters {
			var xs []float64
			for _, run := range runs {
				xs = append(xs, float64(run.Counters[k.name]))
			}
			cs.Counters[k.name] = median(xs)
		}
	}
	return cs
}

// cell returns the summary of a cell, or nil.
func (r *report) cell(procs int, shape, impl string) *cellSummary {
	for i := range r.Cells {
		c := &r.Cells[i]
		if c.Procs == procs && c.Shape == shape && c.Impl == impl {
			return c
		}
	}
	return nil
}

// compare fills a go-schedule cell's ratios to the runtime's cell of the
// same GOMAXPROCS and shape, and adds its verdicts.
func (r *report) compare(procs int, shape, impl string) {
	gs, rt := r.cell(procs, shape, impl), r.cell(procs, shape, implRuntime)
	if gs == nil {
		return
	}
	if rt != nil && gs.N > 0 && rt.N > 0 {
		gs.Ratio = map[string]ratio{}
		for _, key := range ratioKeys {
			gs.Ratio[key] = compareRuns(r.okRuns(procs, shape, impl), r.okRuns(procs, shape, implRuntime),
				gs.Median[key], rt.Median[key], metricGetter(key))
		}
	}
	for _, t := range targets {
		v := verdict{Procs: procs, Shape: shape, Impl: impl, Target: t.title, Limit: t.limit}
		if q, ok := gs.Ratio[t.key]; ok && !math.IsNaN(q.Median) {
			v.Measured, v.Ratio, v.Met = true, q.Median, q.Median <= t.limit
		}
		r.Verdicts = append(r.Verdicts, v)
	}
}

// compareRuns returns the ratio of two medians, and the range of the
// ratios of the repetitions both sides completed. A ratio over zero is NaN.
func compareRuns(gs, rt []*hostResult, gsMedian, rtMedian float64, get func(*hostResult) float64) ratio {
	q := ratio{Median: divide(gsMedian, rtMedian), Min: math.NaN(), Max: math.NaN()}
	for _, a := range gs {
		for _, b := range rt {
			if a.Rep != b.Rep {
				continue
			}
			x := divide(get(a), get(b))
			if math.IsNaN(x) {
				continue
			}
			if q.N == 0 || x < q.Min {
				q.Min = x
			}
			if q.N == 0 || x > q.Max {
				q.Max = x
			}
			q.N++
		}
	}
	return q
}

func divide(a, b float64) float64 {
	if b == 0 {
		return math.NaN()
	}
	return a / b
}

func metricGetter(key string) func(*hostResult) float64 {
	for _, m := range metrics {
		if m.key == key {
			return m.get
		}
	}
	panic("no metric " + key)
}

func metricTitle(key string) string {
	for _, m := range metrics {
		if m.key == key {
			return m.title
		}
	}
	return key
}

// median returns the median of xs (the mean of the middle two for an even
// count), or NaN for none; xs is not modified.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// rankTolerance keeps a rank that is whole in decimals (99.9% of 1,000
// values) from being pushed to the next one by binary rounding.
const rankTolerance = 1e-9

// percentile returns the p-th percentile (0 < p ≤ 100) of sorted values by
// the nearest-rank method: the smallest value with at least p% of the
// values at or below it. It returns 0 for no values.
func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p*float64(len(sorted))/100 - rankTolerance))
	return sorted[min(max(rank, 1), len(sorted))-1]
}

// write stores results.json and results.md in dir.
func (r *report) write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	js, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "results.json"), append(js, '\n'), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "results.md"), []byte(r.markdown()), 0o644)
}

// markdown renders the report.
func (r *report) markdown() string {
	var b strings.Builder
	c := r.Config
	b.WriteString("# Host impact: go-schedule against the runtime's timers\n\n")
	fmt.Fprintf(&b, "- Command (from bench/): `%s`\n", r.Command)
	fmt.Fprintf(&b, "- Date: %s\n", r.Date)
	fmt.Fprintf(&b, "- Machine: %s, %d cores, %s, %s\n", r.Machine.CPU, r.Machine.Cores, r.Machine.OS, r.Machine.Go)
	fmt.Fprintf(&b, "- %d repetition(s), interleaved; window %v after a %v warm-up; sender ticker %v; go-schedule pool %d workers\n",
		c.Count, c.Window, c.Warmup, c.Interval, c.Workers)
	fmt.Fprintf(&b, "- gateway: %d keys, each reset every %v with a %v timeout, from one goroutine on a %v ticker; "+
		"fire: %d one-shots, each due in (0, %v] and scheduled again when it runs\n",
		c.Keys, c.ResetEvery, c.Timeout, c.Tick, c.FireTasks, c.FireMax)
	if lo, hi, ok := r.loadRange(); ok {
		fmt.Fprintf(&b, "- 1-minute load average as cells started: %.2f–%.2f (the machine is shared; other work adds noise)\n", lo, hi)
	}
	b.WriteString("- Lateness: receive time − send stamp of each packet read in the window. " +
		"CPU: user + system time of the host process. Context switches: voluntary + involuntary, every thread.\n")
	if r.Indicative {
		fmt.Fprintf(&b, "\n**Indicative only**: fewer than %d repetitions (or -quick).\n", indicativeBelowRep)
	}

	b.WriteString("\n## Per cell (medians over repetitions)\n\n")
	r.cellTable(&b)
	b.WriteString("\n## Against the runtime's timers\n\n")
	b.WriteString("Median of go-schedule ÷ median of the runtime in the same run; in brackets the lowest and highest " +
		"ratio of single repetitions.\n\n")
	r.ratioTable(&b)
	b.WriteString("\n## Scheduler counters (deltas over the window, medians)\n\n")
	r.counterTable(&b)
	b.WriteString("\n## Verdicts\n\n")
	fmt.Fprintf(&b, "Targets: host p99 and p99.9 ≤ %.1f×, CPU ≤ %.1f×, context switches ≤ %.1f× the runtime's (median ratios).",
		latencyLimit, cpuLimit, ctxSwLimit)
	if r.Indicative {
		b.WriteString(" Indicative.")
	}
	b.WriteString("\n\n")
	r.verdictTable(&b)
	if len(r.Failures) > 0 {
		b.WriteString("\n## Failed cells\n\n")
		for _, f := range r.Failures {
			fmt.Fprintf(&b, "- %s\n", f)
		}
	}
	return b.String()
}

func row(b *strings.Builder, cells ...string) {
	b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
}

func header(b *strings.Builder, cols ...string) {
	row(b, cols...)
	seps := make([]string, len(cols))
	for i := range seps {
		seps[i] = "---"
		if i >= 3 {
			seps[i] = "---:"
		}
	}
	row(b, seps...)
}

func (r *report) cellTable(b *strings.Builder) {
	cols := []string{"GOMAXPROCS", "shape", "impl", "runs"}
	for _, m := range metrics {
		cols = append(cols, m.title)
	}
	cols = append(cols, "expected work/s")
	header(b, cols...)
	for _, cs := range r.Cells {
		cells := []string{fmt.Sprint(cs.Procs), cs.Shape, cs.Impl, fmt.Sprint(cs.N)}
		for _, m := range metrics {
			cells = append(cells, num(cs.Median[m.key], cs.N))
		}
		cells = append(cells, num(cs.Expected, cs.N)+" "+cs.Unit)
		row(b, cells...)
	}
}

func (r *report) ratioTable(b *strings.Builder) {
	cols := []string{"GOMAXPROCS", "shape", "impl"}
	for _, k := range ratioKeys {
		cols = append(cols, metricTitle(k))
	}
	header(b, cols...)
	for _, cs := range r.Cells {
		if cs.Impl == implRuntime {
			continue
		}
		cells := []string{fmt.Sprint(cs.Procs), cs.Shape, cs.Impl}
		for _, k := range ratioKeys {
			q, ok := cs.Ratio[k]
			if !ok || math.IsNaN(q.Median) {
				cells = append(cells, "n/a")
				continue
			}
			s := times(q.Median)
			if q.N > 1 {
				s += fmt.Sprintf(" (%s–%s)", times(q.Min), times(q.Max))
			}
			cells = append(cells, s)
		}
		row(b, cells...)
	}
}

func (r *report) counterTable(b *strings.Builder) {
	cols := []string{"GOMAXPROCS", "shape", "impl"}
	for _, k := range schedulerCounters {
		cols = append(cols, k.name)
	}
	header(b, cols...)
	for _, cs := range r.Cells {
		if cs.Impl == implRuntime {
			continue
		}
		cells := []string{fmt.Sprint(cs.Procs), cs.Shape, cs.Impl}
		for _, k := range schedulerCounters {
			cells = append(cells, num(cs.Counters[k.name], cs.N))
		}
		row(b, cells...)
	}
}

func (r *report) verdictTable(b *strings.Builder) {
	cols := []string{"GOMAXPROCS", "shape", "impl"}
	for _, t := range targets {
		cols = append(cols, fmt.Sprintf("%s ≤ %.1f×", t.title, t.limit))
	}
	header(b, cols...)
	met, all := 0, 0
	for i := 0; i < len(r.Verdicts); i += len(targets) {
		v0 := r.Verdicts[i]
		cells := []string{fmt.Sprint(v0.Procs), v0.Shape, v0.Impl}
		for _, v := range r.Verdicts[i : i+len(targets)] {
			all++
			switch {
			case !v.Measured:
				cells = append(cells, "not measured")
			case v.Met:
				met++
				cells = append(cells, "met ("+times(v.Ratio)+")")
			default:
				cells = append(cells, "**missed** ("+times(v.Ratio)+")")
			}
		}
		row(b, cells...)
	}
	fmt.Fprintf(b, "\n%d of %d verdicts met.\n", met, all)
}

// num formats a figure with fewer decimals the larger it is, and a whole
// number without any; "–" when the cell has no successful repetition.
func num(x float64, n int) string {
	switch {
	case n == 0 || math.IsNaN(x):
		return "–"
	case math.Abs(x) >= 100 || x == math.Trunc(x):
		return fmt.Sprintf("%.0f", x)
	case math.Abs(x) >= 10:
		return fmt.Sprintf("%.1f", x)
	}
	return fmt.Sprintf("%.2f", x)
}

// times formats a ratio.
func times(x float64) string {
	if math.Abs(x) >= 10 {
		return fmt.Sprintf("%.1f×", x)
	}
	return fmt.Sprintf("%.2f×", x)
}

// describeMachine reads the CPU model from /proc/cpuinfo where there is
// one.
func describeMachine() machineInfo {
	m := machineInfo{CPU: "unknown", Cores: runtime.NumCPU(), Go: runtime.Version(), OS: runtime.GOOS + "/" + runtime.GOARCH}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	return m
}

// commandLine is the command as typed from the bench directory, without
// -out, whose directory says nothing about the measurement.
func commandLine(args []string) string {
	out := []string{"go", "run", "./cmd/host"}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-out" || a == "--out":
			i++
		case strings.HasPrefix(a, "-out=") || strings.HasPrefix(a, "--out="):
		default:
			out = append(out, a)
		}
	}
	return strings.Join(out, " ")
}

// brief is the progress line of a finished cell.
func (h hostResult) brief() string {
	if h.Error != "" {
		return "FAILED: " + firstLine(h.Error)
	}
	return fmt.Sprintf("p99 %s µs  p99.9 %s µs  CPU %s%%  %s ctxsw/s  %s pkts/s  %s %s/s",
		num(h.LateP99, 1), num(h.LateP999, 1), num(h.CPUPct, 1), num(h.CtxSwPerS, 1),
		num(h.PacketsPerS, 1), num(h.WorkPerS, 1), h.Unit)
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}
