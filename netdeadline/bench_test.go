//go:build unix

package netdeadline_test

import (
	"flag"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-schedule/schedule"
	"github.com/go-schedule/schedule/netdeadline"
)

// BenchmarkSetDeadline moves the deadline of a random one of n connections
// to now plus 90 s, as a server does before every packet or request: with
// the runtime's SetDeadline on the socket itself (deadline=runtime), and
// through the wrapper (deadline=netdeadline). Each row reports, besides
// the wall time per move, the process's CPU time per move (cpu-ns/op: user
// and system, every thread, the scheduler's own goroutines included), which
// a machine busy with other work disturbs far less; the wrapper's row
// reports both as ratios to the runtime's at the same n (x-runtime,
// x-runtime-cpu):
//
//	go test ./netdeadline -run '^$' -bench SetDeadline -count 3
//
// The sockets are Unix stream socketpairs with one end closed, one open
// file each: the runtime keeps a socket's deadline in its poll descriptor
// whatever the socket's type. A process may hold at most ulimit -n open
// files, so the runtime's row runs only where n of them fit
// (-netdeadline.conns sets the sizes, after the package); the wrapper's row
// always runs, its connections spread over as many sockets as fit, which it
// never touches while no deadline passes. Where the runtime's row cannot
// run, compare the wrapper with the runtime's largest row: the runtime's
// cost grows with n, as its timers and poll descriptors leave the caches.
//
// A run of fewer than 1,000 iterations (CI's -benchtime 1x) uses at most
// 1,000 connections.
var benchConns = flag.String("netdeadline.conns", "10000,100000", "comma-separated numbers of connections for BenchmarkSetDeadline")

// spareFiles is how many open files the benchmark leaves to the process
// (the test binary's own, the scheduler's, a dup while a socket is made).
const spareFiles = 100

// benchTimeout is the deadline's distance: 1.5 times a keep-alive of 60 s,
// so that no deadline passes during a benchmark.
const benchTimeout = 90 * time.Second

func BenchmarkSetDeadline(b *testing.B) {
	files := openFileLimit(b) - spareFiles
	for _, n := range benchSizes(b) {
		var runtimeNs, runtimeCPU float64
		b.Run(fmt.Sprintf("conns=%d/deadline=runtime", n), func(b *testing.B) {
			if n > files {
				b.Skipf("%d sockets need %d open files; this process may have %d (ulimit -n)", n, n+spareFiles, files+spareFiles)
			}
			conns := socketConns(b, n)
			runtimeNs, runtimeCPU = benchSet(b, conns)
		})
		b.Run(fmt.Sprintf("conns=%d/deadline=netdeadline", n), func(b *testing.B) {
			s, err := schedule.New(4)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(s.Shutdown)
			socks := socketConns(b, min(n, files))
			conns := make([]net.Conn, n)
			for i := range conns {
				c, err := netdeadline.NewConn(socks[i%len(socks)], s)
				if err != nil {
					b.Fatal(err)
				}
				conns[i] = c
			}
			ns, cpu := benchSet(b, conns)
			if runtimeNs > 0 && runtimeCPU > 0 {
				b.ReportMetric(ns/runtimeNs, "x-runtime")
				b.ReportMetric(cpu/runtimeCPU, "x-runtime-cpu")
			}
		})
	}
}

// benchSet runs the timed loop over conns and returns its wall and CPU
// time per move, in ns.
func benchSet(b *testing.B, conns []net.Conn) (ns, cpu float64) {
	for _, c := range conns { // every connection starts with a deadline
		if err := c.SetDeadline(time.Now().Add(benchTimeout)); err != nil {
			b.Fatal(err)
		}
	}
	r := rng(0x9e3779b97f4a7c15)
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := processCPU(b)
	for b.Loop() {
		if err := conns[r.intn(len(conns))].SetDeadline(time.Now().Add(benchTimeout)); err != nil {
			b.Fatal(err)
		}
	}
	cpu = float64(processCPU(b)-cpu0) / float64(b.N)
	b.ReportMetric(cpu, "cpu-ns/op")
	return float64(b.Elapsed().Nanoseconds()) / float64(b.N), cpu
}

// processCPU returns the CPU time, user and system, that the process has
// used so far, in ns.
func processCPU(b *testing.B) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// socketConns returns n connected Unix stream sockets, each the one open
// end of a socketpair, closed at the benchmark's end.
func socketConns(b *testing.B, n int) []net.Conn {
	b.Helper()
	conns := make([]net.Conn, n)
	for i := range conns {
		fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
		if err != nil {
			b.Fatal(err)
		}
		syscall.Close(fds[1])
		f := os.NewFile(uintptr(fds[0]), "socketpair")
		c, err := net.FileConn(f) // a dup of f's descriptor
		f.Close()
		if err != nil {
			b.Fatal(err)
		}
		conns[i] = c
	}
	b.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	return conns
}

// openFileLimit returns the process's limit on open files.
func openFileLimit(b *testing.B) int {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		b.Fatal(err)
	}
	return int(min(lim.Cur, 1<<30))
}

// benchSizes returns -netdeadline.conns, each at most 1,000 when -benchtime
// asks for fewer than 1,000 iterations.
func benchSizes(b *testing.B) []int {
	small := false
	if f := flag.Lookup("test.benchtime"); f != nil {
		if v, ok := strings.CutSuffix(f.Value.String(), "x"); ok {
			if iters, err := strconv.Atoi(v); err == nil && iters < 1000 {
				small = true
			}
		}
	}
	var sizes []int
	for _, f := range strings.Split(*benchConns, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			b.Fatalf("-netdeadline.conns: %q is not a positive number", f)
		}
		if small {
			n = min(n, 1000)
		}
		if !slices.Contains(sizes, n) {
			sizes = append(sizes, n)
		}
	}
	return sizes
}

// rng is a xorshift generator: cheap enough not to show in the figures.
type rng uint64

func (r *rng) intn(n int) int {
	*r ^= *r << 13
	*r ^= *r >> 7
	*r ^= *r << 17
	return int(uint64(*r) % uint64(n))
}
