package plot

import (
	"fmt"
	"math"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/droprun/droprun/harness/analysis"
	"github.com/droprun/droprun/harness/stats"
	"github.com/droprun/droprun/harness/timeline"
)

// sinceData is one row's failures by time since the nearest pod deletion.
type sinceData struct {
	row            string
	h              *hist // nil when the row had no such failure
	drops          uint64
	windowRequests uint64
	noDeletion     uint64 // window failures sent before their rollout deleted any pod
	tail           uint64 // failures after the windows closed, not shown
	removed        []float64
	notSeen        int // deleted pods whose endpoint removal was not seen
}

// sinceDataOf gathers row's since-deletion histogram, from its series,
// and the endpoint removal delays of the pods its rollouts deleted.
func sinceDataOf(row analysis.VariantSummary, rs *analysis.RowSeries) *sinceData {
	sd := &sinceData{row: row.Variant, drops: row.Drops, windowRequests: row.WindowRequests,
		noDeletion: rs.NoDeletion, tail: row.Tail.Failures, h: rs.Since.Dense(0, 0)}
	for _, g := range row.Gaps {
		if g.EndpointRemoved < 0 {
			sd.notSeen++
			continue
		}
		sd.removed = append(sd.removed, g.EndpointRemoved)
	}
	return sd
}

// sinceFigure draws a row's failures against the time since the nearest
// earlier pod deletion: the race between deletion and endpoint removal.
func sinceFigure(sd *sinceData) (Figure, error) {
	fig := Figure{
		Name:    "since-deletion-" + fileSafe(sd.row),
		Variant: sd.row,
		Title:   fmt.Sprintf("%s: failures by time since the latest pod deletion", sd.row),
	}
	var shown uint64
	if sd.h != nil {
		s := sd.h.Sum()
		shown = s.Total(true)
	}
	hidden := sd.noDeletion
	switch {
	case sd.drops == 0:
		fig.Caption = fmt.Sprintf("%s had no failed requests in its rollout windows (%s), so there is nothing to place against the time since the latest pod deletion; "+
			"the dotted lines still mark how long each deleted pod's endpoint took to leave the EndpointSlice.",
			sd.row, plural(sd.windowRequests, "request"))
	default:
		fig.Caption = fmt.Sprintf("%s's %s in its rollout windows, each placed by how long after the latest pod deletion request it was sent (100 ms bins, stacked by outcome class); "+
			"the dotted lines mark how long each deleted pod's endpoint took to leave the EndpointSlice, so failures before them were sent while a terminating pod could still be listed as an endpoint.",
			sd.row, plural(sd.drops, "failed request"))
		if hidden > 0 {
			fig.Caption += fmt.Sprintf(" %s of them, sent before their rollout deleted any pod, %s not shown.", stats.FormatCount(hidden), verb(hidden))
		}
	}
	if sd.tail > 0 {
		fig.Caption += fmt.Sprintf(" %s after the windows closed (the tail) %s not counted here.", plural(sd.tail, "failure"), verb(sd.tail))
	}
	if sd.notSeen > 0 {
		fig.Caption += fmt.Sprintf(" %s no endpoint removal seen after the deletion request, so no line.", plural(uint64(sd.notSeen), "deleted pod")+" had")
	}

	xmin, xmax := -0.5, 1.0
	if sd.h != nil {
		xmin = min(xmin, float64(sd.h.First)*BinWidth.Seconds())
		xmax = max(xmax, float64(sd.h.First+len(sd.h.Bins))*BinWidth.Seconds())
	}
	markers := vlines{{kind: timeline.KindPodDeletionRequested, x: 0}}
	for _, r := range sd.removed {
		xmax = max(xmax, r+0.5)
		markers = append(markers, marker{kind: timeline.KindEndpointRemoved, x: r})
	}
	xmax = math.Ceil(xmax + 0.25)

	p := newPlot(fig.Title, "seconds between the latest pod deletion request and the failed request", "failed requests per 100 ms")
	p.X.Min, p.X.Max = xmin, xmax
	p.Y.Min = 0
	p.Y.Tick.Marker = countTicks{}
	p.X.Tick.Marker = secondTicks{}
	p.Y.Max = 4
	if sd.h != nil {
		p.Y.Max = max(p.Y.Max, float64(sd.h.Max(true))*1.1)
	}
	p.Add(stackBars{h: sd.h, failedOnly: true})
	p.Add(markers)
	switch {
	case sd.drops == 0:
		p.Add(note(fmt.Sprintf("no failed requests in %s rollout-window requests", stats.FormatCount(sd.windowRequests))))
	case shown == 0:
		p.Add(note(fmt.Sprintf("all %s failures came before their rollout deleted any pod", stats.FormatCount(sd.drops))))
	}

	leg := newLegend()
	if sd.h != nil {
		classLegend(&leg, sd.h.Sum(), true)
		leg.Add("")
	}
	leg.Add("deletion requested (0 s)", lineThumb{markerStyles[timeline.KindPodDeletionRequested]})
	label := "endpoint removed (per pod)"
	if len(sd.removed) == 0 {
		label += " (not seen)"
	}
	leg.Add(label, lineThumb{markerStyles[timeline.KindEndpointRemoved]})

	paint := func(c draw.Canvas) {
		plots, strip := splitLegend(c)
		plots = draw.Crop(plots, vg.Points(4), 0, vg.Points(4), -vg.Points(6))
		p.Draw(plots)
		drawLegend(leg, strip, p.DataCanvas(plots).Max.Y)
	}
	var err error
	fig.PNG, fig.SVG, err = render(figWidth, 5*vg.Inch, paint)
	return fig, err
}
