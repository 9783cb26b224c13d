package loadtest

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain runs testChild when a test started this binary as a child;
// otherwise it runs the tests, and fails if one leaves a goroutine behind.
func TestMain(m *testing.M) {
	RunIfChild(testChild)
	goleak.VerifyTestMain(m, goleak.IgnoreCurrent())
}
