package loadtest

import (
	"io"
	"strings"
	"text/tabwriter"
)

// Check is a count that a run must get exactly right, as a report shows it.
type Check struct {
	Name  string // what is counted
	Value string // the count, formatted
	OK    bool
}

// Exact returns the check that got is want, shown as "got / want".
func Exact(name string, got int64, want int) Check {
	return Check{name, Commas(got) + " / " + Commas(int64(want)), got == int64(want)}
}

// None returns the check that got is 0.
func None(name string, got int64) Check {
	return Check{name, Commas(got), got == 0}
}

// Cell returns the check's value and verdict, "ok" or "WRONG", for a
// table.
func (c Check) Cell() string {
	if c.OK {
		return c.Value + "  ok"
	}
	return c.Value + "  WRONG"
}

// Table writes a report's table: a column per result, a row per figure,
// the columns two spaces apart. The rows go out on Flush.
type Table[C any] struct {
	tw   *tabwriter.Writer
	cols []C
}

// NewTable starts a table on w with a column for each of cols, headed by
// head. flags are tabwriter's: 0 to align the cells left, or
// tabwriter.AlignRight.
func NewTable[C any](w io.Writer, flags uint, cols []C, head func(C) string) *Table[C] {
	t := &Table[C]{tw: tabwriter.NewWriter(w, 0, 0, 2, ' ', flags), cols: cols}
	t.Row("", head)
	return t
}

// Row adds the row name, whose cell in each column is cell of the column.
func (t *Table[C]) Row(name string, cell func(C) string) {
	cells := make([]string, len(t.cols))
	for i, c := range t.cols {
		cells[i] = cell(c)
	}
	_, _ = io.WriteString(t.tw, name+"\t"+strings.Join(cells, "\t")+"\t\n")
}

// Flush writes the table out.
func (t *Table[C]) Flush() error { return t.tw.Flush() }

// quantiles are the quantiles that Table.Quantiles shows, and the words
// that name them.
var quantiles = []struct {
	name string
	p    float64
}{{"p50", 0.5}, {"p99", 0.99}, {"max", 1}}

// Quantiles adds three rows, name p50, name p99 and name max, whose cells
// are those quantiles of sorted(column), sorted microseconds, formatted
// by FormatQuantile.
func (t *Table[C]) Quantiles(name string, sorted func(C) []int64) {
	for _, q := range quantiles {
		t.Row(name+" "+q.name, func(c C) string { return FormatQuantile(sorted(c), q.p) })
	}
}
