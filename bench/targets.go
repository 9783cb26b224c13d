package main

import (
	"fmt"
	"strings"
)

// targetCheck is one of go-schedule's performance targets (DESIGN.md and
// the issues that added workloads), judged on the medians of this run.
type targetCheck struct {
	Impl   string `json:"impl"`
	Target string `json:"target"`
	Value  string `json:"value"`
	// Verdict is "met", "MISSED" or "not measured", followed by
	// " (indicative)" when the run had too few repetitions to judge, or
	// starts with leftOut for a memory target set at a size the run did
	// not reach.
	Verdict string `json:"verdict"`
}

// memoryTargetSize is the number of tasks or keys at which the bytes-per-
// task and bytes-per-key targets are set: slab chunks, heap and map
// buckets are shared over what they hold, so fewer tasks cost more bytes
// each, and a smaller run (-quick) cannot miss those targets on its own.
const memoryTargetSize = 1_000_000

// leftOut starts the verdict of a target the run's size cannot judge.
const leftOut = "left out"

// goroutineSlack is the constant allowed above the pool size in the
// firing workloads: the scheduler's owner and dispatcher, the pool's
// background goroutines and the benchmark's own.
const goroutineSlack = 8

// Limits of the firing targets. Jobs start when the owner's Go timer wakes
// it, and a Go timer on Linux wakes up to about a millisecond late on an
// idle machine (golang/go#53824), as the runtime's own timers do: the
// lateness targets allow for that, and the CPU target asks for no more
// than the runtime's.
const (
	fireCPURatio     = 1.0  // CPU per fired job, against time.AfterFunc's
	fireP99Ratio     = 1.25 // p99 lateness, against time.AfterFunc's
	burstFirstMs     = 2.0  // lateness of a burst's first job, ms
	burstDrainRatio  = 0.3  // burst drain, against time.AfterFunc's
	lazyEntriesMax   = 1.25
	resetCPURatio    = 0.7  // CPU per Reset in any direction, against Timer.Reset's
	spikeRetainedPct = 10.0 // memory retained after a spike, % of its peak

	keyedRuntimeRatio = 0.7 // ns per keyed Beat, against mutex+map+Timer.Reset
	keyedGozeroRatio  = 0.5 // ns per keyed Beat, against go-zero's MoveTimer
	keyedBytesMax     = 100 // bytes per watched uint64 key, key index included
)

// keyedGozeroImpls are the go-zero settings a keyed Beat is compared with.
var keyedGozeroImpls = []string{"gozero", "gozero-1s"}

// minJudgedCount is the number of repetitions below which verdicts are
// labelled indicative: one run on a shared machine can move a ratio by
// tens of percent.
const minJudgedCount = 3

// indicative reports whether the run had too few repetitions for its
// verdicts to be more than an indication.
func (r *report) indicative() bool { return r.Count < minJudgedCount }

