package plot

import (
	"bytes"
	"strings"
	"testing"

	"gonum.org/v1/plot/vg"

	"github.com/droprun/droprun/harness/analysis"
)

// sweepAnalysis is a synthetic analysed run: a row that is not swept and a
// preStopSeconds sweep whose drops stop at 2 s, with the nodes' route
// removals seen by the data plane.
func sweepAnalysis() *analysis.Analysis {
	row := func(value string, n float64, drops uint64) analysis.VariantSummary {
		return analysis.VariantSummary{Variant: "s@preStopSeconds=" + value,
			Sweep: &analysis.SweepPoint{Field: "preStopSeconds", Value: value, Number: n, Group: "s"},
			Drops: drops, WindowRequests: 30000,
			Measurable: analysis.Tally{Failures: drops, Requests: 30000},
			Routes: []analysis.RouteGap{
				{Unrouted: 0.4 + n/10, Source: analysis.RouteSourceDataPlane},
				{Unrouted: 1.3, Source: analysis.RouteSourceDataPlane},
				{Unrouted: 9, Source: analysis.RouteSourceKubeProxy}, // not drawn: the data plane saw the pairs
				{Unrouted: -1, Source: analysis.RouteSourceDataPlane},
			}}
	}
	sum := derived(&analysis.Summary{Variants: []analysis.VariantSummary{
		{Variant: "no-prestop", Drops: 80, WindowRequests: 30000},
		row("3", 3, 0), row("0", 0, 150), row("1", 1, 12), row("2", 2, 0),
	}})
	a := &analysis.Analysis{Summary: sum}
	for _, v := range sum.Variants {
		a.Rows = append(a.Rows, &analysis.RowSeries{Row: v.Variant})
	}
	return a
}

func TestSweepFigure(t *testing.T) {
	a := sweepAnalysis()
	figs, err := Figures(a)
	if err != nil {
		t.Fatal(err)
	}
	var f *Figure
	for i := range figs {
		if figs[i].Name == "sweep-s" {
			f = &figs[i]
		}
	}
	if f == nil {
		t.Fatal("Figures drew no sweep-s figure")
	}
	checkImages(t, *f, figWidth, 4.5*vg.Inch)
	if f.Variant != "" {
		t.Errorf("the sweep figure belongs to row %q, want the whole run", f.Variant)
	}
	for _, want := range []string{"From preStopSeconds=2 on", "of the 8 (pod, node) pairs", "the last: 1.3 s"} {
		if !strings.Contains(f.Caption, want) {
			t.Errorf("caption %q lacks %q", f.Caption, want)
		}
	}
	for _, want := range []string{"nodes stopped routing: 8 pairs", "1: 12 / 30,000", "2: 0 / 30,000 (floor)"} {
		if !bytes.Contains(f.SVG, []byte(want)) {
			t.Errorf("the SVG does not show %q", want)
		}
	}

	// A field that is not a wait gets no delays on its axis.
	s := analysis.Sweeps(a.Summary.Variants)[0]
	s.Field = "replicas"
	g, err := sweepFigure(s, analysis.PropagationDelays(a.Summary.Variants))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(g.SVG, []byte("nodes stopped routing")) || strings.Contains(g.Caption, "pairs") {
		t.Error("a replicas sweep shows propagation delays")
	}
	// No drops anywhere, no delays: still a figure.
	empty := analysis.Sweep{Group: "e", Field: "drainDelay", Points: []analysis.SweepResult{{Point: analysis.SweepPoint{Value: "1s", Number: 1}}}}
	e, err := sweepFigure(empty, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkImages(t, e, 0, 0)
}
