package loadtest

import (
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// noFileLimitIn skips a test whose counts would reach this system's limit
// of open files per process.
func noFileLimitIn(t *testing.T, perProcess int) {
	if lim, ok := OpenFileLimit(); ok && uint64(perProcess)+FileMargin > lim {
		t.Skipf("a limit of %d open files per process", lim)
	}
}

func TestSpreadFillsInTheProcessesNotGiven(t *testing.T) {
	noFileLimitIn(t, 15000)
	for _, tt := range []struct {
		name                     string
		conns, servers, loaders  int
		wantServers, wantLoaders int
	}{
		{"as few as -per-process allows", 100000, 0, 0, 7, 7},
		{"exactly full", 15000, 0, 0, 1, 1},
		{"as given", 1000, 3, 5, 3, 5},
		{"servers given", 100000, 10, 0, 10, 7},
	} {
		servers, loaders, err := Spread(tt.conns, 15000, tt.servers, tt.loaders, "brokers")
		require.NoError(t, err, tt.name)
		assert.Equal(t, [2]int{tt.wantServers, tt.wantLoaders}, [2]int{servers, loaders}, tt.name)
	}
}

func TestSpreadRefusesMoreLoadProcessesThanSourceAddresses(t *testing.T) {
	_, _, err := Spread(10000, 15000, 1, MaxLoaders+1, "brokers")
	require.Error(t, err)
	assert.Equal(t, "at most 254 load processes", err.Error())
}

func TestSpreadRefusesServersThatWouldHoldTooMany(t *testing.T) {
	_, _, err := Spread(100000, 15000, 2, 0, "server processes")
	require.Error(t, err)
	assert.Equal(t, "2 server processes would hold 50000 connections each, more than -per-process 15000", err.Error())
}

func TestSpreadRefusesLoadProcessesThatWouldHoldTooMany(t *testing.T) {
	_, _, err := Spread(100000, 15000, 0, 3, "brokers")
	require.Error(t, err)
	assert.Equal(t, "3 load processes would hold 33334 connections each, more than -per-process 15000", err.Error())
}

func TestSpreadRefusesPerProcessTooCloseToTheFileLimit(t *testing.T) {
	lim, ok := OpenFileLimit()
	if !ok || lim > 1<<30 {
		t.Skip("no limit of open files to reach")
	}
	perProcess := int(lim) - FileMargin + 1
	_, _, err := Spread(perProcess, perProcess, 0, 0, "brokers")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "too close to this machine's limit")

	_, _, err = Spread(perProcess-1, perProcess-1, 0, 0, "brokers")
	assert.NoError(t, err, "FileMargin left free")
}

func TestShareSpreadsTheRemainderOverTheFirstProcesses(t *testing.T) {
	assert.Equal(t, []int{4, 3, 3}, []int{Share(10, 3, 0), Share(10, 3, 1), Share(10, 3, 2)})
	for _, c := range [][2]int{{0, 1}, {1, 7}, {100, 7}, {99999, 254}, {10, 10}} {
		n, k := c[0], c[1]
		sum, least, most := 0, n, 0
		for i := range k {
			s := Share(n, k, i)
			sum += s
			least, most = min(least, s), max(most, s)
		}
		assert.Equal(t, n, sum, "%d over %d", n, k)
		assert.LessOrEqual(t, most-least, 1, "%d over %d", n, k)
	}
}

func TestSilentCountRoundsToTheNearest(t *testing.T) {
	assert.Equal(t, 10000, SilentCount(100000, 0.1))
	assert.Equal(t, 2, SilentCount(3, 0.5), "1.5 rounds up")
	assert.Equal(t, 0, SilentCount(3, 0.1))
	assert.Equal(t, 0, SilentCount(10, 0))
	assert.Equal(t, 10, SilentCount(10, 1))
}

func TestRandomLoopbacksAreDistinctLoopbackNetworksOutside127_0(t *testing.T) {
	nets, err := RandomLoopbacks(5000)
	require.NoError(t, err)
	require.Len(t, nets, 5000)
	seen := map[Loopback]bool{}
	for _, l := range nets {
		assert.False(t, seen[l], "%v twice", l)
		seen[l] = true
		assert.True(t, l.x >= 1 && l.x <= 254 && l.y >= 0 && l.y <= 255, "%v", l)
		for _, i := range []int{0, MaxLoaders - 1} {
			ip := net.ParseIP(l.Source(i))
			require.NotNil(t, ip, "%s", l.Source(i))
			assert.True(t, ip.IsLoopback(), "%v", ip)
		}
	}
}

func TestRandomLoopbacksRefusesMoreThanThereAre(t *testing.T) {
	_, err := RandomLoopbacks(254*256 + 1)
	assert.Error(t, err)
	nets, err := RandomLoopbacks(0)
	require.NoError(t, err)
	assert.Empty(t, nets)
}

func TestLoopbackSourceOfLoadProcessIIsItsAddressIPlusOne(t *testing.T) {
	l := Loopback{3, 0}
	assert.Equal(t, "127.3.0.1", l.Source(0))
	assert.Equal(t, "127.3.0.254", l.Source(MaxLoaders-1))
	assert.Equal(t, "127.3.0.0/24", l.String())
}
