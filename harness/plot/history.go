package plot

import (
	"fmt"
	"image/color"
	"math"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/droprun/droprun/harness/history"
)

// History draws one trend figure per series of v: the runs in time order,
// each with its mean drops per rollout (dot), that mean's interval over
// rollouts (bar: the drop rate's interval times the run's mean requests
// per rollout), every rollout's own drops (small grey dots), and a dashed
// line before each run where a change was found.
func History(v history.View) ([]Figure, error) {
	var figs []Figure
	for _, s := range v.Series {
		fig, err := historyFigure(s)
		if err != nil {
			return nil, fmt.Errorf("plotting %s: %w", s.Key, err)
		}
		figs = append(figs, fig)
	}
	uniqueNames(figs)
	return figs, nil
}

// historyPoints draws a series' runs at x = 0, 1, ...
type historyPoints []history.PointView

// perRolloutBounds is p's interval on drops per rollout, NaN when it has none.
func perRolloutBounds(p history.PointView) (lo, hi float64) {
	if p.NoInterval || len(p.Rollouts) == 0 {
		return math.NaN(), math.NaN()
	}
	n := float64(p.Requests) / float64(len(p.Rollouts))
	return p.Lo * n, p.Hi * n
}

// Plot implements plot.Plotter.
func (hp historyPoints) Plot(c draw.Canvas, pl *gplot.Plot) {
	trX, trY := pl.Transforms(&c)
	capW := vg.Points(4)
	roll := draw.GlyphStyle{Color: color.Gray{Y: 150}, Radius: vg.Points(1.8), Shape: draw.CircleGlyph{}}
	for i, p := range hp {
		x := trX(float64(i))
		for _, r := range p.Rollouts {
			c.DrawGlyph(roll, vg.Point{X: x + vg.Points(7), Y: trY(float64(r.Drops))})
		}
		clr := rateColor
		if len(p.Suspect) > 0 {
			clr = zeroColor
		}
		if lo, hi := perRolloutBounds(p); !math.IsNaN(lo) {
			sty := draw.LineStyle{Color: clr, Width: vg.Points(1.5)}
			c.StrokeLine2(sty, x, trY(lo), x, trY(hi))
			c.StrokeLine2(sty, x-capW, trY(lo), x+capW, trY(lo))
			c.StrokeLine2(sty, x-capW, trY(hi), x+capW, trY(hi))
		}
		g := draw.GlyphStyle{Color: clr, Radius: vg.Points(3.5), Shape: draw.CircleGlyph{}}
		if len(p.Suspect) > 0 {
			g.Shape = draw.RingGlyph{}
		}
		c.DrawGlyph(g, vg.Point{X: x, Y: trY(p.PerRollout)})
	}
}

func historyFigure(s history.SeriesView) (Figure, error) {
	fig := Figure{
		Name:  "history-" + fileSafe(s.Key.Scenario+"-"+s.Key.Variant),
		Title: s.Key.String(),
		Caption: "Each run in time order: the dot is its mean drops per rollout, the bar that mean's 95% interval over rollouts, the small grey dots its rollouts' own drops; " +
			"a hollow grey dot is a suspect run. A dashed line stands before each run where the drop rate changed (permutation test over runs).",
	}
	top := 1.0
	for _, p := range s.Points {
		top = math.Max(top, p.PerRollout)
		if _, hi := perRolloutBounds(p); !math.IsNaN(hi) {
			top = math.Max(top, hi)
		}
		for _, r := range p.Rollouts {
			top = math.Max(top, float64(r.Drops))
		}
	}
	p := newPlot("", "run (start, UTC)", "drops per rollout")
	p.X.Min, p.X.Max = -0.6, float64(len(s.Points))-0.4
	p.Y.Min, p.Y.Max = 0, top*1.1
	grid := plotter.NewGrid()
	grid.Vertical.Color = nil
	grid.Horizontal.Color = color.Gray{Y: 220}
	p.Add(grid)
	var xt gplot.ConstantTicks
	step := max(1, len(s.Points)/8)
	for i, pt := range s.Points {
		label := ""
		if i%step == 0 {
			label = pt.Started.UTC().Format("01-02\n15:04")
		}
		xt = append(xt, gplot.Tick{Value: float64(i), Label: label})
	}
	p.X.Tick.Marker = xt
	var lines []float64
	for _, c := range s.Changes {
		lines = append(lines, float64(c.At)-0.5)
	}
	p.Add(changeLines(lines))
	p.Add(historyPoints(s.Points))
	w := vg.Points(float64(max(360, 48*len(s.Points)+120)))
	var err error
	fig.PNG, fig.SVG, err = render(w, vg.Points(240), func(c draw.Canvas) { p.Draw(c) })
	return fig, err
}

// changeLines draws a dashed vertical line at each x.
type changeLines []float64

// Plot implements plot.Plotter.
func (cl changeLines) Plot(c draw.Canvas, p *gplot.Plot) {
	trX, _ := p.Transforms(&c)
	sty := draw.LineStyle{Color: delayColor, Width: vg.Points(1.2), Dashes: []vg.Length{vg.Points(4), vg.Points(3)}}
	for _, x := range cl {
		c.StrokeLine2(sty, trX(x), c.Min.Y, trX(x), c.Max.Y)
	}
}
