package plot

import (
	"fmt"
	"image/color"
	"math"
	"strconv"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/droprun/droprun/harness/analysis"
	"github.com/droprun/droprun/harness/stats"
)

// rateRow is one variant row of the comparison.
type rateRow struct {
	name     string
	drops, n uint64
	rollouts int
	dropped  int // rollouts that dropped anything
	iv       stats.Interval
}

// Colours of the comparison: a row with drops, a row without.
var (
	rateColor = hex("#08519c")
	zeroColor = hex("#525252")
)

// rateRows draws the rows of the comparison, row i at y = len-1-i (the
// first row on top), on a log x axis.
type rateRows []rateRow

// Plot implements plot.Plotter.
func (rr rateRows) Plot(c draw.Canvas, p *gplot.Plot) {
	trX, trY := p.Transforms(&c)
	capH := vg.Points(5)
	for i, r := range rr {
		y := trY(float64(len(rr) - 1 - i))
		switch {
		case r.iv.Empty:
			sty := textStyle(noteSize, draw.XLeft, draw.YCenter, zeroColor)
			c.FillText(sty, vg.Point{X: c.Min.X + vg.Points(4), Y: y}, "no rollout-window requests: no rate")
		case r.drops == 0:
			// Zero has no place on a log axis: draw what the data says,
			// "below the upper bound", as a dashed bar from the axis to
			// the bound with an arrow pointing towards zero.
			sty := draw.LineStyle{Color: zeroColor, Width: vg.Points(1.8), Dashes: []vg.Length{vg.Points(4), vg.Points(2.5)}}
			x0, x1 := c.Min.X, trX(r.iv.Hi)
			c.StrokeLine2(sty, x0+vg.Points(2), y, x1, y)
			sty.Dashes = nil
			c.StrokeLine2(sty, x1, y-capH, x1, y+capH)
			c.StrokeLines(sty, []vg.Point{{X: x0 + vg.Points(9), Y: y + capH}, {X: x0 + vg.Points(1), Y: y}, {X: x0 + vg.Points(9), Y: y - capH}})
			lab := textStyle(noteSize, draw.XLeft, draw.YCenter, zeroColor)
			c.FillText(lab, vg.Point{X: x1 + vg.Points(5), Y: y}, "no drops: rate below "+percent(r.iv.Hi))
		default:
			sty := draw.LineStyle{Color: rateColor, Width: vg.Points(1.8)}
			x0, x1 := trX(r.iv.Lo), trX(r.iv.Hi)
			c.StrokeLine2(sty, x0, y, x1, y)
			c.StrokeLine2(sty, x0, y-capH, x0, y+capH)
			c.StrokeLine2(sty, x1, y-capH, x1, y+capH)
			c.DrawGlyph(draw.GlyphStyle{Color: rateColor, Radius: vg.Points(4), Shape: draw.CircleGlyph{}}, vg.Point{X: trX(r.iv.Point), Y: y})
		}
	}
}

// percentTicks label a log axis of shares at every decade, in percent,
// with unlabelled minor ticks between.
type percentTicks struct{}

// Ticks implements plot.Ticker.
func (percentTicks) Ticks(min, max float64) []gplot.Tick {
	var ts []gplot.Tick
	for e := int(math.Floor(math.Log10(min))); e <= int(math.Ceil(math.Log10(max))); e++ {
		d := math.Pow10(e)
		if d >= min*(1-1e-9) && d <= max*(1+1e-9) {
			ts = append(ts, gplot.Tick{Value: d, Label: strconv.FormatFloat(math.Pow10(e+2), 'f', -1, 64) + "%"})
		}
		for m := 2; m < 10; m++ {
			if v := d * float64(m); v > min && v < max {
				ts = append(ts, gplot.Tick{Value: v})
			}
		}
	}
	return ts
}

