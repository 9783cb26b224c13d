package loadtest

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCommasGroupsDigitsInThrees(t *testing.T) {
	for n, want := range map[int64]string{
		0: "0", 7: "7", 999: "999", 1000: "1,000", -1000: "-1,000", 123456: "123,456",
		1234567: "1,234,567", -999999: "-999,999", math.MinInt64: "-9,223,372,036,854,775,808",
	} {
		assert.Equal(t, want, Commas(n), "Commas(%d)", n)
	}
}

func TestPluralPicksTheNounByCount(t *testing.T) {
	assert.Equal(t, "1 round", Plural(1, "round", "rounds"))
	assert.Equal(t, "0 rounds", Plural(0, "round", "rounds"))
	assert.Equal(t, "12,000 rounds", Plural(12000, "round", "rounds"))
}

func TestMiBRoundsDownAndDashesZero(t *testing.T) {
	assert.Equal(t, "-", MiB(0))
	assert.Equal(t, "0 MiB", MiB(1<<20-1))
	assert.Equal(t, "3 MiB", MiB(3<<20+1))
}

// micros returns 1, 2, …, n microseconds.
func micros(n int) []int64 {
	s := make([]int64, n)
	for i := range s {
		s[i] = int64(i + 1)
	}
	return s
}

func TestQuantileTakesTheElementAtTheFloorOfPTimesNMinusOne(t *testing.T) {
	s := micros(100)
	for p, want := range map[float64]time.Duration{
		0: time.Microsecond, 0.5: 50 * time.Microsecond, 0.99: 99 * time.Microsecond, 1: 100 * time.Microsecond,
	} {
		got, ok := Quantile(s, p)
		require.True(t, ok)
		assert.Equal(t, want, got, "p%v", p)
	}
	got, ok := Quantile([]int64{-3}, 0.99)
	require.True(t, ok)
	assert.Equal(t, -3*time.Microsecond, got, "one value is every quantile")
}

func TestQuantileOfNothingIsNotMeasured(t *testing.T) {
	_, ok := Quantile(nil, 0.5)
	assert.False(t, ok)
	assert.Equal(t, "-", FormatQuantile(nil, 0.5))
}

func TestMedianAveragesTheMiddleTwoOfAnEvenCount(t *testing.T) {
	m, ok := Median([]float64{4, 1, 3, 2})
	require.True(t, ok)
	assert.Equal(t, 2.5, m)
	m, ok = Median([]float64{5, 1, 3})
	require.True(t, ok)
	assert.Equal(t, 3.0, m)
	_, ok = Median(nil)
	assert.False(t, ok)
}

func TestMedianLeavesItsInputAsItIs(t *testing.T) {
	vs := []float64{3, 1, 2}
	_, _ = Median(vs)
	assert.Equal(t, []float64{3, 1, 2}, vs)
}

func TestFormatLatenessKeepsTensOfMicrosecondsOnlyBelowTenMilliseconds(t *testing.T) {
	for d, want := range map[time.Duration]string{
		1234567 * time.Nanosecond:  "1.23ms",
		-5555 * time.Microsecond:   "-5.56ms",
		9994 * time.Microsecond:    "9.99ms",
		10 * time.Millisecond:      "10ms",
		12345 * time.Microsecond:   "12ms",
		-12500 * time.Microsecond:  "-13ms",
		2345678 * time.Microsecond: "2.346s",
	} {
		assert.Equal(t, want, FormatLateness(d), "FormatLateness(%v)", time.Duration(d))
	}
	assert.Equal(t, "990µs", FormatQuantile(micros(1000), 0.99))
}

func TestCPUPerConnIsMicrosecondsPerSecondPerConnection(t *testing.T) {
	v, ok := CPUPerConn(time.Second, 10*time.Second, 95)
	require.True(t, ok)
	assert.InDelta(t, 1e6/10/95.0, v, 1e-9)
	for _, zero := range [][3]float64{{0, 10, 95}, {1, 0, 95}, {1, 10, 0}} {
		_, ok := CPUPerConn(time.Duration(zero[0])*time.Second, time.Duration(zero[1])*time.Second, zero[2])
		assert.False(t, ok, "%v", zero)
	}
}

func TestOrDashStandsForWhatWasNotMeasured(t *testing.T) {
	assert.Equal(t, "x", OrDash(true, "x"))
	assert.Equal(t, "-", OrDash(false, "x"))
}

func TestLockedWriterKeepsConcurrentLinesWhole(t *testing.T) {
	var buf bytes.Buffer
	w := &LockedWriter{W: &buf}
	const writers, lines = 8, 200
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() {
			for j := range lines {
				fmt.Fprintf(w, "writer %d line %d\n", i, j)
			}
		})
	}
	wg.Wait()
	got := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	require.Len(t, got, writers*lines)
	seen := map[string]bool{}
	for _, l := range got {
		seen[l] = true
	}
	assert.Len(t, seen, writers*lines, "every line once and whole")
}

func TestCheckCellsSayOKOrWrong(t *testing.T) {
	c := Exact("closed", 1000, 1000)
	assert.Equal(t, Check{"closed", "1,000 / 1,000", true}, c)
	assert.Equal(t, "1,000 / 1,000  ok", c.Cell())
	c = Exact("closed", 999, 1000)
	assert.False(t, c.OK)
	assert.Equal(t, "999 / 1,000  WRONG", c.Cell())
	assert.Equal(t, Check{"failed", "0", true}, None("failed", 0))
	assert.Equal(t, "2  WRONG", None("failed", 2).Cell())
}

func TestTableAlignsColumnsTwoSpacesApart(t *testing.T) {
	var out bytes.Buffer
	tab := NewTable(&out, 0, []int{1, 22}, func(n int) string { return fmt.Sprint("col", n) })
	tab.Row("row", func(n int) string { return strings.Repeat("x", n%10) })
	tab.Row("a longer row", func(n int) string { return "-" })
	require.NoError(t, tab.Flush())
	assert.Equal(t, ""+
		"              col1  col22  \n"+
		"row           x     xx     \n"+
		"a longer row  -     -      \n", out.String())

	out.Reset()
	tab = NewTable(&out, tabwriter.AlignRight, []int{1, 22}, func(n int) string { return fmt.Sprint("col", n) })
	tab.Row("row", func(n int) string { return strings.Repeat("x", n%10) })
	require.NoError(t, tab.Flush())
	assert.Equal(t, ""+
		"       col1  col22\n"+
		"  row     x     xx\n", out.String())
}

func TestTableQuantilesAddsP50P99AndMaxRows(t *testing.T) {
	var out bytes.Buffer
	tab := NewTable(&out, 0, [][]int64{micros(1000), nil}, func([]int64) string { return "c" })
	tab.Quantiles("lateness", func(s []int64) []int64 { return s })
	require.NoError(t, tab.Flush())
	assert.Equal(t, ""+
		"              c      c  \n"+
		"lateness p50  500µs  -  \n"+
		"lateness p99  990µs  -  \n"+
		"lateness max  1ms    -  \n", out.String())
}
