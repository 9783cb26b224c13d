package main

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// procField reads the number after "key:" in a /proc file whose lines look
// like "MemAvailable:   123456 kB", in bytes when the unit is kB.
func procField(path, key string) (uint64, bool) {
	f, err := os.Open(path)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok || name != key {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			return 0, false
		}
		v, err := strconv.ParseUint(fields[0], 10, 64)
		if err != nil {
			return 0, false
		}
		if len(fields) > 1 && fields[1] == "kB" {
			v *= 1024
		}
		return v, true
	}
	return 0, false
}

// rss is the process's resident set now; peakRSS its highest so far.
func rss() (uint64, bool)     { return procField("/proc/self/status", "VmRSS") }
func peakRSS() (uint64, bool) { return procField("/proc/self/status", "VmHWM") }

// memAvailable is the kernel's estimate of the memory a new process can
// have without swapping; memTotal the machine's RAM.
func memAvailable() (uint64, bool) { return procField("/proc/meminfo", "MemAvailable") }
func memTotal() (uint64, bool)     { return procField("/proc/meminfo", "MemTotal") }

// cpuModel names the processor, from /proc/cpuinfo.
func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown CPU"
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if name, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(name) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown CPU"
}
