package main

import (
	"testing"
	"time"

	"github.com/go-schedule/schedule/presence/internal/tcpproxy"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A gateway cut off from the engine for longer than its lease: another
// gateway records its device node_lost; back, the gateway closes the
// device's connection and records nothing for it, and serves devices
// again.
func TestGatewayCutOffLongerThanItsLeaseClosesItsDevicesAndRecordsNothing(t *testing.T) {
	const lease = 2 * time.Second
	url := engine(t)
	p, via, err := tcpproxy.Start(url)
	require.NoError(t, err)
	t.Cleanup(p.Close)
	_, addrCut := runGate(t, "-nats", via, "-node", "gwA", "-timeout", "60s", "-lease", "2s")
	runGate(t, "-nats", url, "-node", "gwB", "-timeout", "60s", "-lease", "2s")
	w := watcher(t, url)
	d := hello(t, addrCut, "stranded")
	w.waitRecords(t, "stranded", 1, 5*time.Second)

	p.Cut()
	w.waitState(t, "stranded", "offline", 2*lease+5*time.Second)
	assert.Equal(t, "node_lost", w.records(t, "stranded")[1].Reason)
	assert.False(t, d.closedWithin(100*time.Millisecond), "cut off, the gateway does not know yet")
	p.Heal()
	assert.True(t, d.closedWithin(15*time.Second), "back, the gateway closes the device")
	hello(t, addrCut, "stranded") // and serves it again
	recs := w.waitRecords(t, "stranded", 3, 5*time.Second)
	assert.Equal(t, []string{"connect", "node_lost", "connect"}, []string{recs[0].Reason, recs[1].Reason, recs[2].Reason})
	time.Sleep(lease)
	assert.Len(t, w.records(t, "stranded"), 3, "nothing recorded for the closed connection")
}
