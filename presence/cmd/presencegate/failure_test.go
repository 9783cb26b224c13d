package main

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-schedule/schedule/presence/embedded"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A gateway killed with SIGKILL: every one of its devices is recorded
// offline node_lost by the surviving gateway, exactly once, within
// 2×lease + 5 s.
func TestKilledGatewaysDevicesAreRecordedNodeLostOnceWithinTwoLeasesAndFiveSeconds(t *testing.T) {
	const lease, devices = 2 * time.Second, 300
	url := engine(t)
	victim, addrV := runGate(t, "-nats", url, "-node", "victim", "-timeout", "30s", "-lease", "2s")
	runGate(t, "-nats", url, "-node", "survivor", "-timeout", "30s", "-lease", "2s")
	w := watcher(t, url)
	for i := range devices {
		hello(t, addrV, fmt.Sprintf("dev.%d", i))
	}
	w.waitRecords(t, fmt.Sprintf("dev.%d", devices-1), 1, 5*time.Second)

	victim.signal(t, syscall.SIGKILL)
	killed := time.Now()
	for i := range devices {
		w.waitState(t, fmt.Sprintf("dev.%d", i), "offline", 2*lease+5*time.Second-time.Since(killed))
	}
	time.Sleep(lease) // a duplicate would come now
	var last time.Time
	for i := range devices {
		recs := w.records(t, fmt.Sprintf("dev.%d", i))
		require.Len(t, recs, 2, "online, then exactly one offline: %+v", recs)
		assert.Equal(t, "node_lost", recs[1].Reason)
		assert.Equal(t, "victim", recs[1].Node)
		if recs[1].at.After(last) {
			last = recs[1].at
		}
	}
	t.Logf("%d devices recorded node_lost, the last printed %v after the kill", devices, last.Sub(killed))
	assert.Less(t, last.Sub(killed), 2*lease+5*time.Second)
}

// A gateway killed and restarted with the same id within its lease: the
// devices that reconnect stay online with no offline between; the others
// are recorded node_lost within 2×lease + 5 s of the restart.
func TestRestartedGatewayKeepsReconnectedDevicesAndLosesTheRest(t *testing.T) {
	const lease = 2 * time.Second
	url := engine(t)
	first, addr := runGate(t, "-nats", url, "-node", "gw1", "-timeout", "30s", "-lease", "2s")
	w := watcher(t, url)
	for _, id := range []string{"back", "gone"} {
		hello(t, addr, id)
		w.waitRecords(t, id, 1, 5*time.Second)
	}
	first.signal(t, syscall.SIGKILL)
	_ = first.exitCode(t, 5*time.Second)
	_, addr2 := runGate(t, "-nats", url, "-node", "gw1", "-timeout", "30s", "-lease", "2s")
	restarted := time.Now()
	hello(t, addr2, "back")
	w.waitState(t, "gone", "offline", 2*lease+5*time.Second)
	recs := w.records(t, "gone")
	require.Len(t, recs, 2)
	t.Logf("the device that did not come back printed node_lost %v after the restart", recs[1].at.Sub(restarted))
	assert.Equal(t, "node_lost", recs[1].Reason)
	time.Sleep(lease)
	back := w.records(t, "back")
	require.Len(t, back, 2, "%+v", back)
	assert.Equal(t, []string{"online", "online"}, []string{back[0].State, back[1].State})
}

// cluster starts three JetStream servers routed to each other in the test
// process and returns them once JetStream has a leader and three peers.
func cluster(t *testing.T) []*server.Server {
	t.Helper()
	servers, err := embedded.StartCluster("presence", 3, t.TempDir())
	require.NoError(t, err)
	for _, s := range servers {
		t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	}
	return servers
}

// With -replicas 3 on three servers, losing one (the devices stream's
// leader) loses no record, no gateway exits, changes made meanwhile are
// recorded within 20 s, and presencewatch prints them within 30 s.
func TestLosingOneOfThreeServersLosesNothingAndChangesGoOn(t *testing.T) {
	servers := cluster(t)
	var urls []string
	for _, s := range servers {
		urls = append(urls, s.ClientURL())
	}
	all := strings.Join(urls, ",")
	gA, addrA := runGate(t, "-nats", all, "-node", "gwA", "-timeout", "60s", "-lease", "5s", "-replicas", "3")
	gB, addrB := runGate(t, "-nats", all, "-node", "gwB", "-timeout", "60s", "-lease", "5s", "-replicas", "3")
	w := watcher(t, all)
	var leaving []*tdev
	for i := range 10 {
		hello(t, addrB, fmt.Sprintf("stay.%d", i))
		leaving = append(leaving, hello(t, addrA, fmt.Sprintf("leave.%d", i)))
	}
	w.waitRecords(t, "leave.9", 1, 5*time.Second)

	victim := servers[0]
	for _, s := range servers {
		if s.JetStreamIsStreamLeader("$G", "KV_presence-devices") {
			victim = s
		}
	}
	victim.Shutdown()
	lost := time.Now()
	for _, d := range leaving {
		require.NoError(t, d.Close())
	}
	for i := range 5 {
		hello(t, addrB, fmt.Sprintf("new.%d", i)) // OK means recorded
	}
	for i := range 10 {
		w.waitState(t, fmt.Sprintf("leave.%d", i), "offline", 30*time.Second-time.Since(lost))
	}
	for i := range 5 {
		w.waitRecords(t, fmt.Sprintf("new.%d", i), 1, 30*time.Second-time.Since(lost))
	}
	t.Logf("changes made after losing a server printed within %v", time.Since(lost))
	for i := range 10 {
		recs := w.records(t, fmt.Sprintf("stay.%d", i))
		assert.Equal(t, "online", recs[len(recs)-1].State, "stay.%d: %+v", i, recs)
		assert.Equal(t, "closed", w.records(t, fmt.Sprintf("leave.%d", i))[1].Reason)
	}
	for _, g := range []*proc{gA, gB} {
		select {
		case <-g.done:
			t.Fatalf("a gateway exited: %s", g.errText())
		default:
		}
	}
}
