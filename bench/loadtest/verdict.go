package loadtest

import (
	"fmt"
	"io"
	"strings"
)

// Failure is a count that a load run found wrong.
type Failure struct {
	// Server names the server whose count it is, in the command's words
	// ("mochi deadline"); empty when the command measures one kind only.
	Server string
	// Baseline marks a server measured only for comparison, one that does
	// not run on go-schedule: its wrong count says nothing about
	// go-schedule, and does not fail the run.
	Baseline bool
	// Count names the count and gives its value.
	Count string
}

// String returns the failure as the verdict prints it.
func (f Failure) String() string {
	if f.Server == "" {
		return f.Count
	}
	return f.Server + ": " + f.Count
}

// Judge writes the verdict on failures to w, each line prefixed with name,
// and returns the exit status: ExitFail when a count of go-schedule's is
// wrong, ExitPass when every wrong count is a baseline's (reported as the
// baseline's) or none is. Its last line is the verdict alone: "PASS", or
// "FAIL:" with go-schedule's wrong counts.
func Judge(name string, failures []Failure, w io.Writer) int {
	var ours, baseline []string
	for _, f := range failures {
		if f.Baseline {
			baseline = append(baseline, f.String())
		} else {
			ours = append(ours, f.String())
		}
	}
	if len(baseline) > 0 {
		fmt.Fprintf(w, "%s: baseline wrong, not go-schedule's (the exit status ignores it): %s\n", name, strings.Join(baseline, "; "))
	}
	if len(ours) > 0 {
		fmt.Fprintf(w, "%s: FAIL: %s\n", name, strings.Join(ours, "; "))
		return ExitFail
	}
	fmt.Fprintf(w, "%s: PASS\n", name)
	return ExitPass
}
