package netdeadline_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run if any test leaves a goroutine behind. Importing
// ants starts its package-level default pool (two goroutines) before any
// test runs; IgnoreCurrent ignores exactly those.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreCurrent())
}
