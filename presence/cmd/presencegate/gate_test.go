package main

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBadFlagsExitTwoWithAMessage(t *testing.T) {
	for _, args := range [][]string{
		{"-timeout", "1s", "-bogus"},
		{"-timeout", "1s", "-lease", "500ms"},
		{"-timeout", "1s", "-lease", "1500ms"},
		{"-timeout", "0"},
		{},
		{"-timeout", "1s", "-replicas", "0"},
		{"-timeout", "1s", "-replicas", "6"},
		{"-timeout", "1s", "-node", "bad.node"},
		{"-timeout", "1s", "-node", strings.Repeat("n", 65)},
		{"-timeout", "1s", "-nats", "nats://127.0.0.1:4222"},
		{"-timeout", "1s", "extra"},
	} {
		p := start(t, gateBin, args...)
		assert.Equal(t, 2, p.exitCode(t, 10*time.Second), "%q", args)
		assert.NotEmpty(t, p.errText(), "%q", args)
	}
}

func TestUnreachableEngineExitsOneWithin15sNamingTheURL(t *testing.T) {
	for _, bin := range []string{gateBin, watchBin} {
		url := "nats://127.0.0.1:1" // nothing listens on port 1
		began := time.Now()
		p := start(t, bin, "-nats", url, "-node", "gw1", "-timeout", "1s")
		if bin == watchBin {
			p = start(t, bin, "-nats", url)
		}
		assert.Equal(t, 1, p.exitCode(t, 20*time.Second), bin)
		assert.Less(t, time.Since(began), 15*time.Second)
		assert.Contains(t, p.errText(), url)
	}
}

func TestEmbeddedGatePrintsItsNatsURLAndRecordsADevice(t *testing.T) {
	g, addr := runGate(t, "-timeout", "10s", "-lease", "1s")
	l := g.waitLine(t, "nats on nats://", time.Second)
	url := l[strings.Index(l, "nats://"):]
	w := watcher(t, url)
	hello(t, addr, "a.b*>:/#$%")
	recs := w.waitRecords(t, "a.b*>:/#$%", 1, recordWithin)
	assert.Equal(t, []string{"online", "local", "connect"}, []string{recs[0].State, recs[0].Node, recs[0].Reason})
	assert.NotZero(t, recs[0].Rev)
}

func TestBadFirstLinesGetERRAndRecordNothing(t *testing.T) {
	url := engine(t)
	_, addr := runGate(t, "-nats", url, "-node", "gw1", "-timeout", "10s", "-lease", "1s")
	w := watcher(t, url)
	for _, first := range []string{"HI x\n", "HELLO \n", "HELLO a b\n", "HELLO " + strings.Repeat("x", 129) + "\n", "HELLO caf\xc3\xa9\n", "hello x\n"} {
		d := dialDevice(t, addr)
		_, err := d.Write([]byte(first))
		require.NoError(t, err)
		assert.True(t, strings.HasPrefix(d.line(t, 5*time.Second), "ERR"), "%q", first)
		assert.True(t, d.closedWithin(5*time.Second), "%q", first)
	}
	hello(t, addr, "good") // a record after them all: the watch has seen any before it
	w.waitRecords(t, "good", 1, recordWithin)
	w.mu.Lock()
	defer w.mu.Unlock()
	assert.Len(t, w.lines, 2, "replayed and good only: %q", w.lines)
}

func TestHeartbeatsKeepADeviceAndSilenceClosesItAsTimeout(t *testing.T) {
	url := engine(t)
	_, addr := runGate(t, "-nats", url, "-node", "gw1", "-timeout", "1s", "-lease", "1s")
	w := watcher(t, url)
	d := hello(t, addr, "beating")
	for range 6 { // 3 s of heartbeats, three timeouts long
		time.Sleep(500 * time.Millisecond)
		_, err := d.Write([]byte("."))
		require.NoError(t, err)
	}
	assert.Len(t, w.records(t, "beating"), 1, "heartbeats record nothing")
	assert.True(t, d.closedWithin(5*time.Second), "silent, the device is closed")
	recs := w.waitRecords(t, "beating", 2, recordWithin)
	assert.Equal(t, "timeout", recs[1].Reason)
	assert.Equal(t, "offline", recs[1].State)
}

