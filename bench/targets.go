package main

import (
	"fmt"
	"strings"
)

// targetCheck is one of go-schedule's performance targets (DESIGN.md),
// judged on the medians of this run.
type targetCheck struct {
	Impl   string `json:"impl"`
	Target string `json:"target"`
	Value  string `json:"value"`
	// Verdict is "met", "MISSED" or "not measured".
	Verdict string `json:"verdict"`
}

// goroutineSlack is the constant allowed above the pool size in the fire
// workload: the scheduler's owner and dispatcher, the pool's background
// goroutines and the benchmark's sampler.
const goroutineSlack = 8

// checkTargets judges go-schedule's targets for both strategies.
func (r *report) checkTargets() []targetCheck {
	var out []targetCheck
	wheels := []string{"russellluo", "gozero", "antlabs"}
	for _, im := range []string{"lazycancel", "eagercancel"} {
		if !r.hasImpl(im) {
			continue
		}
		add := func(target string, ok, measured bool, value string) {
			v := "not measured"
			if measured {
				v = "MISSED"
				if ok {
					v = "met"
				}
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

		ratioCheck("Reset ns/heartbeat ≤ Timer.Reset (ratio ≤ 1.0)", "heartbeat-reset", "ns_hb", 1.0)
		maxCheck("Reset allocs/heartbeat = 0", "heartbeat-reset", "allocs_hb", 0.01)
		own, ok := r.get("heartbeat-reset", im, "ns_hb")
		var slower []string
		var ahead = ok
		for _, w := range wheels {
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
		ratioCheck("ScheduleOne+CancelTask ns ≤ AfterFunc+Stop (cancel right after add)", "add", "ns_pair", 1.0)
		ratioCheck("CancelTask+ScheduleOne heartbeat at 1M pending ≤ Stop+AfterFunc", "heartbeat-canceladd", "ns_hb", 1.0)
		maxCheck("≤ 1 allocation per scheduled task", "add", "allocs_add", 1.0)
		maxCheck("≤ 1 allocation per add+cancel (0 per cancel)", "add", "allocs_pair", 1.0)
		if im == "eagercancel" {
			maxCheck("≤ 80 bytes per pending task", "add", "bytes_task", 80)
		} else {
			maxCheck("heap entries ≤ 1.25× live after mixed-timeout cancel+add re-arming", "heartbeat-canceladd", "entries_per_live", 1.25)
			if e, eok := r.get("heartbeat-canceladd", "eagercancel", "bytes_device"); eok {
				s, sok := r.get("heartbeat-canceladd", im, "bytes_device")
				add("memory: bytes/device ≤ 1.25× eager's after cancel+add re-arming", sok && s.Median <= 1.25*e.Median, sok,
					fmt.Sprintf("%.0f vs %.0f (×%.2f)", s.Median, e.Median, s.Median/e.Median))
			}
		}
		maxCheck("fire: none lost", "fire", "lost", 0)
		ratioCheck("fire: p99 lateness ≤ runtime's", "fire", "late_p99_ms", 1.0)
		maxCheck(fmt.Sprintf("fire: extra goroutines ≤ pool size (%d) + %d", r.Config.Workers, goroutineSlack), "fire", "extra_goroutines", float64(r.Config.Workers+goroutineSlack))
		maxCheck("idle: CPU ≤ 1% of a core with all deadlines an hour out", "idle", "cpu_pct", 1.0)
		for _, wl := range []string{"correct-reset", "correct-canceladd"} {
			s, ok := r.get(wl, im, "failures")
			worst := s.Max
			add("exactly-once under heartbeats ("+strings.TrimPrefix(wl, "correct-")+")", ok && worst == 0, ok, fmt.Sprintf("%.0f failures (worst run)", worst))
		}
	}
	return out
}

// targetsTable renders the checks.
func (r *report) targetsTable() string {
	var b strings.Builder
	b.WriteString("| strategy | target | this run (median) | verdict |\n|---|---|---|---|\n")
	for _, t := range r.Targets {
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", t.Impl, t.Target, t.Value, t.Verdict)
	}
	return b.String()
}
