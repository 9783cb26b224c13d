package main

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// chartSeries is one bar series of a chart panel.
type chartSeries struct {
	label, wl, key string
	color          color.Color
}

// chartPanel is one bar chart of the image. Bars above clip (when it is
// positive) are cut at the axis and marked.
type chartPanel struct {
	title, ylabel string
	clip          float64
	series        []chartSeries
}

// writeChart draws ns/heartbeat and bytes/device per implementation, for
// the native re-arm with the device's own timeout, the native re-arm with
// mixed timeouts and cancel+add, as one image with two panels; the format
// (SVG or PNG) follows path's extension.
//
// Every bar carries its value. A bar cut at the top of the axis is drawn
// up to the axis, marked with a triangle, and its label says "cut". A
// missing bar says why it is missing, in place of the bar: "n/a" when the
// library has no such call, "deadlocked" when the run hung, "failed" when
// it failed otherwise.
func writeChart(r *report, path string) error {
	var names []string
	for _, n := range implNames() {
		if r.hasImpl(n) {
			names = append(names, n)
		}
	}
	blue := color.RGBA{R: 0x31, G: 0x6b, B: 0xb5, A: 0xff}
	green := color.RGBA{R: 0x3a, G: 0x9a, B: 0x5b, A: 0xff}
	orange := color.RGBA{R: 0xe6, G: 0x7e, B: 0x22, A: 0xff}
	series := func(key string) []chartSeries {
		return []chartSeries{
			{"native re-arm, own timeout", "heartbeat-reset", key, blue},
			{"native re-arm, mixed timeouts", "heartbeat-mixed", key, green},
			{"cancel + add", "heartbeat-canceladd", key, orange},
		}
	}
	// Each axis is cut at twice the runtime's cancel+add figure so that one
	// costly implementation does not flatten the others.
	clipAt := func(key string) float64 {
		if s, ok := r.get("heartbeat-canceladd", baselineImpl, key); ok {
			return 2 * s.Median
		}
		return 0
	}
	panels := []chartPanel{
		{"Heartbeat cost (median). No bar: n/a = no such call in the library; deadlocked, failed = every run of it did", "ns per heartbeat", clipAt("ns_hb"), series("ns_hb")},
		{"Live heap per device after heartbeats, caller's handles included (median)", "bytes per device", clipAt("bytes_device"), series("bytes_device")},
	}
	plots := make([][]*plot.Plot, len(panels))
	for pi, panel := range panels {
		p, err := drawPanel(r, names, panel)
		if err != nil {
			return err
		}
		plots[pi] = []*plot.Plot{p}
	}

	const width, height = 10 * vg.Inch, 10 * vg.Inch
	var c interface {
		vg.CanvasSizer
		io.WriterTo
	}
	if strings.HasSuffix(path, ".png") {
		c = vgimg.PngCanvas{Canvas: vgimg.New(width, height)}
	} else {
		c = vgsvg.New(width, height)
	}
	dc := draw.New(c)
	tiles := draw.Tiles{Rows: len(panels), Cols: 1, PadX: vg.Millimeter * 4, PadY: vg.Millimeter * 6, PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 4}
	canvases := plot.Align(plots, tiles, dc)
	for i := range plots {
		plots[i][0].Draw(canvases[i][0])
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := c.WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// drawPanel builds one panel: a group of bars per implementation.
func drawPanel(r *report, names []string, panel chartPanel) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = panel.title
	p.Y.Label.Text = panel.ylabel
	p.Legend.Top = true
	p.Legend.Left = true
	p.Legend.XOffs = vg.Points(40)

	// The axis top: the cut, or the largest value.
	top := 0.0
	for _, s := range panel.series {
		for _, n := range names {
			if sum, ok := r.get(s.wl, n, s.key); ok {
				top = max(top, sum.Median)
			}
		}
	}
	cut := panel.clip > 0 && top > panel.clip
	if cut {
		top = panel.clip
	}
	if top <= 0 {
		top = 1
	}
	p.Y.Min, p.Y.Max = 0, top*1.12

	w := vg.Points(16)
	var cutMarks plotter.XYs
	var cutOffsets []vg.Length
	for si, s := range panel.series {
		vals := make(plotter.Values, len(names))
		var at, missingAt plotter.XYs
		var texts, missing []string
		for i, n := range names {
			sum, ok := r.get(s.wl, n, s.key)
			if !ok {
				if st := r.status(s.wl, n); st != "not run" {
					missingAt = append(missingAt, plotter.XY{X: float64(i), Y: top * 0.02})
					missing = append(missing, st)
				}
				continue
			}
			v := sum.Median
			txt := fmt.Sprintf("%.0f", v)
			if cut && v > panel.clip {
				v = panel.clip
				txt = "     " + txt + " (cut)" // clear of the triangle
				cutMarks = append(cutMarks, plotter.XY{X: float64(i), Y: v})
				cutOffsets = append(cutOffsets, w*vg.Length(2*si-len(panel.series)+1)/2)
			}
			vals[i] = v
			at = append(at, plotter.XY{X: float64(i), Y: v})
			texts = append(texts, txt)
		}
		bars, err := plotter.NewBarChart(vals, w)
		if err != nil {
			return nil, err
		}
		bars.Color = s.color
		bars.LineStyle.Width = 0
		bars.Offset = w * vg.Length(2*si-len(panel.series)+1) / 2
		p.Add(bars)
		p.Legend.Add(s.label, bars)
		if err := addLabels(p, at, texts, bars.Offset, color.Black); err != nil {
			return nil, err
		}
		red := color.RGBA{R: 0xa0, G: 0x10, B: 0x10, A: 0xff}
		if err := addLabels(p, missingAt, missing, bars.Offset, red); err != nil {
			return nil, err
		}
	}
	// Every cut bar gets a white break across it below the top, and a
	// triangle on top; its label, above the triangle, says "cut".
	if len(cutMarks) > 0 {
		br := barBreaks{at: cutMarks, dx: cutOffsets, width: w}
		p.Add(br)
		sc, err := plotter.NewScatter(cutMarks)
		if err != nil {
			return nil, err
		}
		sc.GlyphStyle.Shape = draw.TriangleGlyph{}
		sc.GlyphStyle.Radius = vg.Points(4)
		sc.GlyphStyle.Color = color.RGBA{R: 0xc0, G: 0x20, B: 0x20, A: 0xff}
		p.Add(offsetScatter{sc, cutOffsets})
		p.Legend.Add(fmt.Sprintf("bar cut at the axis (%.0f); its label has the value", panel.clip), sc)
	}
	labels := make([]string, len(names))
	copy(labels, names)
	p.NominalX(labels...)
	p.X.Tick.Label.Rotation = 0.5
	p.X.Tick.Label.XAlign = draw.XRight
	return p, nil
}

// addLabels writes texts at the given points, shifted by a bar's offset;
// they stand upright so that neighbouring bars' labels do not overlap.
func addLabels(p *plot.Plot, at plotter.XYs, texts []string, offset vg.Length, c color.Color) error {
	if len(at) == 0 {
		return nil
	}
	labels, err := plotter.NewLabels(plotter.XYLabels{XYs: at, Labels: texts})
	if err != nil {
		return err
	}
	for k := range labels.TextStyle {
		labels.TextStyle[k].Rotation = math.Pi / 2
		labels.TextStyle[k].XAlign = draw.XLeft
		labels.TextStyle[k].YAlign = draw.YCenter
		labels.TextStyle[k].Font.Size = vg.Points(6)
		labels.TextStyle[k].Color = c
	}
	labels.Offset = vg.Point{X: offset, Y: vg.Points(3)}
	p.Add(labels)
	return nil
}

// offsetScatter draws a scatter whose points are shifted sideways, each by
// its own dx, to sit on one bar of a group.
type offsetScatter struct {
	*plotter.Scatter
	dx []vg.Length
}

// Plot draws the scatter's glyphs shifted by dx.
func (s offsetScatter) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	for k, xy := range s.XYs {
		pt := vg.Point{X: trX(xy.X) + s.dx[k], Y: trY(xy.Y)}
		c.DrawGlyph(s.GlyphStyle, pt)
	}
}

// barBreaks draws a slanted white band across each cut bar a little below
// its top, the usual sign of a broken bar.
type barBreaks struct {
	at    plotter.XYs
	dx    []vg.Length
	width vg.Length
}

// Plot draws the bands.
func (b barBreaks) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	for k, xy := range b.at {
		mid := trX(xy.X) + b.dx[k]
		left, right := mid-b.width/2-vg.Points(1), mid+b.width/2+vg.Points(1)
		y := trY(xy.Y * 0.9)
		h, slant := vg.Points(4), vg.Points(3)
		c.FillPolygon(color.White, []vg.Point{
			{X: left, Y: y - slant}, {X: right, Y: y + slant},
			{X: right, Y: y + slant + h}, {X: left, Y: y - slant + h},
		})
	}
}
