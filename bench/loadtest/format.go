package loadtest

import (
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Quantile returns quantile p, from 0 to 1, of sorted, a sorted slice of
// microseconds: the element at index ⌊p·(n-1)⌋, so that 0 is the least, 1
// the largest and 0.5 the median of an odd number. It returns false for an
// empty slice.
func Quantile(sorted []int64, p float64) (time.Duration, bool) {
	if len(sorted) == 0 {
		return 0, false
	}
	i := int(p * float64(len(sorted)-1))
	return time.Duration(sorted[i]) * time.Microsecond, true
}

// Median returns the median of vs, the mean of the two middle values for
// an even number, and false if vs is empty. It leaves vs as it is.
func Median(vs []float64) (float64, bool) {
	if len(vs) == 0 {
		return 0, false
	}
	s := slices.Sorted(slices.Values(vs))
	if len(s)%2 == 1 {
		return s[len(s)/2], true
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2, true
}

// fineLateness is the lateness below which FormatLateness keeps tens of
// microseconds, and above which whole milliseconds: a timer's own
// granularity is about a millisecond, so finer figures matter only below
// a few of them.
const fineLateness = 10 * time.Millisecond

// FormatLateness formats a lateness for a report: to 10 µs within
// ±fineLateness, to the millisecond beyond.
func FormatLateness(d time.Duration) string {
	if d < fineLateness && d > -fineLateness {
		return d.Round(10 * time.Microsecond).String()
	}
	return d.Round(time.Millisecond).String()
}

// FormatQuantile formats quantile p of sorted microseconds (see Quantile)
// with FormatLateness, or returns "-" for an empty slice.
func FormatQuantile(sorted []int64, p float64) string {
	d, ok := Quantile(sorted, p)
	return OrDash(ok, FormatLateness(d))
}

// OrDash returns s if ok, and "-", a figure not measured, if not.
func OrDash(ok bool, s string) string {
	if !ok {
		return "-"
	}
	return s
}

// CPUPerConn returns the CPU time cpu spent over window per second and per
// connection, avgConns being open on average, in microseconds per second.
// It returns false where a figure is 0: nothing was measured.
func CPUPerConn(cpu, window time.Duration, avgConns float64) (float64, bool) {
	if avgConns == 0 || window == 0 || cpu == 0 {
		return 0, false
	}
	return float64(cpu.Microseconds()) / window.Seconds() / avgConns, true
}

// MiB formats b bytes in whole MiB, rounded down, or returns "-" for 0, a
// size not measured.
func MiB(b int64) string {
	if b == 0 {
		return "-"
	}
	return strconv.FormatInt(b>>20, 10) + " MiB"
}

// Commas formats n with a comma between groups of three digits.
func Commas(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Plural formats n, with commas, and the singular noun one or the plural
// many, as n is 1 or not.
func Plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return Commas(int64(n)) + " " + many
}

// LockedWriter serializes writes to W, so that goroutines writing whole
// lines do not interleave them. Its zero value with W set is ready to use.
type LockedWriter struct {
	mu sync.Mutex
	W  io.Writer
}

// Write writes p to W, holding the lock.
func (l *LockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.W.Write(p)
}
