package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// op names one per-operation figure of a result.
type op struct {
	name  string
	limit float64 // the bound on its ratio at 10^8 to 10^6
	get   func(result) float64
}

var ops = []op{
	{"add", 2, func(r result) float64 { return r.Add }},
	{"reset later", 2, func(r result) float64 { return r.ResetLater }},
	{"reset earlier", 2, func(r result) float64 { return r.ResetEarlier }},
	{"cancel", 2, func(r result) float64 { return r.Cancel }},
	{"fire", 3, func(r result) float64 { return r.Fire }},
}

// Targets of the issue, beside the figures they bound.
const (
	lazyBytesAtHuge  = 70  // B per pending task at 10^8, lazy
	memoryVsRuntime  = 0.5 // ours ÷ runtime's, B per pending task
	gcShareVsRuntime = 0.5 // ours ÷ runtime's, GC CPU share at 10^7
	gcShareSize      = 10_000_000
	timeBudget       = 10 * time.Minute // sizes up to 10^7
)

// find returns the result of impl at n that measured something.
func find(rs []result, impl string, n int) (result, bool) {
	for _, r := range rs {
		if r.Impl == impl && r.N == n && r.Skipped == "" && r.Error == "" {
			return r, true
		}
	}
	return result{}, false
}

// refSize is the size ratios refer to: c.ref if it ran, else the smallest
// size.
func refSize(c config, rs []result) int {
	for _, r := range rs {
		if r.N == c.ref && r.Skipped == "" && r.Error == "" {
			return c.ref
		}
	}
	return c.sizes[0]
}

func writeReport(w io.Writer, h machineHeader, c config, rs []result, elapsed time.Duration) {
	ref := refSize(c, rs)
	fmt.Fprintln(w, h.String())
	fmt.Fprintf(w, "CPU ns per operation with n pending (×: ratio to the same at %s); memory in bytes per pending task\n\n", sizeName(ref))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "impl\tn\tadd\treset later\treset earlier\tcancel\tfire\tpass ms\theap B\tscan B\tRSS B\tfull GC cpu ms\tGC pause µs\tGC share %\t")
	var notes []string
	for _, impl := range c.impls {
		base, haveBase := find(rs, impl, ref)
		for _, n := range c.sizes {
			r := result{}
			for _, x := range rs {
				if x.Impl == impl && x.N == n {
					r = x
				}
			}
			if r.Skipped != "" || r.Error != "" {
				why := "skipped: " + r.Skipped
				if r.Skipped == "" {
					why = "error: " + r.Error
				}
				notes = append(notes, fmt.Sprintf("  %s at %s %s", impl, sizeName(n), why))
				fmt.Fprintf(tw, "%s\t%s\t%s\t\t\t\t\t\t\t\t\t\t\t\n", impl, sizeName(n), strings.SplitN(why, ":", 2)[0]+" (below)")
				continue
			}
			cells := []string{impl, sizeName(n)}
			for _, o := range ops {
				v := o.get(r)
				cell := fmt.Sprintf("%.0f", v)
				if haveBase && o.get(base) > 0 {
					cell += fmt.Sprintf(" ×%.2f", v/o.get(base))
				}
				cells = append(cells, cell)
			}
			share := fmt.Sprintf("%.2f (%d)", r.GCShare, r.GCCycles)
			switch {
			case r.GCCycles == 0 && r.GCWindowS == 0:
				share = fmt.Sprintf("0, a cycle per %.0fs", r.GCCycleS)
			case r.GCCycles == 0:
				share = fmt.Sprintf("no cycle in %.0fs", r.GCWindowS)
			}
			cells = append(cells,
				fmt.Sprintf("%.1f", r.PassMs), fmt.Sprintf("%.0f", r.HeapB), fmt.Sprintf("%.0f", r.ScanB),
				fmt.Sprintf("%.0f", r.RSSB), fmt.Sprintf("%.1f", r.GCCPUMs), fmt.Sprintf("%.0f", r.GCPauseUs), share)
			fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
		}
	}
	tw.Flush()
	for _, note := range notes {
		fmt.Fprintln(w, note)
	}
	fmt.Fprintln(w)
	for _, impl := range c.impls {
		fmt.Fprintf(w, "  %-12s %s\n", impl, implDoc[impl])
	}
	fmt.Fprintf(w, `  pass         CPU of the O(n) catch-up with deadlines moved earlier, at most once a second
  heap, scan   Go heap after a full collection (its handle and closure included); the part the collector scans
  RSS          resident set after that collection; full GC: one runtime.GC(), its CPU and stop-the-world pauses
  GC share     GC CPU over whole cycles, of GOMAXPROCS × wall, while 1%% of the keys beat each second
               (a later Reset and a %d-byte buffer of garbage per beat); (cycles seen). Where the
               load would take longer than -gc-window (%s) to end a cycle, no window runs: the share is nil
`, c.child.garbage, c.child.window)
	fmt.Fprintln(w)
	for _, line := range verdict(c, rs, elapsed) {
		fmt.Fprintln(w, line)
	}
}

