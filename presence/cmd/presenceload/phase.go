package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-schedule/schedule/presence"
	"github.com/go-schedule/schedule/presence/embedded"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// result is what one mode of one repetition measured.
type result struct {
	on                 bool
	devices, connected int
	connectTime        time.Duration
	connectMsgs        int64 // engine inbound messages while connecting
	beats              int64 // heartbeats in the quiet window
	quietMsgs          int64 // engine inbound messages in the quiet window
	quiet              time.Duration
	cpuPerDevSec       float64 // gateway CPU, µs per device per second
	rssPerDev          float64 // gateway resident bytes per device
	killed             killResult
}

// killResult is what the kill of one gateway caused.
type killResult struct {
	devices   int           // devices online at the killed gateway when it was killed
	notOnline int           // its devices that were not online there by then
	recorded  int           // devices recorded offline once
	twice     int           // devices recorded offline more than once
	missing   int           // devices not recorded within 2×lease + 5 s
	last      time.Duration // from the kill to the last record
	msgs      int64         // engine inbound messages from the kill to 2 leases after the last record
}

func (r result) raw() string {
	return fmt.Sprintf("raw presence=%s devices=%d connected=%d connect=%s connect_msgs=%d quiet=%s beats=%d quiet_msgs=%d cpu_us_per_dev_s=%.3f rss_per_dev=%.0f kill_devices=%d kill_not_online=%d kill_recorded=%d kill_twice=%d kill_missing=%d kill_last=%s kill_msgs=%d",
		onOff(r.on), r.devices, r.connected, r.connectTime.Round(time.Millisecond), r.connectMsgs, r.quiet, r.beats, r.quietMsgs,
		r.cpuPerDevSec, r.rssPerDev, r.killed.devices, r.killed.notOnline, r.killed.recorded, r.killed.twice, r.killed.missing, r.killed.last.Round(time.Millisecond), r.killed.msgs)
}

// phaseNo numbers the phases of this run.
var phaseNo int

// phase runs one mode: engine (presence on), gateways, clients, the quiet
// window, the kill.
func phase(ctx context.Context, c config, on bool) (result, error) {
	r := result{on: on, devices: c.devices, quiet: c.quiet}
	var srv *server.Server
	var url string
	if on {
		dir, err := os.MkdirTemp("", "presenceload-")
		if err != nil {
			return r, err
		}
		defer os.RemoveAll(dir)
		if srv, err = embedded.Start(embedded.Options{StoreDir: dir}); err != nil {
			return r, err
		}
		defer func() { srv.Shutdown(); srv.WaitForShutdown() }()
		url = srv.ClientURL()
	}
	inMsgs := func() int64 {
		if srv == nil {
			return 0
		}
		v, _ := srv.Varz(nil)
		return v.InMsgs
	}

	gates := make([]*child, c.gateways)
	addrs := make([]string, c.gateways)
	base := make([]usage, c.gateways)
	defer func() {
		for _, g := range gates {
			if g != nil {
				g.stop(time.Minute)
			}
		}
	}()
	for i := range gates {
		args := []string{"-nats", url, "-node", fmt.Sprintf("gw%d", i), "-timeout", c.timeout.String(),
			"-lease", c.lease.String(), "-presence=" + strconv.FormatBool(on)}
		if c.cpuprofile != "" {
			args = append(args, "-cpuprofile", fmt.Sprintf("%s-gw%d-%s-%d.pprof", c.cpuprofile, i, onOff(on), phaseNo+1),
				"-profilefor", c.quiet.String())
		}
		g, err := spawn("gate", args...)
		if err != nil {
			return r, err
		}
		gates[i] = g
		l, err := g.wait("listening on ", time.Minute)
		if err != nil {
			return r, err
		}
		addrs[i] = strings.TrimPrefix(l, "listening on ")
		base[i], _ = procUsage(g.cmd.Process.Pid)
	}

	// Clients: at most perProcess devices each; source addresses one per
	// 20,000 devices, so that no address runs out of its 28,232 ephemeral
	// ports, and fresh ones for each phase (127.<phase>.0.x), because the
	// ports of the phase before stay in TIME_WAIT for a minute.
	phaseNo++
	var sources []string
	for i := range (c.devices+19_999)/20_000 + 1 {
		sources = append(sources, fmt.Sprintf("127.%d.0.%d", phaseNo%254+1, i+2))
	}
	nClients := (c.devices + perProcess - 1) / perProcess
	clients := make([]*child, nClients)
	defer func() {
		for _, cl := range clients {
			if cl != nil {
				cl.stop(time.Minute)
			}
		}
	}()
	msgs0, start := inMsgs(), time.Now()
	per := (c.devices + nClients - 1) / nClients
	for k := range clients {
		first, count := k*per, min(per, c.devices-k*per)
		cl, err := spawn("client", "-gates", strings.Join(addrs, ","), "-sources", strings.Join(sources, ","),
			"-first", strconv.Itoa(first), "-count", strconv.Itoa(count), "-beat", c.beat.String())
		if err != nil {
			return r, err
		}
		clients[k] = cl
	}
	for _, cl := range clients {
		l, err := cl.wait("ready ", 30*time.Minute)
		if err != nil {
			return r, err
		}
		var ok, failed int
		fmt.Sscanf(l, "ready %d %d", &ok, &failed)
		r.connected += ok
	}
	r.connectTime, r.connectMsgs = time.Since(start), inMsgs()-msgs0

	// The quiet window: every device heartbeating, nothing changing.
	sumBeats := func() int64 {
		var n int64
		for _, cl := range clients {
			var b int64
			fmt.Sscanf(cl.last("beats "), "beats %d", &b)
			n += b
		}
		return n
	}
	time.Sleep(c.beat) // every device has beaten once: the rate is steady
	u0 := make([]usage, len(gates))
	for i, g := range gates {
		_ = g.cmd.Process.Signal(syscall.SIGUSR1)
		freedBefore := g.count("freed")
		for deadline := time.Now().Add(10 * time.Second); g.count("freed") == freedBefore && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
		}
		u0[i], _ = procUsage(g.cmd.Process.Pid)
	}
	b0, q0, t0 := sumBeats(), inMsgs(), time.Now()
	time.Sleep(c.quiet)
	b1, q1, el := sumBeats(), inMsgs(), time.Since(t0)
	var cpu time.Duration
	var rss int64
	for i, g := range gates {
		u, _ := procUsage(g.cmd.Process.Pid)
		cpu += u.cpu - u0[i].cpu
		rss += u0[i].rss - base[i].rss // just after returning freed memory
	}
	r.beats, r.quietMsgs = b1-b0, q1-q0
	r.cpuPerDevSec = float64(cpu.Microseconds()) / el.Seconds() / float64(max(r.connected, 1))
	r.rssPerDev = float64(rss) / float64(max(r.connected, 1))

	if on && c.kill {
		k, err := killOne(ctx, c, url, gates[0], inMsgs)
		if err != nil {
			return r, err
		}
		r.killed = k
	}
	return r, nil
}

