package schedprom_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run if a test leaves a goroutine behind, such as a
// scheduler that was not shut down or a demo process still being waited
// for. IgnoreCurrent ignores ants' package-level default pool.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreCurrent())
}
