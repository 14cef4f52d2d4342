package plot

import (
	"fmt"
	"time"

	"github.com/droprun/droprun/harness/analysis"
)

// Figures draws the figures of an analysed run. They come in this order:
// the variant comparison ("variants"), the deletion-to-removal delays
// ("deletion-gaps"), the new pods' shares after each rollout when measured
// ("new-pod-share"), one dose-response per sweep ("sweep-GROUP"), then per
// variant row its since-deletion histogram
// ("since-deletion-ROW") and one timeline per rollout ("timeline-ROW-rN").
// Names are unique and file-safe. Everything drawn comes from a: nothing
// is read or derived here.
func Figures(a *analysis.Analysis) ([]Figure, error) {
	if a == nil || a.Summary == nil {
		return nil, fmt.Errorf("plot: no analysis")
	}
	sum := a.Summary
	var figs []Figure
	add := func(f Figure, err error) error {
		if err != nil {
			return fmt.Errorf("figure %s: %w", f.Name, err)
		}
		figs = append(figs, f)
		return nil
	}
	if err := add(variantsFigure(sum)); err != nil {
		return nil, err
	}
	if err := add(gapsFigure(sum)); err != nil {
		return nil, err
	}
	if f, ok, err := balanceFigure(sum); ok || err != nil {
		if err := add(f, err); err != nil {
			return nil, err
		}
	}
	delays := analysis.PropagationDelays(sum.Variants)
	for _, s := range analysis.Sweeps(sum.Variants) {
		if err := add(sweepFigure(s, delays)); err != nil {
			return nil, err
		}
	}
	for i, row := range sum.Variants {
		rs := a.Rows[i]
		if err := add(sinceFigure(sinceDataOf(row, rs))); err != nil {
			return nil, err
		}
		for _, s := range rs.Rollouts {
			if err := add(timelineFigure(rolloutDataOf(s))); err != nil {
				return nil, err
			}
		}
	}
	uniqueNames(figs)
	return figs, nil
}

// rolloutData is one rollout's timeline as the figure draws it.
type rolloutData struct {
	row     string
	rs      analysis.RolloutSummary
	end     time.Duration // the window's end, from rs.Start
	closed  bool          // the window was closed
	h       *hist         // offsets [-timelinePad, end+timelinePad)
	markers []marker
	rig     []rigSample // the samples covering the range (none: no rig panels)
}

func rolloutDataOf(s *analysis.RolloutSeries) *rolloutData {
	rd := &rolloutData{row: s.Row, rs: s.Rollout, end: s.End, closed: s.Closed, h: s.Hist, rig: s.Rig}
	for _, m := range s.Markers {
		rd.markers = append(rd.markers, marker{kind: m.Kind, node: m.Node, x: m.X})
	}
	return rd
}
