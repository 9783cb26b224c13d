package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/go-schedule/schedule/bench/loadtest"
)

// report is a run's results, for the table and the verdict.
type report struct {
	cfg     config
	dir     string
	results []*result
}

// jobs returns go-schedule's result and asynq's, either nil if the run
// did not measure it.
func (r *report) sides() (jobs, peer *result) {
	for _, res := range r.results {
		switch {
		case res.Skipped != "":
		case res.System == sysJobs:
			jobs = res
		case res.System == sysAsynq:
			peer = res
		}
	}
	return jobs, peer
}

// write writes the table to stdout and to the run's directory, the raw
// results as JSON beside it, and the verdict to stderr; it returns the exit
// status.
func (r *report) write(stdout, stderr io.Writer) int {
	var b strings.Builder
	r.table(&b)
	checks := r.checks()
	for _, ch := range checks {
		note := ""
		if ch.timing && r.cfg.CountsOnly {
			note = "  (timing: not judged with -judge counts)"
		}
		fmt.Fprintf(&b, "target  %-58s %s%s\n", ch.Name, ch.Cell(), note)
	}
	fmt.Fprintf(&b, "raw outputs and this report: %s\n", r.dir)
	_, _ = io.WriteString(stdout, b.String())
	_ = os.WriteFile(filepath.Join(r.dir, "report.txt"), []byte(b.String()), 0o644)
	if js, err := json.MarshalIndent(r.results, "", "  "); err == nil {
		_ = os.WriteFile(filepath.Join(r.dir, "results.json"), append(js, '\n'), 0o644)
	}
	var failed []string
	for _, ch := range checks {
		if !ch.OK && (!ch.timing || !r.cfg.CountsOnly) {
			failed = append(failed, ch.Name+" ("+ch.Value+")")
		}
	}
	if len(failed) > 0 {
		fmt.Fprintf(stderr, "jobload: FAIL: %s\n", strings.Join(failed, "; "))
		return loadtest.ExitFail
	}
	if jobs, _ := r.sides(); jobs == nil {
		fmt.Fprintln(stderr, "jobload: FAIL: nothing of go-schedule's was measured")
		return loadtest.ExitFail
	}
	if len(checks) == 0 {
		fmt.Fprintln(stderr, "jobload: PASS: no target applies to the phases run (the ceiling is reported, not judged)")
		return loadtest.ExitPass
	}
	fmt.Fprintf(stderr, "jobload: PASS: %d targets met\n", len(checks))
	return loadtest.ExitPass
}

// target is a target of the issue, met or not. A timing target is a
// figure of time, CPU or memory, which a loaded machine moves; the others
// are counts that must hold on any machine.
type target struct {
	loadtest.Check
	timing bool
}

// checks returns the targets that the run measured, each met or not.
func (r *report) checks() []target {
	c := r.cfg
	jobs, peer := r.sides()
	if jobs == nil {
		return nil
	}
	var out []target
	timing := func(ch loadtest.Check) target { return target{ch, true} }
	count := func(ch loadtest.Check) target { return target{ch, false} }
	if jobs.streamMeasured {
		s := jobs.Stream
		p99, ok := s.p99()
		out = append(out,
			timing(loadtest.Check{Name: fmt.Sprintf("stream at %s/s: lateness p99 ≤ %v", loadtest.Commas(int64(s.Rate)), targetP99),
				Value: loadtest.OrDash(ok, loadtest.FormatLateness(p99)), OK: ok && p99 <= targetP99}),
			count(loadtest.None("stream: jobs not started by the end of the wait", int64(s.Lost))),
			count(loadtest.None("stream: attempts started twice (healthy fleet)", int64(s.Twice))))
		if peer != nil && peer.streamMeasured {
			mine, theirs := s.cpuPerJob(), peer.Stream.cpuPerJob()
			out = append(out, timing(loadtest.Check{Name: "stream: CPU per job ≤ asynq + Redis",
				Value: fmt.Sprintf("%.1f µs vs %.1f µs", mine, theirs), OK: mine <= theirs}))
		}
	}
	if jobs.scaleMeasured {
		if jobs.ScaleN >= memoryJudgedFrom {
			out = append(out, timing(loadtest.Check{Name: fmt.Sprintf("scale: worker memory ≤ %d B per pending job", targetWorkerBytes),
				Value: fmt.Sprintf("%.0f B", jobs.WorkerPerJob), OK: jobs.WorkerPerJob <= targetWorkerBytes}))
		}
		out = append(out, count(loadtest.Check{Name: "quiet: engine messages do not grow with pending jobs",
			Value: fmt.Sprintf("%s → %s msgs", loadtest.Commas(jobs.QuietIn1), loadtest.Commas(jobs.QuietIn2)),
			OK:    quietOK(jobs.QuietIn1, jobs.QuietIn2, jobs.QuietN1, jobs.ScaleN)}))
	}
	if jobs.killMeasured {
		out = append(out, count(loadtest.None("kill: jobs lost", int64(jobs.Kill.Unfinished))),
			timing(loadtest.Check{Name: fmt.Sprintf("kill: recovered jobs started within 2×lease+5s = %v", c.killBound()),
				Value: takeover(jobs), OK: !jobs.KillLate || jobs.KillTakeover <= c.killBound()}))
	}
	return out
}

