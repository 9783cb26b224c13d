package jobs

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
)

// TestEntryFitsThirtyTwoBytes checks what a worker keeps per pending job
// besides the map slot and the scheduler's task: one 32-byte allocation.
// An epoch per entry, which only a job running elsewhere needs, made it 48.
func TestEntryFitsThirtyTwoBytes(t *testing.T) {
	assert.LessOrEqual(t, unsafe.Sizeof(entry{}), uintptr(32))
}
