package plot

import (
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/droprun/droprun/harness/analysis"
)

// balanceFigure shows, per row, each new pod's share of what the pods
// answered in the span after each rollout completed, as a fraction of an
// even share; ok is false when no rollout measured it.
func balanceFigure(sum *analysis.Summary) (fig Figure, ok bool, err error) {
	fig = Figure{
		Name:  "new-pod-share",
		Title: "New pods' share of requests after each rollout",
		Caption: "Each dot is one new pod after one rollout, placed at the share of the requests it answered in the traffic.balance span after the rollout completed (the pods' own counters), " +
			"as a fraction of an even share: 1 (the grey line) is even, 0 a pod that got nothing. The black bar is the row's least-served pod. " +
			"Spans the data cannot decide (counts not exact, too few requests) are left out and counted on the right.",
	}
	var rows gapRows
	xmax := 2.0
	for _, v := range sum.Variants {
		r := gapRow{name: v.Variant, bar: math.Inf(1)}
		undecided, measured := 0, false
		for _, ro := range v.Rollouts {
			b := ro.Balance
			if b == nil {
				continue
			}
			measured = true
			if b.Undecided != "" {
				undecided++
				continue
			}
			for _, p := range b.Pods {
				r.values = append(r.values, p.OfEven)
				xmax = max(xmax, p.OfEven)
			}
			r.bar, r.hasBar = min(r.bar, b.Least), true
		}
		if measured {
			r.undecided = undecided
			rows = append(rows, r)
		}
	}
	if len(rows) == 0 {
		return fig, false, nil
	}
	p := newPlot(fig.Title, "share of the requests the pods answered, as a fraction of an even share", "")
	p.X.Min, p.X.Max = -0.1, math.Ceil(xmax*2)/2+0.1
	even := vlineAt{x: 1, style: draw.LineStyle{Color: color.Gray{Y: 120}, Width: vg.Points(1)}}
	fig, err = stripFigure(fig, p, rows, even, "least-served new pod", func(r gapRow) string {
		txt := "no decided span"
		if r.hasBar {
			txt = fmt.Sprintf("%.2f of an even share", r.bar)
		}
		if r.undecided > 0 {
			txt += fmt.Sprintf(" (%d undecided)", r.undecided)
		}
		return txt
	})
	return fig, true, err
}