// takeover formats the kill phase's takeover time.
func takeover(r *result) string {
	if !r.killMeasured {
		return "-"
	}
	if !r.KillLate {
		return "none to recover"
	}
	return r.KillTakeover.Round(10 * time.Millisecond).String()
}

// bytesPerJob formats a size per job.
func bytesPerJob(ok bool, b float64) string {
	return loadtest.OrDash(ok, fmt.Sprintf("%.0f B", b))
}

// table writes the table: a column per system, a row per figure.
func (r *report) table(w io.Writer) {
	c := r.cfg
	fmt.Fprintf(w, "jobload, %s, %s/%s, %d CPUs, Go %s; a shared machine: the figures move with its load\n",
		time.Now().UTC().Format(time.DateOnly), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), strings.TrimPrefix(runtime.Version(), "go"))
	fmt.Fprintf(w, "%d workers a system, a fresh engine and fresh workers each phase, %d-byte payloads; jobworker -lease %v -workers %d\n",
		c.Workers, c.Payload, c.Lease, c.Pool)
	if c.LoadBatch > 0 {
		fmt.Fprintf(w, "jobctl load gets at most %s lines a process (-load-batch)\n", loadtest.Commas(int64(c.LoadBatch)))
	}
	fmt.Fprintf(w, "asynq v0.26.0: %s\n", c.Asynq)
	fmt.Fprintf(w, "CPU: /proc/PID/stat of the workers and the engine (nats-server in a process of its own; redis-server). Messages: NATS in+out msgs; Redis commands processed\n\n")
	for _, res := range r.results {
		if res.Skipped != "" {
			fmt.Fprintf(w, "%s: skipped: %s\n\n", res.System, res.Skipped)
		}
	}
	var cols []*result
	for _, res := range r.results {
		if res.Skipped == "" {
			cols = append(cols, res)
		}
	}
	t := loadtest.NewTable(w, 0, cols, func(r *result) string { return r.System })
	if c.has(phaseScale) {
		t.Row("scale: jobs pending (due in 2 h)", func(r *result) string { return loadtest.OrDash(r.scaleMeasured, loadtest.Commas(int64(r.ScaleN))) })
		t.Row("scale: add rate from one producer", func(r *result) string {
			return loadtest.OrDash(r.scaleMeasured, loadtest.Commas(int64(r.AddRate))+" jobs/s")
		})
		t.Row("scale: worker memory (RSS) per pending job", func(r *result) string { return bytesPerJob(r.scaleMeasured, r.WorkerPerJob) })
		t.Row("scale: engine store per pending job", func(r *result) string { return bytesPerJob(r.scaleMeasured, r.StorePerJob) })
		t.Row("scale: engine RSS per pending job", func(r *result) string { return bytesPerJob(r.scaleMeasured, r.EngineRSSJob) })
		t.Row(fmt.Sprintf("quiet: engine msgs in %v, 1/10 / all pending", c.Quiet), func(r *result) string {
			return loadtest.OrDash(r.scaleMeasured, loadtest.Commas(r.QuietIn1)+" / "+loadtest.Commas(r.QuietIn2))
		})
		t.Row("quiet: engine msgs per pending job", func(r *result) string {
			return loadtest.OrDash(r.scaleMeasured, fmt.Sprintf("%.4f", r.QuietPerJob))
		})
	}
	if c.has(phaseStream) {
		t.Row(fmt.Sprintf("stream: %s/s for %v, started / due (wait %v)", loadtest.Commas(int64(c.Rate)), c.Stream, streamWait(c.Stream)), func(r *result) string {
			return loadtest.OrDash(r.streamMeasured, loadtest.Commas(int64(r.Stream.Started))+" / "+loadtest.Commas(int64(r.Stream.Expected)))
		})
		t.Quantiles("stream: lateness", func(r *result) []int64 { return r.Stream.Lateness })
		t.Row("stream: earliest start (lateness min)", func(r *result) string { return loadtest.FormatQuantile(r.Stream.Lateness, 0) })
		t.Row("stream: started before due", func(r *result) string {
			return loadtest.OrDash(r.streamMeasured, loadtest.Commas(int64(r.Stream.Early)))
		})
		t.Row("stream: CPU per started job, workers + engine", func(r *result) string {
			return loadtest.OrDash(r.streamMeasured, fmt.Sprintf("%.1f µs", r.Stream.cpuPerJob()))
		})
		t.Row("stream: of which the engine's", func(r *result) string {
			return loadtest.OrDash(r.streamMeasured && r.Stream.CPU > 0,
				fmt.Sprintf("%.0f%%", 100*float64(r.Stream.EngineCPU)/float64(max(1, r.Stream.CPU))))
		})
		t.Row("stream: engine msgs per job", func(r *result) string {
			return loadtest.OrDash(r.streamMeasured && r.Stream.Expected > 0, fmt.Sprintf("%.1f", float64(r.Stream.Messages)/float64(max(1, r.Stream.Expected))))
		})
		t.Row("stream: jobs started again / same attempt", func(r *result) string {
			return loadtest.OrDash(r.streamMeasured, loadtest.Commas(int64(r.Stream.Repeated))+" / "+loadtest.Commas(int64(r.Stream.Twice)))
		})
		t.Row(fmt.Sprintf("stream: producer's worst lag (lead %v)", c.Lead), func(r *result) string {
			return loadtest.OrDash(r.streamMeasured, r.Stream.ProducerLag.Round(time.Millisecond).String())
		})
	}
	if c.has(phaseKill) {
		t.Row(fmt.Sprintf("kill: jobs pending / due over %v", c.KillSpan), func(r *result) string {
			return loadtest.OrDash(r.killMeasured, loadtest.Commas(int64(c.KillJobs))+" / "+loadtest.Commas(int64(r.Kill.Expected)))
		})
		t.Row("kill: last recovered job started, after the kill", takeover)
		t.Quantiles("kill: lateness", func(r *result) []int64 { return r.Kill.Lateness })
		t.Row("kill: jobs lost (no done line, not ended in the engine)", func(r *result) string {
			return loadtest.OrDash(r.killMeasured, loadtest.Commas(int64(r.Kill.Unfinished)))
		})
		t.Row("kill: ended in the engine, end line lost in the kill", func(r *result) string {
			return loadtest.OrDash(r.killMeasured && r.killAsked, loadtest.Commas(int64(r.Kill.EndedUnseen)))
		})
		t.Row("kill: jobs started again / same attempt", func(r *result) string {
			return loadtest.OrDash(r.killMeasured, loadtest.Commas(int64(r.Kill.Repeated))+" / "+loadtest.Commas(int64(r.Kill.Twice)))
		})
	}
	if c.has(phaseCeiling) {
		t.Row(fmt.Sprintf("ceiling: p99 at each rate (%v steps)", c.Step), func(r *result) string {
			var s []string
			for _, st := range r.Steps {
				p, ok := st.p99()
				mark := ""
				if !st.sustained(ceilingP99) {
					mark = " ✗"
				}
				s = append(s, fmt.Sprintf("%s: %s%s", loadtest.Commas(int64(st.Rate)), loadtest.OrDash(ok, loadtest.FormatLateness(p)), mark))
			}
			return loadtest.OrDash(r.ceilDone, strings.Join(s, ", "))
		})
		// The CPU per job falls as the rate rises: messages due together share
		// system calls and wake-ups. This row shows by how much, per system.
		t.Row("ceiling: CPU per job at each rate, workers + engine", func(r *result) string {
			var s []string
			for _, st := range r.Steps {
				s = append(s, fmt.Sprintf("%s: %.0f µs", loadtest.Commas(int64(st.Rate)), st.cpuPerJob()))
			}
			return loadtest.OrDash(r.ceilDone, strings.Join(s, ", "))
		})
		t.Row(fmt.Sprintf("ceiling: highest rate with p99 ≤ %v", ceilingP99), func(r *result) string {
			if !r.ceilDone {
				return "-"
			}
			if r.Ceiling == 0 {
				return "below " + loadtest.Commas(int64(c.Ceiling[0])) + "/s"
			}
			if r.Ceiling == c.Ceiling[len(c.Ceiling)-1] {
				return "≥ " + loadtest.Commas(int64(r.Ceiling)) + "/s"
			}
			return loadtest.Commas(int64(r.Ceiling)) + "/s"
		})
	}
	_ = t.Flush()
	fmt.Fprintln(w)
}
