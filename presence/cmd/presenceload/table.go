package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"time"
)

// printTable prints the results as one Markdown table, with the machine,
// the Go version and the date.
func printTable(w io.Writer, c config, rs []result) {
	fmt.Fprintf(w, "\npresenceload: %d devices, %d gateways, lease %v, heartbeat every %v, quiet window %v; %s; %s; %s\n\n",
		c.devices, c.gateways, c.lease, c.beat, c.quiet, cpuModel(), runtime.Version(), time.Now().UTC().Format("2006-01-02"))
	fmt.Fprintln(w, "| presence | connected | connect s | msgs/online | heartbeats | engine msgs in quiet | msgs/heartbeat | gateway CPU µs/device/s | gateway RSS B/device | killed gw devices | node_lost once | twice | missing | kill→last | msgs/node_lost |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, r := range rs {
		perOnline, perBeat, perLost := "-", "-", "-"
		kill := "- | - | - | - | -"
		if r.on {
			perOnline = fmt.Sprintf("%.2f", float64(r.connectMsgs)/float64(max(r.connected, 1)))
			perBeat = fmt.Sprintf("%.5f", float64(r.quietMsgs)/float64(max(r.beats, 1)))
			if r.killed.devices > 0 {
				perLost = fmt.Sprintf("%.2f", float64(r.killed.msgs)/float64(max(r.killed.recorded, 1)))
				devices := fmt.Sprint(r.killed.devices)
				if r.killed.notOnline > 0 {
					// Recorded offline before the kill: not the kill's to record.
					devices += fmt.Sprintf(" (%d were offline)", r.killed.notOnline)
				}
				kill = fmt.Sprintf("%s | %d | %d | %d | %.2fs", devices, r.killed.recorded-r.killed.twice, r.killed.twice, r.killed.missing, r.killed.last.Seconds())
			}
		}
		fmt.Fprintf(w, "| %s | %d | %.1f | %s | %d | %d | %s | %.3f | %.0f | %s | %s |\n",
			onOff(r.on), r.connected, r.connectTime.Seconds(), perOnline, r.beats, r.quietMsgs, perBeat, r.cpuPerDevSec, r.rssPerDev, kill, perLost)
	}
	var on, off []result
	for _, r := range rs {
		if r.on {
			on = append(on, r)
		} else {
			off = append(off, r)
		}
	}
	if len(on) > 0 && len(off) > 0 {
		fmt.Fprintf(w, "\ngateway CPU per device, presence on / off: %.2f; RSS per device, on / off: %.2f\n",
			mean(on, func(r result) float64 { return r.cpuPerDevSec })/mean(off, func(r result) float64 { return r.cpuPerDevSec }),
			mean(on, func(r result) float64 { return r.rssPerDev })/mean(off, func(r result) float64 { return r.rssPerDev }))
	}
}

func mean(rs []result, f func(result) float64) float64 {
	s := 0.0
	for _, r := range rs {
		s += f(r)
	}
	return s / float64(len(rs))
}

func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "cpu unknown"
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "model name"); ok {
			return strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
		}
	}
	return "cpu unknown"
}
