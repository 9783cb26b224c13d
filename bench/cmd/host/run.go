package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"
)

// cell names one measurement: one implementation on one work shape at one
// GOMAXPROCS, in one repetition.
type cell struct {
	Impl  string `json:"impl"`
	Shape string `json:"shape"`
	Procs int    `json:"gomaxprocs"`
	Rep   int    `json:"rep"`
}

// hostSpec is what a host child is given: its cell and the run's sizes.
type hostSpec struct {
	Cell   cell   `json:"cell"`
	Config config `json:"config"`
}

// senderProcs is the sender's GOMAXPROCS: one processor is all a ticker
// loop needs, and it keeps the sender's footprint on the machine the same
// in every cell.
const senderProcs = 1

// childWaitDelay bounds how long Wait waits for a killed child's pipes.
const childWaitDelay = 5 * time.Second

// stderrTail is how much of a failed child's standard error the report
// keeps.
const stderrTail = 600

// plan lists the cells of a run in the order they run: repetitions
// outermost, and within one the implementations of each (GOMAXPROCS,
// shape) in an order rotated by repetition, so that no implementation
// always runs first or last.
func plan(c config) []cell {
	var cells []cell
	for rep := 1; rep <= c.Count; rep++ {
		for _, p := range c.Procs {
			for _, sh := range c.Shapes {
				for _, im := range rotate(c.Impls, rep-1) {
					cells = append(cells, cell{Impl: im, Shape: sh, Procs: p, Rep: rep})
				}
			}
		}
	}
	return cells
}

// rotate returns xs rotated left by k places; xs is not modified.
func rotate(xs []string, k int) []string {
	if len(xs) == 0 {
		return nil
	}
	k %= len(xs)
	return append(slices.Clone(xs[k:]), xs[:k]...)
}

// runAll runs every cell of c and returns the report. It returns an error
// only when the run was interrupted; failed cells are in the report.
func runAll(ctx context.Context, c config) (*report, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	rep := newReport(c)
	cells := plan(c)
	start := time.Now()
	for i, cl := range cells {
		fmt.Fprintf(os.Stderr, "[%d/%d %v] rep %d  GOMAXPROCS=%d  %-7s  %-11s ",
			i+1, len(cells), time.Since(start).Round(time.Second), cl.Rep, cl.Procs, cl.Shape, cl.Impl)
		load := loadAvg()
		res := runCell(ctx, exe, c, cl)
		res.Load1 = load
		if ctx.Err() != nil {
			fmt.Fprintln(os.Stderr)
			return nil, fmt.Errorf("interrupted: %w", context.Cause(ctx))
		}
		fmt.Fprintf(os.Stderr, "%s  (load %.2f)\n", res.brief(), load)
		rep.Runs = append(rep.Runs, res)
	}
	rep.summarize()
	return rep, nil
}

// runCell runs one cell: a host child, then a sender child aimed at it.
// Every failure (a child that crashed, hung or printed nonsense) is
// reported in the result's Error.
func runCell(ctx context.Context, exe string, c config, cl cell) hostResult {
	res := hostResult{cell: cl}
	ctx, cancel := context.WithTimeout(ctx, c.Warmup+c.Window+cellTimeoutMargin)
	defer cancel()

	spec, err := json.Marshal(hostSpec{Cell: cl, Config: c})
	if err != nil {
		res.Error = err.Error()
		return res
	}
	host, err := startChild(ctx, exe, cl.Procs, "-role", roleHost, "-spec", string(spec))
	if err != nil {
		res.Error = "starting the host: " + err.Error()
		return res
	}
	line, err := host.stdout.ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), addrPrefix)
	if err != nil || !ok {
		// A host that fails early reports why in its result line.
		why := strings.TrimSpace(line)
		var early hostResult
		if json.Unmarshal([]byte(line), &early) == nil && early.Error != "" {
			why = early.Error
		}
		res.Error = joinErr("host failed before listening: "+why, host.finish())
		return res
	}
	sender, err := startChild(ctx, exe, senderProcs, "-role", roleSender, "-addr", addr, "-interval", c.Interval.String())
	if err != nil {
		host.finish()
		res.Error = "starting the sender: " + err.Error()
		return res
	}

	line, readErr := host.stdout.ReadString('\n')
	hostFailure := host.finish()
	// Closing its standard input is the sender's signal to stop and report.
	sender.stdin.Close()
	sline, _ := sender.stdout.ReadString('\n')
	senderFailure := sender.finish()

	if readErr != nil || json.Unmarshal([]byte(line), &res) != nil {
		res = hostResult{cell: cl, Error: "host crashed: " + hostFailure}
		return res
	}
	res.cell = cl
	var sent senderReport
	if err := json.Unmarshal([]byte(sline), &sent); err != nil || senderFailure != "" {
		res.Error = joinErr(res.Error, "sender failed: "+senderFailure)
	} else if sent.Seconds > 0 {
		res.SenderPerS = float64(sent.Sent) / sent.Seconds
	}
	if hostFailure != "" {
		res.Error = joinErr(res.Error, "host: "+hostFailure)
	}
	return res
}

// child is a running child process with its pipes.
type child struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *bufio.Reader
	stderr bytes.Buffer
}

// startChild re-executes this binary with args and GOMAXPROCS=procs. The
// child is killed when ctx ends, and it exits by itself when its standard
// input closes, which happens at the latest when this process dies.
func startChild(ctx context.Context, exe string, procs int, args ...string) (*child, error) {
	ch := &child{cmd: exec.CommandContext(ctx, exe, args...)}
	ch.cmd.Env = append(withoutVar(os.Environ(), envGOMAXPROCS), envGOMAXPROCS+"="+strconv.Itoa(procs))
	ch.cmd.WaitDelay = childWaitDelay
	ch.cmd.Stderr = &ch.stderr
	var err error
	if ch.stdin, err = ch.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	out, err := ch.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	ch.stdout = bufio.NewReader(out)
	if err := ch.cmd.Start(); err != nil {
		return nil, err
	}
	return ch, nil
}

// finish waits for the child to exit and returns "" if it exited cleanly,
// or else how it ended and the tail of its standard error.
func (ch *child) finish() string {
	err := ch.cmd.Wait()
	if err == nil {
		return ""
	}
	msg := err.Error()
	if tail := lastBytes(strings.TrimSpace(ch.stderr.String()), stderrTail); tail != "" {
		msg += ": " + tail
	}
	return msg
}

// loadAvg returns the 1-minute load average, or 0 where it is unknown.
func loadAvg() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f, _ := strconv.ParseFloat(strings.Fields(string(b) + " 0")[0], 64)
	return f
}

// withoutVar returns env without the entries for the variable name.
func withoutVar(env []string, name string) []string {
	return slices.DeleteFunc(slices.Clone(env), func(kv string) bool { return strings.HasPrefix(kv, name+"=") })
}

func lastBytes(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

func joinErr(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}
