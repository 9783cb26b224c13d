// Command growth reads the output of the library's BenchmarkParallel*
// benchmarks, run as several rounds of -count 1 so that each round
// measures every row close together in time, and reports how CPU per
// operation grows with goroutines for each implementation next to the
// runtime's:
//
//	for r in $(seq 10); do go test -run '^$' -bench Parallel -benchtime 300000x -count 1 .; done > par.txt
//	cd bench && go run ./growth < ../par.txt
//
// For each operation it prints the median cpu-ns/op per goroutine count,
// the median growth from one goroutine to the most, and, round by round,
// the implementation's growth divided by the runtime's in the same round:
// its median, and in how many rounds it was above 1 (grew faster). Pairing
// by round cancels what a shared machine does to one round as a whole.
package main

import (
	"bufio"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
)

var line = regexp.MustCompile(`^BenchmarkParallel(\w+)/g=(\d+)/(\w+)-\d+\s.*?\s([\d.]+) cpu-ns/op`)

type row struct {
	op   string
	g    int
	impl string
}

func main() {
	samples := map[row][]float64{}
	var ops, impls []string
	var gs []int
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		m := line.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		g, _ := strconv.Atoi(m[2])
		v, _ := strconv.ParseFloat(m[4], 64)
		r := row{m[1], g, m[3]}
		samples[r] = append(samples[r], v)
		if !slices.Contains(ops, r.op) {
			ops = append(ops, r.op)
		}
		if !slices.Contains(impls, r.impl) {
			impls = append(impls, r.impl)
		}
		if !slices.Contains(gs, g) {
			gs = append(gs, g)
		}
	}
	if len(samples) == 0 || !slices.Contains(impls, "runtime") {
		fmt.Fprintln(os.Stderr, "growth: no BenchmarkParallel rows with cpu-ns/op and a runtime row on stdin")
		os.Exit(1)
	}
	slices.Sort(gs)
	lo, hi := gs[0], gs[len(gs)-1]
	growth := func(op, impl string) []float64 {
		a, b := samples[row{op, lo, impl}], samples[row{op, hi, impl}]
		out := make([]float64, min(len(a), len(b)))
		for i := range out {
			out[i] = b[i] / a[i]
		}
		return out
	}
	for _, op := range ops {
		fmt.Printf("%s: median cpu-ns/op", op)
		for _, g := range gs {
			fmt.Printf(" | g=%d", g)
		}
		fmt.Printf(" | growth %d→%d | growth ÷ runtime's, by round\n", lo, hi)
		rt := growth(op, "runtime")
		for _, impl := range impls {
			fmt.Printf("  %-8s", impl)
			for _, g := range gs {
				fmt.Printf(" | %5.0f", median(samples[row{op, g, impl}]))
			}
			gr := growth(op, impl)
			fmt.Printf(" | %.2f", median(gr))
			if impl != "runtime" {
				paired := make([]float64, min(len(gr), len(rt)))
				above := 0
				for i := range paired {
					paired[i] = gr[i] / rt[i]
					if paired[i] > 1 {
						above++
					}
				}
				fmt.Printf(" | median %.2f, above 1 in %d of %d rounds", median(paired), above, len(paired))
			}
			fmt.Println()
		}
	}
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(xs))
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
