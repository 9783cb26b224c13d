package gnetidle

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run when a test leaves a goroutine behind: a scheduler
// not shut down, an engine not stopped, a fake event loop not ended.
// IgnoreCurrent leaves out what exists before the tests, such as the
// default pools that ants and gnet start when they are imported.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreCurrent())
}
