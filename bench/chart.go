package main

import (
	"fmt"
	"image/color"
	"io"
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

// writeChart draws ns/heartbeat and bytes/device per implementation, for
// the native re-arm and for cancel+add, as one image with two panels; the
// format (SVG or PNG) follows path's extension.
// Implementations without a figure get no bar.
func writeChart(r *report, path string) error {
	var names, labels []string
	for _, n := range implNames() {
		if r.hasImpl(n) {
			names = append(names, n)
			labels = append(labels, n)
		}
	}
	blue := color.RGBA{R: 0x31, G: 0x6b, B: 0xb5, A: 0xff}
	orange := color.RGBA{R: 0xe6, G: 0x7e, B: 0x22, A: 0xff}
	// The heartbeat axis is cut at twice the runtime's cancel+add cost so
	// that one slow implementation does not flatten the others; every bar
	// carries its value as a label.
	nsClip := 0.0
	if s, ok := r.get("heartbeat-canceladd", baselineImpl, "ns_hb"); ok {
		nsClip = 2 * s.Median
	}
	panels := []struct {
		title, ylabel string
		clip          float64
		series        []chartSeries
	}{
		{"Heartbeat cost (median; bars past the top are cut, see labels)", "ns per heartbeat", nsClip, []chartSeries{
			{"native re-arm", "heartbeat-reset", "ns_hb", blue},
			{"cancel + add", "heartbeat-canceladd", "ns_hb", orange},
		}},
		{"Live heap per device after heartbeats (median)", "bytes per device", 0, []chartSeries{
			{"native re-arm", "heartbeat-reset", "bytes_device", blue},
			{"cancel + add", "heartbeat-canceladd", "bytes_device", orange},
		}},
	}
	plots := make([][]*plot.Plot, len(panels))
	for pi, panel := range panels {
		p := plot.New()
		p.Title.Text = panel.title
		p.Y.Label.Text = panel.ylabel
		p.Legend.Top = true
		p.Legend.Left = true
		p.Legend.XOffs = vg.Points(40)
		w := vg.Points(20)
		for si, s := range panel.series {
			vals := make(plotter.Values, len(names))
			var at plotter.XYs
			var texts []string
			for i, n := range names {
				if sum, ok := r.get(s.wl, n, s.key); ok {
					vals[i] = sum.Median
					y := sum.Median
					if panel.clip > 0 {
						vals[i] = min(vals[i], panel.clip)
						y = vals[i]
					}
					at = append(at, plotter.XY{X: float64(i), Y: y})
					texts = append(texts, fmt.Sprintf("%.0f", sum.Median))
				}
			}
			bars, err := plotter.NewBarChart(vals, w)
			if err != nil {
				return err
			}
			bars.Color = s.color
			bars.LineStyle.Width = 0
			bars.Offset = w * vg.Length(2*si-len(panel.series)+1) / 2
			p.Add(bars)
			p.Legend.Add(s.label, bars)
			if len(at) > 0 {
				labels, err := plotter.NewLabels(plotter.XYLabels{XYs: at, Labels: texts})
				if err != nil {
					return err
				}
				for k := range labels.TextStyle {
					labels.TextStyle[k].XAlign = draw.XCenter
					labels.TextStyle[k].Font.Size = vg.Points(6)
				}
				labels.Offset = vg.Point{X: bars.Offset, Y: vg.Points(2)}
				p.Add(labels)
			}
		}
		p.NominalX(labels...)
		p.X.Tick.Label.Rotation = 0.5
		p.X.Tick.Label.XAlign = draw.XRight
		plots[pi] = []*plot.Plot{p}
	}

	const width, height = 9 * vg.Inch, 9 * vg.Inch
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
