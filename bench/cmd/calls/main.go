// Command calls prints the README's "calls" table: go-schedule's calls
// against the Go runtime's timers with a million tasks pending, from the
// root module's in-package benchmarks. Each benchmark runs its lazy, eager
// and runtime sub-benchmarks one after another in the same process, so every
// ratio compares figures taken moments apart; the command repeats the whole
// set -count times and prints, per row, the median ratio and the range of
// single repetitions, then every target with its verdict and a last line
// of targets met, missed and not measured, with the CPU model and the Go
// version.
//
// Usage, from the bench directory:
//
//	go run ./cmd/calls                       # 5 repetitions
//	go run ./cmd/calls -count 3
//	go run ./cmd/calls -in bench.txt         # judge `go test -bench … -count N` output instead of running
//
// It builds the root module's test binary once and runs it -count times,
// writing the raw output (raw.txt) and the table (calls.md) to -out, a new
// temporary directory unless given. A benchmark it cannot find (renamed, or
// not run) is reported as not measured; only a missed target makes the
// command exit 1.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/go-schedule/schedule/bench/loadtest"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

type options struct {
	count     int
	in, out   string
	root      string
	benchtime string
}

func run(args []string, stdout, stderr io.Writer) int {
	var o options
	fs := flag.NewFlagSet("calls", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&o.count, "count", 5, "repetitions of the whole set of benchmarks")
	fs.StringVar(&o.in, "in", "", "read this `go test -bench` output (any -count, runs appended) instead of running the benchmarks; - for standard input")
	fs.StringVar(&o.out, "out", "", "directory for raw.txt and calls.md (default: a new temporary directory)")
	fs.StringVar(&o.root, "root", "..", "the root module's directory")
	fs.StringVar(&o.benchtime, "benchtime", "", "passed to the benchmarks as -test.benchtime (default the testing package's, 1s)")
	usage := func() {
		w := fs.Output()
		fmt.Fprintln(w, "usage: go run ./cmd/calls [flags]   (in bench/)")
		fmt.Fprintln(w)
		fmt.Fprintln(w, "Runs the root module's in-package benchmarks at 1M pending -count times and prints")
		fmt.Fprintln(w, "the calls table (ratios to the Go runtime's timers, median and range), every target's")
		fmt.Fprintln(w, "verdict and a verdict line. Exit status: 0 all measured targets met, 1 a target")
		fmt.Fprintln(w, "missed, 2 bad flags or a failed run.")
		fmt.Fprintln(w)
		fmt.Fprintln(w, "Flags:")
		fs.PrintDefaults()
	}
	fs.Usage = usage
	if err := loadtest.Parse(fs, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintln(stderr, "calls:", err)
		fmt.Fprintln(stderr, "run 'go run ./cmd/calls -h' for the flags")
		return 2
	}
	if o.count < 1 {
		fmt.Fprintln(stderr, "calls: -count must be at least 1")
		return 2
	}
	var res results
	var when string
	if o.in != "" {
		if err := readInput(o.in, stdin, &res); err != nil {
			fmt.Fprintln(stderr, "calls:", err)
			return 2
		}
	} else {
		dir, err := outDir(o.out)
		if err != nil {
			fmt.Fprintln(stderr, "calls:", err)
			return 2
		}
		when = time.Now().UTC().Format("2006-01-02")
		if err := measure(o, dir, &res, stderr); err != nil {
			fmt.Fprintln(stderr, "calls:", err)
			return 2
		}
		defer fmt.Fprintf(stdout, "raw output and table in %s\n", dir)
		o.out = dir
	}
	if res.lines == 0 {
		fmt.Fprintln(stderr, "calls: no benchmark lines read")
		return 2
	}
	table, checks := res.judge()
	var b strings.Builder
	fmt.Fprintf(&b, "%s", table)
	fmt.Fprintf(&b, "\nRatios of go-schedule's figure to the Go runtime's in the same repetition: median (range) of %d repetitions; below 1 is better.\n", res.repetitions())
	fmt.Fprintf(&b, "cpu: %s, %d cores; %s %s/%s; GOMAXPROCS %d", orUnknown(res.cpu), runtime.NumCPU(), goVersion(o.root), runtime.GOOS, runtime.GOARCH, runtime.GOMAXPROCS(0))
	if when != "" {
		fmt.Fprintf(&b, "; %s", when)
	}
	b.WriteString("\n\ntargets (medians):\n")
	for _, c := range checks {
		fmt.Fprintf(&b, "  %-12s %-5s %s: %s\n", c.verdict, c.strategy, c.text, c.value)
	}
	b.WriteString(verdict(checks) + "\n")
	fmt.Fprint(stdout, b.String())
	if o.out != "" && o.in == "" {
		if err := os.WriteFile(filepath.Join(o.out, "calls.md"), []byte(b.String()), 0o644); err != nil {
			fmt.Fprintln(stderr, "calls:", err)
			return 2
		}
	}
	for _, c := range checks {
		if c.verdict == "MISSED" {
			return 1
		}
	}
	return 0
}

// stdin is where -in - reads from.
var stdin io.Reader = os.Stdin

func readInput(path string, std io.Reader, into *results) error {
	if path == "-" {
		return parse(std, into)
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return parse(f, into)
}

func outDir(dir string) (string, error) {
	if dir == "" {
		return os.MkdirTemp("", "schedule-calls-")
	}
	return dir, os.MkdirAll(dir, 0o755)
}

// measure builds the root module's test binary into dir and runs the
// benchmarks o.count times, appending each run's output to raw.txt.
func measure(o options, dir string, into *results, progress io.Writer) error {
	bin := filepath.Join(dir, "schedule.test")
	fmt.Fprintf(progress, "building the root module's test binary (%s)…\n", o.root)
	build := exec.Command("go", "test", "-c", "-o", bin, ".")
	build.Dir = o.root
	build.Stderr = progress
	if err := build.Run(); err != nil {
		return fmt.Errorf("go test -c in %s: %w", o.root, err)
	}
	raw, err := os.Create(filepath.Join(dir, "raw.txt"))
	if err != nil {
		return err
	}
	defer raw.Close()
	args := []string{"-test.run", "^$", "-test.bench", pattern, "-test.count", "1", "-test.benchmem"}
	if o.benchtime != "" {
		args = append(args, "-test.benchtime", o.benchtime)
	}
	for k := 1; k <= o.count; k++ {
		start := time.Now()
		fmt.Fprintf(progress, "repetition %d of %d…", k, o.count)
		cmd := exec.Command(bin, args...)
		cmd.Dir = o.root
		var out strings.Builder
		cmd.Stdout = io.MultiWriter(&out, raw)
		cmd.Stderr = io.MultiWriter(&out, raw)
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("repetition %d: %w\n%s", k, err, out.String())
		}
		fmt.Fprintf(progress, " %s\n", time.Since(start).Round(time.Second))
		if err := parse(strings.NewReader(out.String()), into); err != nil {
			return err
		}
	}
	return nil
}

// goVersion is the version of the go command that builds the root module.
func goVersion(root string) string {
	cmd := exec.Command("go", "env", "GOVERSION")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return runtime.Version()
	}
	return strings.TrimSpace(string(out))
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
