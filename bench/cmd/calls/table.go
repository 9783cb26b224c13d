package main

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// strategies are go-schedule's two cancel strategies as the root module's
// benchmarks name their sub-benchmarks; runtimeName names the Go runtime's
// sub-benchmark beside them.
var strategies = []string{"lazy", "eager"}

const runtimeName = "runtime"

// A limit is a target on one strategy's figure. Ratio limits bound the
// median ratio to the runtime's figure; absolute limits bound the median
// figure itself.
type limit struct {
	strategy string // "" for both strategies
	max      float64
	ratio    bool
	text     string
}

// A row is one line of the calls table: a benchmark (matched by a pattern
// on its name without the strategy, so that a renamed benchmark is
// reported as not measured rather than failing the command), the unit read
// from its line, and the targets it is judged against.
type row struct {
	label  string
	bench  *regexp.Regexp
	unit   string
	noRT   bool // the benchmark has no runtime sub-benchmark: print medians, not ratios
	limits []limit
}

// rows are the calls table. The targets are go-schedule's (docs/benchmarks.md
// lists them with the comparative benchmark's).
var rows = []row{
	{label: "`Reset` (the heartbeat) against `Timer.Reset`", bench: regexp.MustCompile(`^Reset/pending=1M$`), unit: "ns/op",
		limits: []limit{{max: 1, ratio: true, text: "Reset ≤ Timer.Reset"}}},
	{label: "`ScheduleOne` against `AfterFunc`", bench: regexp.MustCompile(`^ScheduleOne/pending=1M$`), unit: "ns/op",
		limits: []limit{{max: 1, ratio: true, text: "ScheduleOne ≤ AfterFunc"}}},
	{label: "`ScheduleOne` + `CancelTask` against `AfterFunc` + `Stop`", bench: regexp.MustCompile(`^ScheduleOneCancelTask/pending=1M$`), unit: "ns/op",
		limits: []limit{{max: 1, ratio: true, text: "ScheduleOne+CancelTask ≤ AfterFunc+Stop"}}},
	{label: "`CancelTask` against `Timer.Stop`", bench: regexp.MustCompile(`^CancelTask/pending=1M$`), unit: "ns/op"},
	{label: "firing 1,000 due at once, per job, against `AfterFunc(0)`", bench: regexp.MustCompile(`^Fire$`), unit: "ns/task"},
	{label: "100,000 deadlines a second, CPU per job, against `AfterFunc`", bench: regexp.MustCompile(`^FireSparse$`), unit: "cpu-ns/job",
		limits: []limit{{max: 1, ratio: true, text: "CPU per fired job ≤ AfterFunc's"}}},
	{label: "100,000 deadlines a second, p99 start lateness, against `AfterFunc`", bench: regexp.MustCompile(`^FireSparse$`), unit: "late-p99-µs",
		limits: []limit{{max: 1.25, ratio: true, text: "p99 lateness ≤ 1.25× AfterFunc's"}}},
	{label: "bytes per pending task against an `AfterFunc` timer, the caller's handle included", bench: regexp.MustCompile(`^MemoryPerTask$`), unit: "B/task",
		limits: []limit{{strategy: "eager", max: 80, text: "≤ 80 bytes per pending task"}}},
	{label: "heap entries per live task after mixed-timeout re-arming (no runtime row: medians)", bench: regexp.MustCompile(`^MemoryAfterHeartbeats$`), unit: "entries/live", noRT: true,
		limits: []limit{{strategy: "lazy", max: 1.25, text: "≤ 1.25 heap entries per live task"}}},
}

// allocRows are the benchmarks whose allocations per operation are judged:
// none per Reset or cancel, at most one per scheduled task.
var allocRows = []struct {
	bench *regexp.Regexp
	max   float64
	text  string
}{
	{regexp.MustCompile(`^Reset/pending=1M$`), 0, "0 allocations per Reset"},
	{regexp.MustCompile(`^ScheduleOne/pending=1M$`), 1, "≤ 1 allocation per ScheduleOne"},
	{regexp.MustCompile(`^ScheduleOneCancelTask/pending=1M$`), 1, "≤ 1 allocation per ScheduleOne+CancelTask"},
	{regexp.MustCompile(`^CancelTask/pending=1M$`), 0, "0 allocations per CancelTask"},
}

// pattern is the -test.bench expression that runs every benchmark the rows
// read, at 1M pending where a benchmark has sizes.
const pattern = `^Benchmark(Reset|ScheduleOne|ScheduleOneCancelTask|CancelTask)$/^pending=1M$|^Benchmark(Fire|FireSparse|MemoryPerTask|MemoryAfterHeartbeats)$`

// results holds every figure read, by benchmark name without the strategy,
// then strategy, then unit: one value per repetition, in order.
type results struct {
	cpu   string
	figs  map[string]map[string]map[string][]float64
	lines int // benchmark lines read
}

var benchLine = regexp.MustCompile(`^Benchmark(\S+?)(-\d+)?\s+\d+\s+(.*)$`)
var figure = regexp.MustCompile(`([-+0-9.eE]+) (\S+)`)

