package heartbeat_test

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run if a test, an example or a benchmark leaves a
// goroutine behind. Importing ants starts its package-level default pool
// before any test runs; IgnoreCurrent ignores exactly those goroutines. Its
// last line says where each guarantee is mapped to its tests.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreCurrent(), goleak.Cleanup(func(code int) {
		fmt.Println("See docs/guarantees.md#the-heartbeat-package for each guarantee of package heartbeat and the tests that prove it.")
		os.Exit(code)
	}))
}