// variantsFigure compares the drop rates of all rows, with their 95%
// intervals over rollouts, on a log axis.
func variantsFigure(sum *analysis.Summary) (Figure, error) {
	fig := Figure{
		Name:  "variants",
		Title: "Drop rate per variant: failed share of the rollout-window requests",
		Caption: "Each row is a variant row: the dot is the share of its rollout-window requests that failed and the bar its 95% interval over rollouts (drops come in bursts, one per rollout), on a log scale; " +
			"a row with no failures has no dot (zero has no place on a log axis): its dashed bar ends at the interval's upper bound, the rate the data cannot rule out. " +
			"Failures come in bursts, not one by one, so the intervals understate the real uncertainty.",
	}
	rows := make(rateRows, len(sum.Variants))
	lo := 1.0
	for i, v := range sum.Variants {
		r := rateRow{name: v.Variant, drops: v.Drops, n: v.WindowRequests, rollouts: len(v.Rollouts), dropped: v.RolloutsWithDrops,
			iv: v.Intervals.DropRate.Interval}
		rows[i] = r
		// The lowest bound drawn: a zero row's upper bound, another row's
		// lower one. Only a positive bound has a place on the log axis.
		b := r.iv.Lo
		if r.drops == 0 {
			b = r.iv.Hi
		}
		if !r.iv.Empty && b > 0 {
			lo = min(lo, b)
		}
	}
	// One decade below the lowest bound, and room for the zero rows' arrows.
	xmin := math.Pow10(int(math.Floor(math.Log10(lo))))
	if lo/xmin < 3 {
		xmin /= 10
	}

	// The x label is drawn by paint: gonum/plot centres an axis label at
	// the arithmetic middle of the range, which on a log axis pads the
	// data area to a fraction of the width.
	xlabel := "share of rollout-window requests that failed (log scale): dot = rate, bar = 95% interval over rollouts"
	p := newPlot(fig.Title, "", "")
	p.X.Scale = gplot.LogScale{}
	p.X.Tick.Marker = percentTicks{}
	p.X.Min, p.X.Max = xmin, 1
	names := make([]string, len(rows))
	for i, r := range rows {
		names[i] = r.name
	}
	n := len(rows)
	grid := rowAxis(p, names, color.Gray{Y: 200})
	p.Add(grid, rows)

	paint := func(c draw.Canvas) {
		plots, strip := splitLegend(c)
		lab := textStyle(labelSize, draw.XCenter, draw.YBottom, color.Black)
		plots = draw.Crop(plots, vg.Points(4), 0, vg.Points(4)+lab.Height(xlabel)+vg.Points(4), -vg.Points(6))
		p.Draw(plots)
		dc := p.DataCanvas(plots)
		c.FillText(lab, vg.Point{X: (dc.Min.X + dc.Max.X) / 2, Y: c.Min.Y + vg.Points(6)}, xlabel)
		head := textStyle(noteSize, draw.XLeft, draw.YBottom, color.Black)
		c.FillText(head, vg.Point{X: strip.Min.X, Y: dc.Max.Y + vg.Points(2)}, "drops / requests, rollouts")
		for i, r := range rows {
			y := dc.Y(p.Y.Norm(float64(n - 1 - i)))
			sty := textStyle(noteSize, draw.XLeft, draw.YCenter, color.Black)
			line1 := fmt.Sprintf("%s / %s", stats.FormatCount(r.drops), stats.FormatCount(r.n))
			if r.n > 0 && r.drops > 0 {
				line1 += " = " + percent(float64(r.drops)/float64(r.n))
			}
			c.FillText(sty, vg.Point{X: strip.Min.X, Y: y + vg.Points(6)}, line1)
			sty.Color = zeroColor
			c.FillText(sty, vg.Point{X: strip.Min.X, Y: y - vg.Points(6)}, fmt.Sprintf("rollouts with drops: %d of %d", r.dropped, r.rollouts))
		}
	}
	h := vg.Length(1.4)*vg.Inch + vg.Length(n)*0.55*vg.Inch
	var err error
	fig.PNG, fig.SVG, err = render(figWidth, max(h, 3.5*vg.Inch), paint)
	return fig, err
}
