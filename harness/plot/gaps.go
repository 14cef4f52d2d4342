package plot

import (
	"fmt"
	"image/color"
	"math"
	"slices"
	"strconv"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/droprun/droprun/harness/analysis"
)

// notSeenX is where the gaps figure puts pods whose endpoint removal was
// not seen after their deletion: a column of its own left of zero.
const notSeenX = -1.0

// gapColor is the colour of a measured gap; notSeenColor of a pod whose
// removal was not seen after its deletion.
var (
	gapColor     = hex("#01665e")
	notSeenColor = hex("#b2182b")
)

// gapRow is one row of a dot-strip figure: its values (negative in the
// gaps figure: a removal not seen after the deletion) and, when hasBar, a
// black bar at bar (the gaps' median, the balance's least share).
type gapRow struct {
	name   string
	values []float64
	bar    float64
	hasBar bool
	// undecided counts what a row left out as undecided (balance spans).
	undecided int
}

// gapRows draws rows as dot strips, row i at y = len-1-i.
type gapRows []gapRow

// Plot implements plot.Plotter.
func (gr gapRows) Plot(c draw.Canvas, p *gplot.Plot) {
	trX, trY := p.Transforms(&c)
	seen := draw.GlyphStyle{Color: gapColor, Radius: vg.Points(3.5), Shape: draw.CircleGlyph{}}
	unseen := draw.LineStyle{Color: notSeenColor, Width: vg.Points(2)}
	cross := vg.Points(4)
	barStyle := draw.LineStyle{Color: color.Gray{Y: 40}, Width: vg.Points(2)}
	for i, r := range gr {
		y0 := float64(len(gr) - 1 - i)
		for k, v := range r.values {
			// Spread the dots of a row over five lanes so equal
			// values stay apart.
			y := trY(y0 + float64(k%5-2)*0.1)
			if v < 0 {
				x := trX(notSeenX)
				c.StrokeLine2(unseen, x-cross, y-cross, x+cross, y+cross)
				c.StrokeLine2(unseen, x-cross, y+cross, x+cross, y-cross)
				continue
			}
			c.DrawGlyph(seen, vg.Point{X: trX(v), Y: y})
		}
		if r.hasBar {
			x := trX(r.bar)
			c.StrokeLine2(barStyle, x, trY(y0-0.32), x, trY(y0+0.32))
		}
	}
}

// countIf is how many of xs satisfy f.
func countIf(xs []float64, f func(float64) bool) int {
	n := 0
	for _, x := range xs {
		if f(x) {
			n++
		}
	}
	return n
}

// median returns the median of xs (not empty); xs is sorted in place.
func median(xs []float64) float64 {
	slices.Sort(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

// gapTicks labels the gaps figure's x axis: "not seen" for the column of
// pods without a seen removal, seconds from zero on.
type gapTicks struct{}

// Ticks implements plot.Ticker.
func (gapTicks) Ticks(min, max float64) []gplot.Tick {
	ts := []gplot.Tick{{Value: notSeenX, Label: "not seen"}}
	for _, t := range (secondTicks{}).Ticks(0, max) {
		if t.Value >= 0 {
			ts = append(ts, t)
		}
	}
	return ts
}

// gapsFigure shows, per row, each deleted pod's delay from its deletion
// request to its endpoint leaving the EndpointSlice.
func gapsFigure(sum *analysis.Summary) (Figure, error) {
	fig := Figure{
		Name:  "deletion-gaps",
		Title: "Deletion request to endpoint removal, per deleted pod",
		Caption: "Each dot is one pod deleted by the row's rollouts, placed at the time from its deletion request to its endpoint leaving the EndpointSlice; the black bar is the row's median. " +
			"Crosses in the \"not seen\" column are pods with no endpoint removal recorded after their deletion request (the slice update was recorded first, or never): they are shown, not dropped, and left out of the median.",
	}
	rows := make(gapRows, len(sum.Variants))
	xmax := 2.0
	for i, v := range sum.Variants {
		r := gapRow{name: v.Variant}
		var measured []float64
		for _, g := range v.Gaps {
			r.values = append(r.values, g.EndpointRemoved)
			xmax = max(xmax, g.EndpointRemoved)
			if g.EndpointRemoved >= 0 {
				measured = append(measured, g.EndpointRemoved)
			}
		}
		if len(measured) > 0 {
			r.bar, r.hasBar = median(measured), true
		}
		rows[i] = r
	}
	p := newPlot(fig.Title, "seconds from the pod's deletion request to its endpoint's removal from the EndpointSlice", "")
	p.X.Min, p.X.Max = notSeenX-0.6, math.Ceil(xmax+0.25)
	p.X.Tick.Marker = gapTicks{}
	sep := vlineAt{x: (notSeenX + 0) / 2, style: draw.LineStyle{Color: color.Gray{Y: 120}, Width: vg.Points(1)}}
	return stripFigure(fig, p, rows, sep, "pods: median (not seen)", func(r gapRow) string {
		txt := fmt.Sprintf("%d pods", len(r.values))
		if r.hasBar {
			txt += ": " + strconv.FormatFloat(r.bar, 'f', 2, 64) + " s"
		}
		if k := countIf(r.values, func(v float64) bool { return v < 0 }); k > 0 {
			txt += fmt.Sprintf(" (%d not seen)", k)
		}
		return txt
	})
}

// stripFigure renders p with rows as dot strips, one per row named on the
// y axis, line drawn under them, and in the strip on the right a header
// and each row's text.
func stripFigure(fig Figure, p *gplot.Plot, rows gapRows, line vlineAt, header string, text func(gapRow) string) (Figure, error) {
	names := make([]string, len(rows))
	for i, r := range rows {
		names[i] = r.name
	}
	n := len(rows)
	grid := rowAxis(p, names, color.Gray{Y: 210})
	p.Add(grid, line, rows)
	paint := func(c draw.Canvas) {
		plots, strip := splitLegend(c)
		plots = draw.Crop(plots, vg.Points(4), 0, vg.Points(4), -vg.Points(6))
		p.Draw(plots)
		dc := p.DataCanvas(plots)
		c.FillText(textStyle(noteSize, draw.XLeft, draw.YBottom, color.Black), vg.Point{X: strip.Min.X, Y: dc.Max.Y + vg.Points(2)}, header)
		for i, r := range rows {
			y := dc.Y(p.Y.Norm(float64(n - 1 - i)))
			c.FillText(textStyle(noteSize, draw.XLeft, draw.YCenter, color.Black), vg.Point{X: strip.Min.X, Y: y}, text(r))
		}
	}
	h := vg.Length(1.4)*vg.Inch + vg.Length(n)*0.55*vg.Inch
	var err error
	fig.PNG, fig.SVG, err = render(figWidth, max(h, 3.5*vg.Inch), paint)
	return fig, err
}

// vlineAt draws one vertical line across the data area.
type vlineAt struct {
	x     float64
	style draw.LineStyle
}

// Plot implements plot.Plotter.
func (v vlineAt) Plot(c draw.Canvas, p *gplot.Plot) {
	trX, _ := p.Transforms(&c)
	x := trX(v.x)
	c.StrokeLine2(v.style, x, c.Min.Y, x, c.Max.Y)
}
