package jobs_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"
)

// bin holds the commands built for the process tests.
var bin string

// TestMain builds jobworker and jobctl for the process tests, runs the
// tests, and fails the run if any goroutine is left behind.
func TestMain(m *testing.M) {
	ignore := goleak.IgnoreCurrent()
	dir, err := os.MkdirTemp("", "jobs-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = dir
	code := build(dir)
	if code == 0 {
		code = m.Run()
	}
	if code == 0 {
		if err := goleak.Find(ignore); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

func build(dir string) int {
	for _, c := range []string{"jobworker", "jobctl"} {
		out, err := exec.Command("go", "build", "-race", "-o", filepath.Join(dir, c), "./cmd/"+c).CombinedOutput()
		if err != nil {
			fmt.Fprintf(os.Stderr, "build %s: %v\n%s", c, err, out)
			return 1
		}
	}
	return 0
}