func TestADeviceThatClosesIsRecordedClosed(t *testing.T) {
	url := engine(t)
	_, addr := runGate(t, "-nats", url, "-node", "gw1", "-timeout", "10s", "-lease", "1s")
	w := watcher(t, url)
	d := hello(t, addr, "leaver")
	require.NoError(t, d.Close())
	recs := w.waitRecords(t, "leaver", 2, recordWithin)
	assert.Equal(t, []string{"online", "offline"}, []string{recs[0].State, recs[1].State})
	assert.Equal(t, "closed", recs[1].Reason)
}

func TestSilenceBeforeHelloClosesAndRecordsNothing(t *testing.T) {
	url := engine(t)
	_, addr := runGate(t, "-nats", url, "-node", "gw1", "-timeout", "1s", "-lease", "1s")
	d := dialDevice(t, addr)
	assert.True(t, d.closedWithin(5*time.Second))
}

func TestMoveBetweenGatewaysClosesTheOldConnectionWithin3s(t *testing.T) {
	url := engine(t)
	_, addrA := runGate(t, "-nats", url, "-node", "gwA", "-timeout", "1s", "-lease", "1s")
	_, addrB := runGate(t, "-nats", url, "-node", "gwB", "-timeout", "10s", "-lease", "1s")
	w := watcher(t, url)
	old := hello(t, addrA, "mover")
	w.waitRecords(t, "mover", 1, recordWithin) // so that the watch cannot skip it
	hello(t, addrB, "mover")
	assert.True(t, old.closedWithin(3*time.Second), "the old connection is closed within 3 s")
	time.Sleep(2 * time.Second) // past gwA's timeout: its old timer must record nothing
	recs := w.waitRecords(t, "mover", 2, recordWithin)
	require.Len(t, recs, 2, "%+v", recs)
	assert.Equal(t, []string{"gwA", "gwB"}, []string{recs[0].Node, recs[1].Node})
	assert.Equal(t, "online", recs[1].State)
	assert.Greater(t, recs[1].Rev, recs[0].Rev)
}

func TestSignalRecordsShutdownAndExitsZero(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		url := engine(t)
		g, addr := runGate(t, "-nats", url, "-node", "gw1", "-timeout", "10s", "-lease", "1s")
		w := watcher(t, url)
		devs := []*tdev{hello(t, addr, "d1"), hello(t, addr, "d2")}
		g.signal(t, sig)
		assert.Equal(t, 0, g.exitCode(t, 20*time.Second), sig)
		g.waitLine(t, "recorded 2 devices offline", time.Second)
		for i, id := range []string{"d1", "d2"} {
			recs := w.waitRecords(t, id, 2, recordWithin)
			assert.Equal(t, "shutdown", recs[1].Reason)
			assert.True(t, devs[i].closedWithin(time.Second))
		}
	}
}

func TestWatchStartedBeforeAnyGatewayPrintsReplayedZeroThenFollows(t *testing.T) {
	url := engine(t)
	w := watcher(t, url)
	w.waitLine(t, `{"replayed":0}`, time.Second)
	_, addr := runGate(t, "-nats", url, "-node", "gw1", "-timeout", "10s", "-lease", "1s")
	hello(t, addr, "first")
	w.waitRecords(t, "first", 1, recordWithin)
}

func TestWatchReplaysCurrentStateThenCountsIt(t *testing.T) {
	url := engine(t)
	_, addr := runGate(t, "-nats", url, "-node", "gw1", "-timeout", "10s", "-lease", "1s")
	hello(t, addr, "x")
	d := hello(t, addr, "y")
	require.NoError(t, d.Close())
	watcher(t, url).waitState(t, "y", "offline", recordWithin)
	w := watcher(t, url)
	w.waitLine(t, `{"replayed":2}`, time.Second)
	assert.Equal(t, "offline", w.records(t, "y")[0].State, "the current state only")
	w.signal(t, syscall.SIGTERM)
	assert.Equal(t, 0, w.exitCode(t, 10*time.Second))
}
