package heartbeat_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run if a test, an example or a benchmark leaves a
// goroutine behind. Importing ants starts its package-level default pool
// before any test runs; IgnoreCurrent ignores exactly those goroutines.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreCurrent())
}
