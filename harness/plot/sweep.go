package plot

import (
	"fmt"
	"image/color"
	"math"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/droprun/droprun/harness/analysis"
	"github.com/droprun/droprun/harness/stats"
)

// delayColor draws the measured propagation delays beside a sweep.
var delayColor = hex("#d95f0e")

// sweepPoints draws a sweep's points: for each value its drop rate (dot)
// and 95% interval (bar), joined in value order; a point at the rig's
// floor is a hollow grey dot.
type sweepPoints []analysis.SweepResult

// Plot implements plot.Plotter.
func (sp sweepPoints) Plot(c draw.Canvas, p *gplot.Plot) {
	trX, trY := p.Transforms(&c)
	capW := vg.Points(5)
	var line []vg.Point
	for _, r := range sp {
		if r.Rate.Empty || math.IsNaN(r.Rate.Point) {
			continue
		}
		line = append(line, vg.Point{X: trX(r.Point.Number), Y: trY(r.Rate.Point)})
	}
	if len(line) > 1 {
		c.StrokeLines(draw.LineStyle{Color: color.Gray{Y: 170}, Width: vg.Points(1)}, line)
	}
	for _, r := range sp {
		if r.Rate.Empty || math.IsNaN(r.Rate.Point) {
			continue
		}
		clr := rateColor
		if r.AtFloor {
			clr = zeroColor
		}
		x := trX(r.Point.Number)
		sty := draw.LineStyle{Color: clr, Width: vg.Points(1.8)}
		lo, hi := trY(r.Rate.Lo), trY(r.Rate.Hi)
		c.StrokeLine2(sty, x, lo, x, hi)
		c.StrokeLine2(sty, x-capW, lo, x+capW, lo)
		c.StrokeLine2(sty, x-capW, hi, x+capW, hi)
		g := draw.GlyphStyle{Color: clr, Radius: vg.Points(4), Shape: draw.CircleGlyph{}}
		if r.AtFloor {
			g.Shape = draw.RingGlyph{}
		}
		c.DrawGlyph(g, vg.Point{X: x, Y: trY(r.Rate.Point)})
	}
}

// delayECDF draws the share of (pod, node) pairs whose node had stopped
// routing by each time (the empirical CDF of delays), scaled so 100% is
// the top of the y axis (top), with a tick per delay along the x axis.
type delayECDF struct {
	delays []float64 // sorted
	top    float64
}

// Plot implements plot.Plotter.
func (e delayECDF) Plot(c draw.Canvas, p *gplot.Plot) {
	trX, trY := p.Transforms(&c)
	n := float64(len(e.delays))
	sty := draw.LineStyle{Color: delayColor, Width: vg.Points(1.5)}
	pts := []vg.Point{{X: c.Min.X, Y: trY(0)}}
	for k, d := range e.delays {
		x := trX(d)
		pts = append(pts, vg.Point{X: x, Y: pts[len(pts)-1].Y}, vg.Point{X: x, Y: trY(float64(k+1) / n * e.top)})
	}
	pts = append(pts, vg.Point{X: c.Max.X, Y: pts[len(pts)-1].Y})
	c.StrokeLines(sty, pts)
	rug := draw.LineStyle{Color: delayColor, Width: vg.Points(0.8)}
	for _, d := range e.delays {
		x := trX(d)
		c.StrokeLine2(rug, x, c.Min.Y, x, c.Min.Y+vg.Points(7))
	}
	last := trX(e.delays[len(e.delays)-1])
	c.StrokeLine2(draw.LineStyle{Color: delayColor, Width: vg.Points(1), Dashes: []vg.Length{vg.Points(4), vg.Points(3)}}, last, c.Min.Y, last, c.Max.Y)
}

// linearPercentTicks are gonum's default linear ticks labelled as
// percentages.
type linearPercentTicks struct{}

// Ticks implements plot.Ticker.
func (linearPercentTicks) Ticks(min, max float64) []gplot.Tick {
	ts := gplot.DefaultTicks{}.Ticks(min, max)
	for i := range ts {
		if ts[i].Label != "" {
			ts[i].Label = percent(ts[i].Value)
		}
	}
	return ts
}

