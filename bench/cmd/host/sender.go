package main

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"time"
)

// A packet is packetSize bytes: a sequence number, then the send time in
// nanoseconds since the Unix epoch, both little-endian. Sender and host run
// on the same machine and read the same wall clock.
const packetSize = 16

// senderReport is what the sender prints when it stops.
type senderReport struct {
	Sent    uint64  `json:"sent"`
	Failed  uint64  `json:"failed"`
	Seconds float64 `json:"seconds"`
}

// runSender sends a stamped packet to addr on every tick of a ticker of
// the given period, until its standard input closes; it then prints a
// senderReport and exits.
//
// It paces itself with a Go ticker: it is a measuring tool, and the same
// for every cell. On Linux the runtime waits for timers in whole
// milliseconds when idle, so the achieved rate is lower than the period
// says; the report gives the rate achieved. Missed ticks are dropped, not
// caught up in bursts, so that packets stay evenly spaced.
func runSender(addr string, period time.Duration) {
	raddr, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		fatalChild("sender: %v", err)
	}
	conn, err := net.DialUDP("udp", nil, raddr)
	if err != nil {
		fatalChild("sender: %v", err)
	}
	stop := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		close(stop)
	}()

	var rep senderReport
	var buf [packetSize]byte
	tick := time.NewTicker(period)
	start := time.Now()
	for running := true; running; {
		select {
		case <-stop:
			running = false
		case <-tick.C:
			binary.LittleEndian.PutUint64(buf[0:8], rep.Sent+rep.Failed)
			binary.LittleEndian.PutUint64(buf[8:16], uint64(time.Now().UnixNano()))
			// A send fails while the host is not yet reading, or after
			// it closed its socket; those packets are counted apart.
			if _, err := conn.Write(buf[:]); err != nil {
				rep.Failed++
			} else {
				rep.Sent++
			}
		}
	}
	tick.Stop()
	rep.Seconds = time.Since(start).Seconds()
	if err := json.NewEncoder(os.Stdout).Encode(rep); err != nil {
		fatalChild("sender: %v", err)
	}
}

// fatalChild reports a child's failure on standard error and exits with a
// non-zero status, which the parent reports with the cell.
func fatalChild(format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
	os.Exit(1)
}