// verdict checks the targets, naming those this run did not
// measure. Its first line sums them up.
func verdict(c config, rs []result, elapsed time.Duration) []string {
	var lines []string
	pass, fail, unmeasured := 0, 0, 0
	check := func(ok bool, format string, a ...any) {
		word := "FAIL"
		if ok {
			word, pass = "pass", pass+1
		} else {
			fail++
		}
		lines = append(lines, fmt.Sprintf("  %-4s  ", word)+fmt.Sprintf(format, a...))
	}
	none := func(format string, a ...any) {
		unmeasured++
		lines = append(lines, "  --    "+fmt.Sprintf(format, a...))
	}
	ours := []string{"lazy", "eager"}
	largest := func(impl string) (result, bool) {
		var best result
		found := false
		for _, r := range rs {
			if r.Impl == impl && r.Skipped == "" && r.Error == "" && r.N > best.N {
				best, found = r, true
			}
		}
		return best, found
	}
	// Per-op flatness, 10^8 against 10^6.
	for _, impl := range ours {
		if !slices.Contains(c.impls, impl) {
			none("%s per-op at 10^8 within 2× of 10^6 (fire 3×): not measured, %s not run", impl, impl)
			continue
		}
		b, okB := find(rs, impl, 1_000_000)
		h, okH := find(rs, impl, huge)
		if okB && okH {
			for _, o := range ops {
				ratio := o.get(h) / o.get(b)
				check(ratio <= o.limit, "%s %s at 10^8: ×%.2f of 10^6 (target ≤ %.0f×)", impl, o.name, ratio, o.limit)
			}
			continue
		}
		note := ""
		if l, ok := largest(impl); ok && okB && l.N > 1_000_000 {
			worst, name := 0.0, ""
			for _, o := range ops {
				if rt := o.get(l) / o.get(b) / o.limit; rt > worst {
					worst, name = rt, fmt.Sprintf("%s ×%.2f", o.name, o.get(l)/o.get(b))
				}
			}
			note = fmt.Sprintf("; at %s the op closest to its bound is %s of 10^6", sizeName(l.N), name)
		}
		none("%s per-op at 10^8 within 2× of 10^6 (fire 3×): not measured, 10^8 not run%s", impl, note)
	}
	// Memory at 10^8, lazy.
	if h, ok := find(rs, "lazy", huge); ok {
		check(h.HeapB <= lazyBytesAtHuge, "lazy memory at 10^8: %.0f B per pending task (target ≤ %d B)", h.HeapB, lazyBytesAtHuge)
	} else {
		note := ""
		for _, impl := range []string{"lazy", "lazy-shared"} {
			if l, ok := largest(impl); ok {
				note += fmt.Sprintf("; %s at %s: %.0f B", impl, sizeName(l.N), l.HeapB)
			}
		}
		none("lazy memory at 10^8 ≤ %d B per pending task: not measured, 10^8 not run%s", lazyBytesAtHuge, note)
	}
	// Memory against the runtime wherever it fits.
	for _, impl := range ours {
		worst, at, last, lastAt, any := 0.0, 0, 0.0, 0, false
		for _, n := range c.sizes {
			r, ok1 := find(rs, impl, n)
			rt, ok2 := find(rs, "runtime", n)
			if ok1 && ok2 && rt.HeapB > 0 {
				any = true
				x := r.HeapB / rt.HeapB
				if x > worst {
					worst, at = x, n
				}
				last, lastAt = x, n
			}
		}
		if any {
			check(worst <= memoryVsRuntime, "%s memory ≤ %.1f× the runtime's at every size both ran: worst ×%.2f, at %s; ×%.2f at %s",
				impl, memoryVsRuntime, worst, sizeName(at), last, sizeName(lastAt))
		} else {
			none("%s memory against the runtime's: not measured (no size where both ran)", impl)
		}
	}
	// GC share at 10^7.
	for _, impl := range ours {
		r, ok1 := find(rs, impl, gcShareSize)
		rt, ok2 := find(rs, "runtime", gcShareSize)
		switch {
		case !ok1 || !ok2:
			none("%s GC CPU share at 10^7 ≤ %.1f× the runtime's: not measured, 10^7 not run for both", impl, gcShareVsRuntime)
		case r.GCCycles == 0 || rt.GCCycles == 0 || rt.GCShare == 0:
			none("%s GC CPU share at 10^7: not measured, a window saw no GC cycle (raise -gc-window)", impl)
		default:
			x := r.GCShare / rt.GCShare
			check(x <= gcShareVsRuntime, "%s GC CPU share at 10^7: %.2f%% against the runtime's %.2f%%, ×%.2f (target ≤ %.1f×)", impl, r.GCShare, rt.GCShare, x, gcShareVsRuntime)
		}
	}
	// Time.
	var upTo7 float64
	for _, r := range rs {
		if r.N <= gcShareSize {
			upTo7 += r.WallS
		}
	}
	if slices.Contains(c.sizes, gcShareSize) {
		d := time.Duration(upTo7 * float64(time.Second))
		check(d < timeBudget, "sizes up to 10^7 ran in %s (target < %s)", d.Round(time.Second), timeBudget)
	} else {
		none("sizes up to 10^7 in under %s: not measured, 10^7 not in -sizes (this run: %s)", timeBudget, elapsed.Round(time.Second))
	}
	head := fmt.Sprintf("verdict: %d met, %d missed, %d not measured", pass, fail, unmeasured)
	return append([]string{head}, lines...)
}