// parse reads `go test -bench` output: any number of runs appended, or one
// run with -count N. The k-th line of a sub-benchmark is its k-th
// repetition, which ran next to the k-th line of the runtime's
// sub-benchmark of the same benchmark.
func parse(r io.Reader, into *results) error {
	if into.figs == nil {
		into.figs = map[string]map[string]map[string][]float64{}
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if cpu, ok := strings.CutPrefix(line, "cpu: "); ok && into.cpu == "" {
			into.cpu = strings.TrimSpace(cpu)
			continue
		}
		m := benchLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		i := strings.LastIndex(m[1], "/")
		if i < 0 {
			continue
		}
		name, impl := m[1][:i], m[1][i+1:]
		if impl != runtimeName && !slices.Contains(strategies, impl) {
			continue
		}
		into.lines++
		if into.figs[name] == nil {
			into.figs[name] = map[string]map[string][]float64{}
		}
		if into.figs[name][impl] == nil {
			into.figs[name][impl] = map[string][]float64{}
		}
		for _, f := range figure.FindAllStringSubmatch(m[3], -1) {
			v, err := strconv.ParseFloat(f[1], 64)
			if err != nil {
				continue
			}
			into.figs[name][impl][f[2]] = append(into.figs[name][impl][f[2]], v)
		}
	}
	return sc.Err()
}

// find returns the name of the benchmark that matches re, if exactly one
// was read.
func (r *results) find(re *regexp.Regexp) (string, bool) {
	var found []string
	for name := range r.figs {
		if re.MatchString(name) {
			found = append(found, name)
		}
	}
	if len(found) != 1 {
		return "", false
	}
	return found[0], true
}

// series is one strategy's figures of a row, or its ratios to the runtime's
// figure of the same repetition.
func (r *results) series(rw row, impl string) ([]float64, bool) {
	name, ok := r.find(rw.bench)
	if !ok {
		return nil, false
	}
	own := r.figs[name][impl][rw.unit]
	if len(own) == 0 {
		return nil, false
	}
	if rw.noRT {
		return own, true
	}
	rt := r.figs[name][runtimeName][rw.unit]
	n := min(len(own), len(rt))
	var out []float64
	for k := range n {
		if rt[k] > 0 {
			out = append(out, own[k]/rt[k])
		}
	}
	return out, len(out) > 0
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// cell renders a median with the range of single repetitions.
func cell(xs []float64) string {
	if len(xs) == 1 {
		return fmt.Sprintf("%.2f", xs[0])
	}
	return fmt.Sprintf("%.2f (%.2f–%.2f)", median(xs), slices.Min(xs), slices.Max(xs))
}

// check is one target's verdict.
type check struct {
	verdict, strategy, text, value string
}

// judge builds the table and the checks of every target.
func (r *results) judge() (table string, checks []check) {
	var b strings.Builder
	b.WriteString("| 1,000,000 pending | lazy | eager |\n|---|--:|--:|\n")
	for _, rw := range rows {
		fmt.Fprintf(&b, "| %s |", rw.label)
		for _, st := range strategies {
			xs, ok := r.series(rw, st)
			if !ok {
				b.WriteString(" not measured |")
			} else {
				fmt.Fprintf(&b, " %s |", cell(xs))
			}
			for _, l := range rw.limits {
				if l.strategy != "" && l.strategy != st {
					continue
				}
				c := check{verdict: "not measured", strategy: st, text: l.text, value: "–"}
				judged, jok := xs, ok
				if !l.ratio {
					// An absolute limit bounds the figure itself.
					judged, jok = r.series(row{bench: rw.bench, unit: rw.unit, noRT: true}, st)
				}
				if jok {
					m := median(judged)
					c.value = fmt.Sprintf("%.3g", m)
					c.verdict = "met"
					if m > l.max {
						c.verdict = "MISSED"
					}
				}
				checks = append(checks, c)
			}
		}
		b.WriteString("\n")
	}
	b.WriteString("| allocations per schedule, cancel, reset or fire (largest of any run) |")
	for _, st := range strategies {
		worst, measured := math.Inf(-1), false
		for _, a := range allocRows {
			xs, ok := r.series(row{bench: a.bench, unit: "allocs/op", noRT: true}, st)
			c := check{verdict: "not measured", strategy: st, text: a.text, value: "–"}
			if ok {
				measured = true
				w := slices.Max(xs)
				worst = max(worst, w)
				c.value = fmt.Sprintf("%g", w)
				c.verdict = "met"
				if w > a.max {
					c.verdict = "MISSED"
				}
			}
			checks = append(checks, c)
		}
		// A fire's allocations are those of a batch of jobs shared out over
		// its jobs: allocs/op over jobs per op (ns/op over ns/task).
		if name, ok := r.find(regexp.MustCompile(`^Fire$`)); ok {
			f := r.figs[name][st]
			for k := range min(len(f["allocs/op"]), len(f["ns/op"]), len(f["ns/task"])) {
				if f["ns/task"][k] > 0 {
					measured = true
					worst = max(worst, f["allocs/op"][k]/(f["ns/op"][k]/f["ns/task"][k]))
				}
			}
		}
		if measured {
			fmt.Fprintf(&b, " %.2g |", worst)
		} else {
			b.WriteString(" not measured |")
		}
	}
	b.WriteString("\n")
	return b.String(), checks
}

// verdict is the last line: targets met, missed and not measured.
func verdict(checks []check) string {
	var met, missed, none int
	for _, c := range checks {
		switch c.verdict {
		case "met":
			met++
		case "MISSED":
			missed++
		default:
			none++
		}
	}
	return fmt.Sprintf("verdict: targets %d met, %d missed, %d not measured", met, missed, none)
}

// repetitions is the number of runtime figures of the row that has the
// most: how many repetitions were read.
func (r *results) repetitions() int {
	n := 0
	for _, byImpl := range r.figs {
		for _, byUnit := range byImpl {
			for _, xs := range byUnit {
				n = max(n, len(xs))
			}
		}
	}
	return n
}
