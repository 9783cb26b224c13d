package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// progress shows which child is running: one line rewritten in place on a
// terminal, one plain line per step otherwise (for CI logs).
type progress struct {
	w     io.Writer
	tty   bool
	total int
	done  int
	start time.Time
	width int
}

func newProgress(f *os.File, total int) *progress {
	tty := false
	if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
		tty = true
	}
	return &progress{w: f, tty: tty, total: total, start: time.Now()}
}

// step announces the child about to run.
func (p *progress) step(what string) {
	elapsed := time.Since(p.start)
	left := ""
	if p.done > 0 {
		// The runs so far are the best guide to the runs left: they ran on
		// this machine, under its present load.
		left = ", about " + roundEstimate(elapsed/time.Duration(p.done)*time.Duration(p.total-p.done)) + " left"
	}
	line := fmt.Sprintf("[%d/%d %s%s] %s", p.done+1, p.total, elapsed.Round(time.Second), left, what)
	if !p.tty {
		fmt.Fprintln(p.w, line)
		return
	}
	pad := max(p.width-len(line), 0)
	p.width = len(line)
	fmt.Fprintf(p.w, "\r%s%s", line, strings.Repeat(" ", pad))
}

// finish records the end of a step, printing its outcome when it is worth
// a line of its own.
func (p *progress) finish(outcome string) {
	p.done++
	if outcome == "" {
		return
	}
	if p.tty {
		fmt.Fprint(p.w, "\n")
		p.width = 0
	}
	fmt.Fprintln(p.w, "  "+outcome)
}

// end clears the line.
func (p *progress) end() {
	if p.tty {
		fmt.Fprint(p.w, "\n")
	}
	fmt.Fprintf(p.w, "done: %d runs in %s\n", p.total, time.Since(p.start).Round(time.Second))
}