// checkTargets judges go-schedule's targets for both strategies.
func (r *report) checkTargets() []targetCheck {
	var out []targetCheck
	suffix := ""
	if r.indicative() {
		suffix = " (indicative)"
	}
	slack := r.Config.Workers + goroutineSlack
	for _, im := range []string{"lazycancel", "eagercancel"} {
		if !r.hasImpl(im) {
			continue
		}
		add := func(target string, ok, measured bool, value string) {
			v := "not measured"
			if !measured {
				value = "–"
			} else {
				v = "MISSED"
				if ok {
					v = "met"
				}
				v += suffix
			}
			out = append(out, targetCheck{Impl: im, Target: target, Value: value, Verdict: v})
		}
		ratioCheck := func(target, wl, key string, limit float64) {
			ratio, ok := r.ratio(wl, im, key)
			s, _ := r.get(wl, im, key)
			add(target, ok && ratio <= limit, ok, fmt.Sprintf("%.4g (×%.3f)", s.Median, ratio))
		}
		maxCheck := func(target, wl, key string, limit float64) {
			s, ok := r.get(wl, im, key)
			add(target, ok && s.Median <= limit, ok, fmt.Sprintf("%.4g", s.Median))
		}
		// sizedCheck is maxCheck for a memory target set at
		// memoryTargetSize, which a run at size n below it leaves out.
		sizedCheck := func(target, wl, key string, limit float64, n int) {
			if n >= memoryTargetSize {
				maxCheck(target, wl, key, limit)
				return
			}
			s, ok := r.get(wl, im, key)
			value := "–"
			if ok {
				value = fmt.Sprintf("%.4g", s.Median)
			}
			out = append(out, targetCheck{Impl: im, Target: target, Value: value,
				Verdict: fmt.Sprintf("%s: set at %d, this run held %d", leftOut, memoryTargetSize, n)})
		}

		ratioCheck("Reset ns/heartbeat ≤ Timer.Reset (ratio ≤ 1.0)", "heartbeat-reset", "ns_hb", 1.0)
		maxCheck("Reset allocs/heartbeat = 0", "heartbeat-reset", "allocs_hb", 0.01)
		ratioCheck("Reset with mixed timeouts ns/heartbeat ≤ Timer.Reset", "heartbeat-mixed", "ns_hb", 1.0)
		maxCheck("Reset with mixed timeouts allocs/heartbeat = 0", "heartbeat-mixed", "allocs_hb", 0.01)
		for _, wl := range []string{"heartbeat-reset", "heartbeat-mixed", "heartbeat-earlier"} {
			ratioCheck(fmt.Sprintf("%s: CPU per Reset ≤ %.1f× Timer.Reset's", wl, resetCPURatio), wl, "cpu_ns_hb", resetCPURatio)
		}
		maxCheck("Reset always earlier allocs/heartbeat = 0", "heartbeat-earlier", "allocs_hb", 0.01)
		for _, wl := range []string{"spike-cancel", "spike-fire"} {
			maxCheck(fmt.Sprintf("%s: retained ≤ %.0f%% of the peak after %v idle", wl, spikeRetainedPct, spikeIdle), wl, "retained_pct", spikeRetainedPct)
			maxCheck(wl+": none lost", wl, "lost", 0)
		}
		own, ok := r.get("heartbeat-reset", im, "ns_hb")
		var slower []string
		ahead := ok
		for _, w := range wheelNames() {
			ws, wok := r.get("heartbeat-reset", w, "ns_hb")
			if !wok {
				ws, wok = r.get("heartbeat-canceladd", w, "ns_hb")
			}
			if wok && ws.Median <= own.Median {
				ahead = false
				slower = append(slower, w)
			}
		}
		val := fmt.Sprintf("%.4g ns", own.Median)
		if len(slower) > 0 {
			val += "; not ahead of " + strings.Join(slower, ", ")
		}
		add("Reset ahead of every wheel's heartbeat", ahead, ok, val)
		ratioCheck("ScheduleOne ns ≤ AfterFunc", "add", "ns_add", 1.0)
		ratioCheck("ScheduleOne ns ≤ AfterFunc, 4×GOMAXPROCS goroutines adding", "parallel", "ns_add", 1.0)
		ratioCheck("ScheduleOne+CancelTask ns ≤ AfterFunc+Stop (cancel right after add)", "add", "ns_pair", 1.0)
		ratioCheck("CancelTask+ScheduleOne heartbeat at 1M pending ≤ Stop+AfterFunc", "heartbeat-canceladd", "ns_hb", 1.0)
		maxCheck("≤ 1 allocation per scheduled task", "add", "allocs_add", 1.0)
		maxCheck("≤ 1 allocation per add+cancel (0 per cancel)", "add", "allocs_pair", 1.0)
		if im == "eagercancel" {
			sizedCheck("≤ 80 bytes per pending task, the caller's TaskID included", "add", "bytes_task", 80, r.Config.AddN)
		} else {
			maxCheck(fmt.Sprintf("heap entries ≤ %.2f× live, peak during mixed-timeout cancel+add re-arming", lazyEntriesMax),
				"heartbeat-canceladd", "entries_per_live_peak", lazyEntriesMax)
			maxCheck(fmt.Sprintf("heap entries ≤ %.2f× live, peak during mixed-timeout Reset", lazyEntriesMax),
				"heartbeat-mixed", "entries_per_live_peak", lazyEntriesMax)
			maxCheck(fmt.Sprintf("heap entries ≤ %.2f× live, peak during always-earlier Reset", lazyEntriesMax),
				"heartbeat-earlier", "entries_per_live_peak", lazyEntriesMax)
			// The handles are the same TaskID for both strategies, so the
			// library's own bytes are compared.
			e, eok := r.libBytes("heartbeat-canceladd", "eagercancel")
			s, sok := r.libBytes("heartbeat-canceladd", im)
			if eok {
				add("memory: library bytes/device ≤ 1.25× eager's after cancel+add re-arming (handles, equal for both, left out)",
					sok && s <= 1.25*e, sok, fmt.Sprintf("%.0f vs %.0f (×%.2f)", s, e, s/e))
			}
		}
		for _, wl := range []string{"fire", "fire-dense"} {
			maxCheck(wl+": none lost", wl, "lost", 0)
			ratioCheck(fmt.Sprintf("%s: p99 lateness ≤ %.2f× runtime's", wl, fireP99Ratio), wl, "late_p99_ms", fireP99Ratio)
			ratioCheck(fmt.Sprintf("%s: CPU per fired job ≤ %.1f× time.AfterFunc's", wl, fireCPURatio), wl, "cpu_ns_job", fireCPURatio)
			maxCheck(fmt.Sprintf("%s: extra goroutines ≤ pool size (%d) + %d", wl, r.Config.Workers, goroutineSlack), wl, "extra_goroutines", float64(slack))
		}
		maxCheck("burst: none lost", "burst", "lost", 0)
		maxCheck(fmt.Sprintf("burst: first job ≤ %.0f ms late", burstFirstMs), "burst", "first_late_ms", burstFirstMs)
		ratioCheck(fmt.Sprintf("burst: drain ≤ %.1f× time.AfterFunc's", burstDrainRatio), "burst", "drain_ms", burstDrainRatio)
		maxCheck(fmt.Sprintf("burst: extra goroutines ≤ pool size (%d) + %d", r.Config.Workers, goroutineSlack), "burst", "extra_goroutines", float64(slack))
		maxCheck("idle: CPU ≤ 1% of a core with all deadlines an hour out", "idle", "cpu_pct", 1.0)
		for _, wl := range []string{"correct-reset", "correct-canceladd"} {
			s, ok := r.get(wl, im, "failures")
			worst := s.Max
			add("exactly-once under heartbeats ("+strings.TrimPrefix(wl, "correct-")+")", ok && worst == 0, ok, fmt.Sprintf("%.0f failures (worst run)", worst))
		}
		for _, wl := range keyedWorkloads {
			kt := strings.TrimPrefix(wl, "keyed-")
			maxCheck("keyed ("+kt+" keys): heartbeat.Monitor.Beat on a watched key allocs = 0", wl, "allocs_beat", 0.01)
			ratioCheck(fmt.Sprintf("keyed (%s keys): ns/Beat ≤ %.1f× mutex+map+Timer.Reset", kt, keyedRuntimeRatio), wl, "ns_beat", keyedRuntimeRatio)
			own, ok := r.get(wl, im, "ns_beat")
			worst, peers := 0.0, []string{}
			for _, gz := range keyedGozeroImpls {
				g, gok := r.get(wl, gz, "ns_beat")
				if !gok || g.Median <= 0 {
					continue
				}
				worst = max(worst, own.Median/g.Median)
				peers = append(peers, fmt.Sprintf("×%.3f of %s", own.Median/g.Median, gz))
			}
			measured := ok && len(peers) > 0
			add(fmt.Sprintf("keyed (%s keys): ns/Beat ≤ %.1f× go-zero's MoveTimer (every go-zero tick run)", kt, keyedGozeroRatio),
				measured && worst <= keyedGozeroRatio, measured, fmt.Sprintf("%.4g (%s)", own.Median, strings.Join(peers, ", ")))
			if kt == "uint64" {
				sizedCheck(fmt.Sprintf("keyed (uint64 keys): ≤ %d bytes per watched key, key index included", keyedBytesMax), wl, "bytes_key", keyedBytesMax, r.Config.KeyedKeys)
			}
			s, sok := r.get(wl, im, "failures")
			add("keyed ("+kt+" keys): exact: every silent key expires once, none early, no beating key expires",
				sok && s.Max == 0, sok, fmt.Sprintf("%.0f failures (worst run)", s.Max))
		}
	}
	return out
}