// sweepFigure draws the dose-response of sweep s: drop rate with its 95%
// interval against the swept value. When the field is a wait in seconds,
// delays (analysis.PropagationDelays, sorted) are overlaid on the same x
// axis, so the reader sees where they end beside the value where the
// drops stop.
func sweepFigure(s analysis.Sweep, delays []float64) (Figure, error) {
	fig := Figure{
		Name:  "sweep-" + s.Group,
		Title: fmt.Sprintf("Drop rate against %s (%s)", s.Field, s.Group),
		Caption: fmt.Sprintf("Each point is one value of %s: the dot is the share of its rollout-window requests that failed (rig stalls excused), the bar its 95%% interval over rollouts; "+
			"a hollow grey dot is at the rig's floor (no more drops than the control window's failure rate predicts).", s.Field),
	}
	overlay := s.Seconds() && len(delays) > 0
	xmin, xmax, top := math.Inf(1), math.Inf(-1), 0.0
	for _, r := range s.Points {
		xmin, xmax = min(xmin, r.Point.Number), max(xmax, r.Point.Number)
		if !r.Rate.Empty && !math.IsNaN(r.Rate.Hi) {
			top = max(top, r.Rate.Hi)
		}
	}
	if len(s.Points) == 0 {
		xmin, xmax = 0, 1
	}
	if overlay {
		xmin, xmax = min(xmin, 0), max(xmax, delays[len(delays)-1])
		fig.Caption += fmt.Sprintf(" The orange steps are the share (right axis) of the %d (pod, node) pairs whose node had stopped routing to the deleted pod by that many seconds after its deletion, with a tick per pair along the bottom; the dashed line is the last: %s s.",
			len(delays), stats.FormatSig(delays[len(delays)-1], 2))
	}
	if v, ok := s.Floor(); ok {
		fig.Caption += fmt.Sprintf(" From %s=%s on, every value is at the floor.", s.Field, v)
	} else {
		fig.Caption += " No value from which every larger one is at the floor."
	}
	if top <= 0 {
		top = 1e-3
	}
	top *= 1.1
	pad := (xmax - xmin) * 0.06
	if pad == 0 {
		pad = 0.5
	}
	xlabel := s.Field
	if s.Seconds() {
		xlabel += " (seconds)"
	}
	p := newPlot(fig.Title, xlabel, "share of rollout-window requests that failed")
	p.X.Min, p.X.Max = xmin-pad, xmax+pad
	p.Y.Min, p.Y.Max = 0, top
	p.Y.Tick.Marker = linearPercentTicks{}
	grid := plotter.NewGrid()
	grid.Vertical.Color = nil
	grid.Horizontal.Color = color.Gray{Y: 220}
	p.Add(grid)
	if overlay {
		p.Add(delayECDF{delays: delays, top: top})
	}
	p.Add(sweepPoints(s.Points))
	var xt gplot.ConstantTicks
	for _, r := range s.Points {
		xt = append(xt, gplot.Tick{Value: r.Point.Number, Label: r.Point.Value})
	}
	p.X.Tick.Marker = xt

	paint := func(c draw.Canvas) {
		plots, strip := splitLegend(c)
		plots = draw.Crop(plots, 0, -vg.Points(36), 0, 0)
		p.Draw(plots)
		dc := p.DataCanvas(plots)
		if overlay {
			delayAxis(c, p, dc, top)
		}
		sweepLegend(c, strip, dc, s.Points, delays, overlay)
	}
	var err error
	fig.PNG, fig.SVG, err = render(figWidth, 4.5*vg.Inch, paint)
	return fig, err
}

// delayAxis draws the right-hand axis of the delays' share, 0 to 100 %
// over the plot's 0 to top.
func delayAxis(c draw.Canvas, p *gplot.Plot, dc draw.Canvas, top float64) {
	sty := textStyle(tickSize, draw.XLeft, draw.YCenter, delayColor)
	for _, q := range []float64{0, 0.25, 0.5, 0.75, 1} {
		y := dc.Y(p.Y.Norm(q * top))
		c.StrokeLine2(draw.LineStyle{Color: delayColor, Width: vg.Points(0.8)}, dc.Max.X, y, dc.Max.X+vg.Points(4), y)
		c.FillText(sty, vg.Point{X: dc.Max.X + vg.Points(6), Y: y}, fmt.Sprintf("%.0f%%", q*100))
	}
}

// sweepLegend writes each value's drops and requests in the strip beside
// the plot, and with the delays' overlay how many pairs it shows.
func sweepLegend(c, strip, dc draw.Canvas, points []analysis.SweepResult, delays []float64, overlay bool) {
	head := textStyle(noteSize, draw.XLeft, draw.YBottom, color.Black)
	c.FillText(head, vg.Point{X: strip.Min.X, Y: dc.Max.Y + vg.Points(2)}, "value: drops / requests")
	y := dc.Max.Y - vg.Points(10)
	for _, r := range points {
		sty := textStyle(noteSize, draw.XLeft, draw.YCenter, rateColor)
		mark := ""
		if r.AtFloor {
			sty.Color, mark = zeroColor, " (floor)"
		}
		c.FillText(sty, vg.Point{X: strip.Min.X, Y: y}, fmt.Sprintf("%s: %s / %s%s", r.Point.Value, stats.FormatCount(r.Drops), stats.FormatCount(r.Requests), mark))
		y -= vg.Points(14)
	}
	if overlay {
		sty := textStyle(noteSize, draw.XLeft, draw.YCenter, delayColor)
		y -= vg.Points(6)
		c.FillText(sty, vg.Point{X: strip.Min.X, Y: y}, fmt.Sprintf("nodes stopped routing: %d pairs,", len(delays)))
		c.FillText(sty, vg.Point{X: strip.Min.X, Y: y - vg.Points(14)}, "last "+stats.FormatSig(delays[len(delays)-1], 2)+" s after deletion")
	}
}
