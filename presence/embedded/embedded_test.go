package embedded

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestStartClusterRefusesFewerThanOneServer(t *testing.T) {
	for _, n := range []int{0, -1} {
		servers, err := StartCluster("c", n, t.TempDir())
		assert.ErrorIs(t, err, ErrClusterSize, "n=%d", n)
		assert.Empty(t, servers, "n=%d", n)
	}
}