// libBytes is an implementation's median live bytes per device in a
// heartbeat workload without the caller's handles.
func (r *report) libBytes(wl, im string) (float64, bool) {
	s, ok := r.get(wl, im, "bytes_device")
	h, hok := r.get(wl, im, "handle_bytes")
	if !ok || !hok {
		return 0, false
	}
	return s.Median - h.Median, true
}

// targetsTable renders the checks.
func (r *report) targetsTable() string {
	var b strings.Builder
	if r.indicative() {
		fmt.Fprintf(&b, "Verdicts are **indicative**: %s.\n\n", r.indicativeWhy())
	}
	b.WriteString("| strategy | target | this run (median) | verdict |\n|---|---|---|---|\n")
	for _, t := range r.Targets {
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", t.Impl, t.Target, t.Value, t.Verdict)
	}
	return b.String()
}

// indicativeWhy explains why verdicts are only indicative.
func (r *report) indicativeWhy() string {
	return fmt.Sprintf("%s on a machine that may be shared; a ratio can move by tens of percent between runs, so judge the targets on a full run (%d repetitions or more)", r.shortWhy(), minJudgedCount)
}

// verdictLine is the last line a run prints: how many of go-schedule's
// targets it met, missed and could not measure, and whether that is only
// indicative.
func (r *report) verdictLine() string {
	var met, missed, unmeasured, left int
	for _, t := range r.Targets {
		switch {
		case strings.HasPrefix(t.Verdict, "met"):
			met++
		case strings.HasPrefix(t.Verdict, "MISSED"):
			missed++
		case strings.HasPrefix(t.Verdict, leftOut):
			left++
		default:
			unmeasured++
		}
	}
	line := fmt.Sprintf("verdict: go-schedule targets %d met, %d missed, %d not measured", met, missed, unmeasured)
	if left > 0 {
		line += fmt.Sprintf(", %d left out (memory per task or key, set at %d; this run is smaller)", left, memoryTargetSize)
	}
	if r.indicative() {
		line += " (indicative: " + r.shortWhy() + ")"
	}
	return line
}

// shortWhy says in a few words why verdicts are only indicative.
func (r *report) shortWhy() string {
	what := fmt.Sprintf("%d repetition", r.Count)
	if r.Count != 1 {
		what += "s"
	}
	if r.Quick {
		what += " at CI sizes"
	}
	return what
}
