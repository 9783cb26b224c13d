package schedule_test

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run if any test leaves a goroutine behind. Importing
// ants starts its package-level default pool (two goroutines) before any
// test runs; IgnoreCurrent ignores exactly those. Its last line says where
// each guarantee is mapped to the test that proves it: go test shows it
// with -v, on a failure, and when run in this directory. It is not of the
// form "key: value", which benchstat would read as a configuration line and
// so split the runs of a benchmark file in two.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreCurrent(), goleak.Cleanup(func(code int) {
		fmt.Println("See docs/guarantees.md for each guarantee of package schedule and the tests that prove it, for both strategies.")
		os.Exit(code)
	}))
}