// killOne kills gateway gw0 with SIGKILL and follows the records of its
// devices (device i is at gateway i mod gateways).
func killOne(ctx context.Context, c config, url string, victim *child, inMsgs func() int64) (killResult, error) {
	var k killResult
	nc, err := nats.Connect(url)
	if err != nil {
		return k, err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return k, err
	}
	st, err := presence.BindStore(ctx, js, "")
	if err != nil {
		return k, err
	}
	// The victim's devices online at it when the watch has replayed the
	// current state, each with the offline records seen for it since: a
	// device the gateway had already recorded offline is not the kill's.
	const victimNode = "gw0"          // the gateway killed: gates[0], node gw0
	atVictim := make(map[string]bool) // replay: the victim's devices → online there
	for i := 0; i < c.devices; i += c.gateways {
		atVictim[deviceID(i)] = false
	}
	mine := make(map[string]int)
	var mu sync.Mutex
	var lastAt time.Time
	replaying := true
	replayed := make(chan struct{})
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	watchDone := make(chan error, 1)
	go func() {
		watchDone <- st.Watch(wctx, func(rec presence.Record) {
			mu.Lock()
			defer mu.Unlock()
			if replaying {
				if _, ok := atVictim[rec.Device]; ok {
					atVictim[rec.Device] = rec.State == presence.Online && rec.Node == victimNode
				}
				return
			}
			if n, ok := mine[rec.Device]; ok && rec.State == presence.Offline {
				mine[rec.Device] = n + 1
				lastAt = time.Now()
			}
		}, func(int) {
			mu.Lock()
			defer mu.Unlock()
			replaying = false
			for id, online := range atVictim {
				if online {
					mine[id] = 0
				}
			}
			close(replayed)
		})
	}()
	select {
	case <-replayed:
	case err := <-watchDone:
		return k, err
	}
	mu.Lock()
	k.devices, k.notOnline = len(mine), len(atVictim)-len(mine)
	mu.Unlock()
	m0 := inMsgs()
	victim.kill()
	killed := time.Now()
	deadline := killed.Add(2*c.lease + 5*time.Second)
	for time.Now().Before(deadline.Add(10 * time.Second)) {
		mu.Lock()
		done := 0
		for _, n := range mine {
			if n > 0 {
				done++
			}
		}
		mu.Unlock()
		if done == k.devices {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(2 * c.lease) // late duplicates would come now
	mu.Lock()
	defer mu.Unlock()
	for _, n := range mine {
		switch {
		case n == 1:
			k.recorded++
		case n > 1:
			k.recorded++
			k.twice++
		default:
			k.missing++
		}
	}
	if !lastAt.IsZero() {
		k.last = lastAt.Sub(killed)
		if lastAt.After(deadline) {
			k.missing = k.devices // not all within the bound
		}
	}
	k.msgs = inMsgs() - m0
	return k, nil
}
