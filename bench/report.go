package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
)

// machine describes where the benchmark ran.
type machine struct {
	CPU        string `json:"cpu"`
	Cores      int    `json:"cores"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	Go         string `json:"go"`
	OS         string `json:"os"`
}

// report is everything a run produced; it is written as results.json and
// rendered as results.md and the chart.
type report struct {
	Command string      `json:"command"`
	Date    string      `json:"date"`
	Machine machine     `json:"machine"`
	Config  config      `json:"config"`
	Count   int         `json:"count"`
	Quick   bool        `json:"quick"`
	Runs    []runResult `json:"runs"`
	// Summary maps workload, then implementation, then metric to the
	// median and range over the repetitions that succeeded.
	Summary map[string]map[string]map[string]summary `json:"summary"`
	Targets []targetCheck                            `json:"targets"`
}

// loadReport reads a results.json written by an earlier run.
func loadReport(path string) (*report, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &r, nil
}

// summarizeRuns fills r.Summary from r.Runs.
func (r *report) summarizeRuns() {
	vals := map[string]map[string]map[string][]float64{}
	for _, run := range r.Runs {
		if run.Error != "" || run.Skipped != "" {
			continue
		}
		if vals[run.Workload] == nil {
			vals[run.Workload] = map[string]map[string][]float64{}
		}
		if vals[run.Workload][run.Impl] == nil {
			vals[run.Workload][run.Impl] = map[string][]float64{}
		}
		for k, v := range run.Metrics {
			vals[run.Workload][run.Impl][k] = append(vals[run.Workload][run.Impl][k], v)
		}
	}
	r.Summary = map[string]map[string]map[string]summary{}
	for wl, byImpl := range vals {
		r.Summary[wl] = map[string]map[string]summary{}
		for im, byMetric := range byImpl {
			r.Summary[wl][im] = map[string]summary{}
			for k, xs := range byMetric {
				r.Summary[wl][im][k] = summarize(xs)
			}
		}
	}
}

// get returns the summary of a metric, and whether it was measured.
func (r *report) get(wl, im, key string) (summary, bool) {
	s, ok := r.Summary[wl][im][key]
	return s, ok && s.N > 0
}

// loadRange returns the lowest and highest load average seen as children
// started.
func (r *report) loadRange() (lo, hi float64, ok bool) {
	for _, run := range r.Runs {
		if run.Load1 == 0 {
			continue
		}
		if !ok || run.Load1 < lo {
			lo = run.Load1
		}
		if !ok || run.Load1 > hi {
			hi = run.Load1
		}
		ok = true
	}
	return lo, hi, ok
}

// ownImpls are the implementations whose failures fail the whole run (and
// so CI); failures of peer libraries are findings, reported in the tables.
var ownImpls = map[string]bool{"lazycancel": true, "eagercancel": true}

// ownFailures lists runs of go-schedule that errored, lost or duplicated a
// job, or ran one early.
func (r *report) ownFailures() []string {
	var out []string
	for _, run := range r.Runs {
		if !ownImpls[run.Impl] {
			continue
		}
		what := ""
		switch {
		case run.Error != "":
			what = firstLine(run.Error)
		case run.Metrics["failures"] > 0, run.Metrics["lost"] > 0, run.Metrics["duplicates"] > 0, run.Metrics["early"] > 0:
			what = fmt.Sprintf("lost %.0f, duplicates %.0f, early %.0f", run.Metrics["lost"], run.Metrics["duplicates"], run.Metrics["early"])
		default:
			continue
		}
		out = append(out, fmt.Sprintf("%s/%s run %d: %s", run.Workload, run.Impl, run.Run, what))
	}
	return out
}

// role says whose an implementation is: go-schedule's own, the Go
// runtime's (the baseline), or a peer's.
func role(impl string) string {
	switch {
	case ownImpls[impl]:
		return "go-schedule"
	case impl == "runtime":
		return "the baseline"
	default:
		return "a peer"
	}
}

// failedRunsText names every run that ended in an error, with its
// implementation and whose that is, after a line that says whether
// go-schedule's own runs were among them. It is empty when none failed.
func (r *report) failedRunsText() string {
	var lines []string
	own := 0
	for _, run := range r.Runs {
		if run.Error == "" {
			continue
		}
		if ownImpls[run.Impl] {
			own++
		}
		lines = append(lines, fmt.Sprintf("  %s/%s run %d (%s): %s", run.Workload, run.Impl, run.Run, role(run.Impl), firstLine(run.Error)))
	}
	if len(lines) == 0 {
		return ""
	}
	head := fmt.Sprintf("%d runs failed", len(lines))
	if len(lines) == 1 {
		head = "1 run failed"
	}
	switch own {
	case 0:
		head += ", none of them go-schedule's"
	case len(lines):
		head += ", all of them go-schedule's"
	default:
		head += fmt.Sprintf(", %d of them go-schedule's", own)
	}
	return head + " (results.md has each one's output):\n" + strings.Join(lines, "\n") + "\n"
}

// write produces results.json, results.md and the chart in dir.
func (r *report) write(dir string) error {
	r.summarizeRuns()
	r.Targets = r.checkTargets()
	var js strings.Builder
	enc := json.NewEncoder(&js)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "results.json"), []byte(js.String()), 0o644); err != nil {
		return err
	}
	for _, name := range []string{chartFile, chartPNG} {
		if err := writeChart(r, filepath.Join(dir, name)); err != nil {
			return fmt.Errorf("chart: %w", err)
		}
	}
	return os.WriteFile(filepath.Join(dir, "results.md"), []byte(r.markdown()), 0o644)
}

// The chart is written next to the tables as SVG (linked from results.md)
// and as PNG.
const (
	chartFile = "heartbeat.svg"
	chartPNG  = "heartbeat.png"
)

// markdown renders the report's tables.
func (r *report) markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# go-schedule comparative benchmark\n\n")
	b.WriteString(r.header())
	b.WriteString("\n## Implementations\n\n")
	b.WriteString(r.implTable())
	b.WriteString("\n## Headline\n\n")
	b.WriteString(r.headline())
	b.WriteString("\n![ns/heartbeat and bytes/device](" + chartFile + ")\n\n")
	b.WriteString("## go-schedule targets\n\n")
	b.WriteString(r.targetsTable())

	keyedDone := false
	for _, w := range workloads {
		if _, ran := r.Summary[w.Name]; !ran && !r.hasRuns(w.Name) {
			continue
		}
		if slices.Contains(keyedWorkloads, w.Name) {
			// Both key types share one table.
			if !keyedDone {
				keyedDone = true
				fmt.Fprintf(&b, "\n## Keyed heartbeat (`%s`)\n\n%s\n\n", strings.Join(keyedWorkloads, "`, `"), w.What)
				b.WriteString(r.keyedTable())
			}
			continue
		}
		fmt.Fprintf(&b, "\n## %s (`%s`)\n\n%s\n\n", w.Title, w.Name, w.What)
		b.WriteString(r.table(w))
	}
	return b.String()
}

// keyedTable renders the keyed workloads: a row per implementation and
// key type, for the implementations in the keyed comparison. Ratios are
// to the mutex+map+Timer.Reset baseline with the same key type.
func (r *report) keyedTable() string {
	var b strings.Builder
	var cols []column
	if w, ok := findWorkload(keyedWorkloads[0]); ok {
		cols = w.Columns
	}
	b.WriteString("| implementation | tick | keys | Beat call |")
	for _, col := range cols {
		b.WriteString(" " + col.Label + " |")
	}
	b.WriteString(" notes |\n|---|---|---|---|")
	for range cols {
		b.WriteString("--:|")
	}
	b.WriteString("---|\n")
	for _, name := range implNames() {
		call, ok := keyedCalls[name]
		if !ok {
			continue
		}
		im := registry[name]
		for _, wl := range keyedWorkloads {
			runs := r.runsOf(wl, name)
			if len(runs) == 0 {
				continue
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s |", im.Label, tickText(im.Tick), strings.TrimPrefix(wl, "keyed-"), call)
			for _, col := range cols {
				b.WriteString(" " + r.cell(wl, name, col) + " |")
			}
			fmt.Fprintf(&b, " %s |\n", strings.ReplaceAll(strings.Join(runNotes(runs), "; "), "|", "/"))
		}
	}
	return b.String()
}

// header describes the run: command, machine, sizes and how to read the
// cells, and warns when the figures are only indicative.
func (r *report) header() string {
	var b strings.Builder
	if r.indicative() {
		fmt.Fprintf(&b, "**Indicative only**: %s.\n\n", r.indicativeWhy())
	}
	fmt.Fprintf(&b, "- Command: `%s` (from `bench/`)\n", r.Command)
	fmt.Fprintf(&b, "- Date: %s\n", r.Date)
	fmt.Fprintf(&b, "- Machine: %s, %d cores, GOMAXPROCS %d, %s, %s\n", r.Machine.CPU, r.Machine.Cores, r.Machine.GOMAXPROCS, r.Machine.Go, r.Machine.OS)
	if lo, hi, ok := r.loadRange(); ok {
		fmt.Fprintf(&b, "- 1-minute load average when children started: %.1f to %.1f", lo, hi)
		if hi > float64(r.Machine.Cores) {
			b.WriteString(" (more than the cores: other work was running on the machine)")
		}
		b.WriteString("\n")
	}
	c := r.Config
	fmt.Fprintf(&b, "- Sizes: add %d; heartbeat %d devices, %d heartbeats; fire %d over %v (dense: over %v); burst %d at one instant; parallel %d; idle %d for %v; correctness %d devices for %v; pool size %d\n",
		c.AddN, c.Devices, c.Heartbeats, c.FireN, c.FireWindow, c.FireDense, c.BurstN, c.ParallelN, c.IdleN, c.Idle, c.CorrectDevices, c.CorrectFor, c.Workers)
	if c.SpikeN > 0 {
		fmt.Fprintf(&b, "- Spike: %d timers\n", c.SpikeN)
	}
	if c.KeyedKeys > 0 {
		fmt.Fprintf(&b, "- Keyed heartbeat: %d watched keys, %d Beats, exactness with %d silent and %d beating keys at a %v timeout (at least two ticks of a wheel)\n",
			c.KeyedKeys, c.KeyedBeats, c.KeyedKeys/keyedShare, c.KeyedKeys/keyedShare, c.KeyedTimeout)
	}
	fmt.Fprintf(&b, "- Repetitions: %d, each implementation and workload in its own process. Cells show the median, the min–max range when there is more than one repetition, and ×ratio to the Go runtime's figure in the same run (below 1 is better for times, bytes and CPU).\n", r.Count)
	b.WriteString("- Bytes include what the caller holds per timer to cancel or re-arm it (see the handle column below); go-zero keeps its key index inside the library, so its figure already held it.\n")
	b.WriteString("- go-schedule's default strategy (`schedule.New` without options) is lazy cancel, the same settings as `lazycancel.New`, so it has no row of its own.\n")
	b.WriteString("- Wheel ticks (they bound precision): " + tickList() + ".\n")
	return b.String()
}

// implTable lists the implementations that ran, with the calls used and
// the handle a caller keeps per timer.
func (r *report) implTable() string {
	var b strings.Builder
	b.WriteString("| name | implementation | tick | re-arm call | cancel+add | caller's handle per timer |\n|---|---|---|---|---|---|\n")
	for _, name := range implNames() {
		if !r.hasImpl(name) {
			continue
		}
		im := registry[name]
		reset := im.ResetCall
		if reset == "" {
			reset = "none"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", name, im.Label, tickText(im.Tick), reset, im.CancelAdd, im.Handle)
	}
	return b.String()
}

// console is what a run prints on stdout at its end, to be read in one
// look: where it ran, a short table of the figures users compare first,
// the targets it missed, where the full tables are, and a last line with
// the verdict. dir holds the full report.
func (r *report) console(dir string) string {
	var b strings.Builder
	b.WriteString("go-schedule comparative benchmark")
	if r.indicative() {
		b.WriteString(" (indicative: " + r.shortWhy() + ")")
	}
	b.WriteString("\n")
	fmt.Fprintf(&b, "machine: %s, %d cores, GOMAXPROCS %d, %s %s", r.Machine.CPU, r.Machine.Cores, r.Machine.GOMAXPROCS, r.Machine.Go, r.Machine.OS)
	if lo, hi, ok := r.loadRange(); ok {
		fmt.Fprintf(&b, ", load %.1f–%.1f", lo, hi)
	}
	fmt.Fprintf(&b, "\ncommand: %s (in bench/), %s\n\n", r.Command, r.Date)
	b.WriteString(r.shortHeadline())
	b.WriteString("\nmedians; (×n) is the ratio to the Go runtime's median in this run, below 1 is better.\n")

	var missed []targetCheck
	for _, t := range r.Targets {
		if strings.HasPrefix(t.Verdict, "MISSED") {
			missed = append(missed, t)
		}
	}
	if len(missed) > 0 {
		b.WriteString("\ntargets missed:\n")
		for _, t := range missed {
			fmt.Fprintf(&b, "  %-12s %s: %s\n", t.Impl, t.Target, t.Value)
		}
	}
	fmt.Fprintf(&b, "\nevery table, the %d targets and the chart: %s\n", len(r.Targets), filepath.Join(dir, "results.md"))
	b.WriteString(r.verdictLine() + "\n")
	return b.String()
}

// shortHeadline is the console's table: one row per implementation, the
// five figures users compare first and the exactly-once checks, aligned
// for a terminal.
func (r *report) shortHeadline() string {
	cols := []struct{ label, wl, key, fmt string }{
		{"Reset ns", "heartbeat-reset", "ns_hb", "%.0f"},
		{"add ns", "add", "ns_add", "%.0f"},
		{"add+cancel ns", "add", "ns_pair", "%.0f"},
		{"bytes/timer", "add", "bytes_task", "%.0f"},
		{"fire p99 ms", "fire", "late_p99_ms", "%.2f"},
	}
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "implementation")
	for _, c := range cols {
		fmt.Fprint(tw, "\t"+c.label)
	}
	fmt.Fprint(tw, "\texactly-once\n")
	for _, name := range implNames() {
		if !r.hasImpl(name) {
			continue
		}
		fmt.Fprint(tw, name)
		for _, c := range cols {
			fmt.Fprint(tw, "\t"+r.shortCell(c.wl, name, c.key, c.fmt))
		}
		fmt.Fprintf(tw, "\t%s\n", r.correctVerdict(name))
	}
	tw.Flush()
	return b.String()
}

// shortCell is one figure of the console's table: the median and its
// ratio to the runtime's; "early" for a lateness below zero (a wheel that
// fired before the deadline), and why there is no figure otherwise.
func (r *report) shortCell(wl, im, key, format string) string {
	s, ok := r.get(wl, im, key)
	if !ok {
		if st := r.status(wl, im); st != "" && st != "not run" {
			return st
		}
		return "–"
	}
	if s.Median < 0 {
		return "early"
	}
	txt := fmt.Sprintf(format, s.Median)
	if ratio, ok := r.ratio(wl, im, key); ok && im != baselineImpl {
		txt += fmt.Sprintf(" (×%.2f)", ratio)
	}
	return txt
}

func tickList() string {
	var parts []string
	for _, n := range implNames() {
		im := registry[n]
		if im.Tick > 0 {
			parts = append(parts, fmt.Sprintf("%s %v", im.Label, im.Tick))
		}
	}
	return strings.Join(parts, ", ")
}

func (r *report) hasRuns(wl string) bool {
	for _, run := range r.Runs {
		if run.Workload == wl {
			return true
		}
	}
	return false
}

// table renders one workload: a row per implementation.
func (r *report) table(w workload) string {
	var b strings.Builder
	b.WriteString("| implementation | tick | call |")
	for _, col := range w.Columns {
		b.WriteString(" " + col.Label + " |")
	}
	b.WriteString(" notes |\n|---|---|---|")
	for range w.Columns {
		b.WriteString("--:|")
	}
	b.WriteString("---|\n")
	for _, name := range implNames() {
		im := registry[name]
		runs := r.runsOf(w.Name, name)
		if len(runs) == 0 {
			continue
		}
		call := im.CancelAdd
		if usesReset(w.Name) {
			call = im.ResetCall
		}
		if call == "" {
			call = "–"
		}
		fmt.Fprintf(&b, "| %s | %s | %s |", im.Label, tickText(im.Tick), call)
		for _, col := range w.Columns {
			b.WriteString(" " + r.cell(w.Name, name, col) + " |")
		}
		fmt.Fprintf(&b, " %s |\n", strings.ReplaceAll(strings.Join(runNotes(runs), "; "), "|", "/"))
	}
	return b.String()
}

// runNotes collects the notes of an implementation's runs of a workload:
// why it was skipped, how a run failed, and what each run noted.
func runNotes(runs []runResult) []string {
	var notes []string
	for _, run := range runs {
		switch {
		case run.Skipped != "":
			notes = append(notes, "skipped: "+run.Skipped)
		case run.Error != "":
			notes = append(notes, fmt.Sprintf("run %d FAILED: %s", run.Run, firstLine(run.Error)))
		default:
			for _, n := range run.Notes {
				notes = append(notes, fmt.Sprintf("run %d: %s", run.Run, n))
			}
		}
	}
	return dedupe(notes)
}

func (r *report) runsOf(wl, im string) []runResult {
	var out []runResult
	for _, run := range r.Runs {
		if run.Workload == wl && run.Impl == im {
			out = append(out, run)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Run < out[j].Run })
	return out
}

// usesReset reports whether a workload re-arms with the native call.
func usesReset(wl string) bool {
	return strings.HasSuffix(wl, "-reset") || wl == "heartbeat-mixed" || wl == "heartbeat-earlier"
}

// cell renders one figure: median, range and ratio to the runtime.
func (r *report) cell(wl, im string, col column) string {
	s, ok := r.get(wl, im, col.Key)
	if !ok {
		return "–"
	}
	txt := fmt.Sprintf(col.Fmt, s.Median)
	if s.N > 1 && s.Min != s.Max {
		txt += fmt.Sprintf(" (%s–%s)", fmt.Sprintf(col.Fmt, s.Min), fmt.Sprintf(col.Fmt, s.Max))
	}
	if col.Ratio {
		if ratio, ok := r.ratio(wl, im, col.Key); ok {
			txt += fmt.Sprintf(" ×%.2f", ratio)
		}
	}
	return txt
}

// ratio is the median of im over the median of the runtime, same workload
// and metric.
func (r *report) ratio(wl, im, key string) (float64, bool) {
	s, ok := r.get(wl, im, key)
	base, bok := r.get(wl, baselineImpl, key)
	// A ratio of a negative figure (a wheel that fired before the
	// deadline) means nothing.
	if !ok || !bok || base.Median <= 0 || s.Median < 0 || math.IsNaN(base.Median) {
		return 0, false
	}
	return s.Median / base.Median, true
}

// headline is the one-table summary: the figures users compare first.
func (r *report) headline() string {
	type hcol struct {
		label, wl, key, fmt string
		ratio               bool
	}
	cols := []hcol{
		{"heartbeat ns (native re-arm)", "heartbeat-reset", "ns_hb", "%.0f", true},
		{"allocs", "heartbeat-reset", "allocs_hb", "%.2f", false},
		{"heartbeat ns (mixed timeouts)", "heartbeat-mixed", "ns_hb", "%.0f", true},
		{"heartbeat ns (cancel+add)", "heartbeat-canceladd", "ns_hb", "%.0f", true},
		{"bytes/device (cancel+add, incl. handles)", "heartbeat-canceladd", "bytes_device", "%.0f", true},
		{"ns/add", "add", "ns_add", "%.0f", true},
		{"ns/add parallel", "parallel", "ns_add", "%.0f", true},
		{"ns/(add+cancel)", "add", "ns_pair", "%.0f", true},
		{"bytes/pending (incl. handles)", "add", "bytes_task", "%.0f", true},
		{"fire p99 ms", "fire", "late_p99_ms", "%.2f", true},
		{"fire CPU ns/job", "fire", "cpu_ns_job", "%.0f", true},
		{"burst first job ms", "burst", "first_late_ms", "%.2f", true},
		{"burst drain ms", "burst", "drain_ms", "%.0f", true},
		{"idle CPU s", "idle", "cpu_s", "%.3f", false},
	}
	var b strings.Builder
	b.WriteString("| implementation | tick |")
	for _, c := range cols {
		b.WriteString(" " + c.label + " |")
	}
	b.WriteString(" exactly-once |\n|---|---|")
	for range cols {
		b.WriteString("--:|")
	}
	b.WriteString("---|\n")
	for _, name := range implNames() {
		im := registry[name]
		if !r.hasImpl(name) {
			continue
		}
		fmt.Fprintf(&b, "| %s | %s |", im.Label, tickText(im.Tick))
		for _, c := range cols {
			s, ok := r.get(c.wl, name, c.key)
			if !ok {
				st := r.status(c.wl, name)
				if st == "" || st == "not run" {
					st = "–"
				}
				b.WriteString(" " + st + " |")
				continue
			}
			txt := fmt.Sprintf(c.fmt, s.Median)
			if ratio, rok := r.ratio(c.wl, name, c.key); c.ratio && rok {
				txt += fmt.Sprintf(" ×%.2f", ratio)
			}
			b.WriteString(" " + txt + " |")
		}
		fmt.Fprintf(&b, " %s |\n", r.correctVerdict(name))
	}
	return b.String()
}

// status explains why a workload has no figure for an implementation: "n/a"
// when the library cannot run it (skipped), "deadlocked" when a run was
// stopped by the watchdog, "failed" for any other failed run, "not run"
// when it was not selected, and "" when there is a figure.
func (r *report) status(wl, im string) string {
	if _, ok := r.Summary[wl][im]; ok {
		return ""
	}
	runs := r.runsOf(wl, im)
	if len(runs) == 0 {
		return "not run"
	}
	for _, run := range runs {
		if run.Error != "" && strings.HasPrefix(run.Error, "stuck") {
			return "deadlocked"
		}
	}
	for _, run := range runs {
		if run.Error != "" {
			return "failed"
		}
	}
	if runs[0].Skipped != "" {
		return "n/a"
	}
	return "–"
}

func (r *report) hasImpl(name string) bool {
	for _, run := range r.Runs {
		if run.Impl == name {
			return true
		}
	}
	return false
}

// correctVerdict summarises both correctness workloads for one
// implementation.
func (r *report) correctVerdict(im string) string {
	var parts []string
	for _, wl := range []string{"correct-reset", "correct-canceladd"} {
		mode := strings.TrimPrefix(wl, "correct-")
		runs := r.runsOf(wl, im)
		if len(runs) == 0 {
			continue
		}
		verdict := "pass"
		for _, run := range runs {
			switch {
			case run.Skipped != "":
				verdict = "n/a"
			case run.Error != "":
				verdict = "error"
			case run.Metrics["failures"] > 0:
				verdict = fmt.Sprintf("FAIL (%.0f lost, %.0f dup, %.0f early)", run.Metrics["lost"], run.Metrics["duplicates"], run.Metrics["early"])
			}
			if verdict != "pass" {
				break
			}
		}
		parts = append(parts, mode+": "+verdict)
	}
	return strings.Join(parts, "; ")
}

func dedupe(xs []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range xs {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}
