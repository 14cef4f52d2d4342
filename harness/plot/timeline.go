package plot

import (
	"fmt"
	"slices"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/droprun/droprun/harness/analysis"
	"github.com/droprun/droprun/harness/stats"
	"github.com/droprun/droprun/harness/timeline"
)

// timelinePad is how much of the traffic before a rollout's start and
// after its window's end a timeline shows.
const timelinePad = analysis.TimelinePad

// Timeline heights: without rig samples, and with the rig panels.
const (
	timelineHeight    = 7.5 * vg.Inch
	timelineRigHeight = 10 * vg.Inch
)

// timelineFigure draws one rollout's timeline: all requests per 100 ms on
// top, the failures alone below, with the cluster events marked; and when
// rig samples cover its range, the rig's CPU and the client's lag
// behind schedule at the bottom.
func timelineFigure(rd *rolloutData) (Figure, error) {
	fig := Figure{
		Name:    fmt.Sprintf("timeline-%s-r%d", fileSafe(rd.row), rd.rs.N),
		Variant: rd.row,
	}
	drawnTitle := timelineWords(&fig, rd)

	xmin := -timelinePad.Seconds()
	xmax := float64(rd.h.First+len(rd.h.Bins)) * BinWidth.Seconds()
	fades := []gplot.Plotter{fade{xmin, 0}, fade{rd.end.Seconds(), xmax}}
	tp := newTimelinePanels(rd, drawnTitle, xmin, xmax, fades)

	leg := newLegend()
	classLegend(&leg, rd.h.Sum(), false)
	leg.Add("")
	leg.Add("faded: outside the window", fadeThumb{})
	leg.Add("")
	markerLegend(&leg, rd.markers, markerKinds)

	plots := []*gplot.Plot{tp.events, tp.top, tp.bottom}
	dataH := []vg.Length{0.2*vg.Inch + vg.Length(tp.lanes)*0.18*vg.Inch, 0, 0}
	height := timelineHeight
	var rig rigPanels
	if len(rd.rig) > 0 {
		// The failures panel hands its x axis label down to the rig's.
		tp.bottom.X.Label.Text = ""
		tp.bottom.X.Tick.Marker = unlabelled{secondTicks{}}
		rig = newRigPanels(rd, xmin, xmax, fades)
		plots = append(plots, rig.cpu, rig.lag)
		dataH = append(dataH, 0.8*vg.Inch, 1.1*vg.Inch)
		height = timelineRigHeight
	}

	paint := func(c draw.Canvas) {
		plotArea, strip := splitLegend(c)
		plotArea = draw.Crop(plotArea, vg.Points(4), 0, vg.Points(4), -vg.Points(6))
		cs := stack(plotArea, plots, dataH, vg.Points(8))
		for i, p := range plots {
			p.Draw(cs[i])
		}
		drawLegend(leg, strip, tp.top.DataCanvas(cs[1]).Max.Y)
		if rig.cpu != nil {
			drawLegend(rig.leg, strip, rig.cpu.DataCanvas(cs[3]).Max.Y)
		}
	}
	var err error
	fig.PNG, fig.SVG, err = render(figWidth, height, paint)
	return fig, err
}

// timelineWords sets fig's title and caption for rollout rd, and returns
// the title drawn on the figure: the title without the rig's saturation,
// which the caption explains.
func timelineWords(fig *Figure, rd *rolloutData) (drawnTitle string) {
	win := rd.rs.Window
	fig.Title = fmt.Sprintf("%s, rollout %d: %s of %s window requests failed",
		rd.row, rd.rs.N, stats.FormatCount(win.Failures), stats.FormatCount(win.Requests))
	if win.Requests > 0 {
		fig.Title += fmt.Sprintf(" (%s)", percent(float64(win.Failures)/float64(win.Requests)))
	}
	endS := rd.end.Seconds()
	closed := fmt.Sprintf("closed %.1f s after the start", endS)
	if !rd.closed {
		closed = fmt.Sprintf("was never closed (the run was interrupted; shown up to %.1f s)", endS)
	}
	fig.Caption = fmt.Sprintf("Requests of %s's rollout %d per 100 ms, by the time they were sent and stacked by outcome: all requests on top, the failed ones alone below on their own scale. "+
		"Vertical lines mark cluster events; the faded stretches are outside the rollout window (it opened at 0 s and %s), so their failures do not count as drops.",
		rd.row, rd.rs.N, closed)
	drawnTitle = fig.Title
	if len(rd.rig) > 0 {
		fig.Caption += fmt.Sprintf(" At the bottom, the rig (the machine that runs both the cluster and the traffic client), sampled about every %s: "+
			"the share of the time some task waited for a CPU core (CPU pressure, shaded) and the share of the host's cores busy (line), then how far behind its schedule the client sent its latest request; "+
			"beyond %s (the dashed line, half the request timeout) the machine stalled long enough to time requests out by itself, and the rollout is flagged as saturated.",
			stats.FormatSeconds(rigStep(rd.rig).Seconds()), stats.FormatSeconds(analysis.SaturationLag.Seconds()))
	}
	if sat := rigSaturation(rd.rs); sat != "" {
		fig.Title += "; the rig was short of CPU"
		fig.Caption = sat + " " + fig.Caption
	}
	return drawnTitle
}

// timelinePanels are a timeline's three panels over one x range: the
// cluster events in lanes (under the title), all requests, and the
// failures alone.
type timelinePanels struct {
	events, top, bottom *gplot.Plot
	lanes               int // the event panel's lanes
}

// newTimelinePanels builds rd's panels over [xmin, xmax] seconds, each
// with fades over the stretches outside the window.
func newTimelinePanels(rd *rolloutData, title string, xmin, xmax float64, fades []gplot.Plotter) timelinePanels {
	events := newPlot(title, "", "")
	top := newPlot("", "", "all requests per 100 ms")
	bottom := newPlot("", "seconds since the rollout started", "failed requests per 100 ms")
	for _, p := range []*gplot.Plot{events, top, bottom} {
		p.X.Min, p.X.Max = xmin, xmax
		p.X.Tick.Marker = unlabelled{secondTicks{}}
	}
	bottom.X.Tick.Marker = secondTicks{}
	for _, p := range []*gplot.Plot{top, bottom} {
		p.Y.Min = 0
		p.Y.Tick.Marker = countTicks{}
	}
	top.Y.Max = max(1, float64(rd.h.Max(false))*1.05)
	fmax := rd.h.Max(true)
	bottom.Y.Max = max(4, float64(fmax)*1.1)

	lanes := newEventLanes(rd.markers)
	events.Y.Min, events.Y.Max = -0.6, float64(len(lanes.lanes))-0.4
	events.Y.Tick.Marker = lanes.ticks()
	events.Y.Padding = 0
	events.Add(lanes)
	events.Add(fades...)
	top.Add(stackBars{h: rd.h})
	top.Add(fades...)
	lines := panelLines(rd.markers)
	top.Add(lines)
	bottom.Add(stackBars{h: rd.h, failedOnly: true})
	bottom.Add(fades...)
	bottom.Add(lines)
	if fmax == 0 {
		bottom.Add(note("no failed requests in this stretch"))
	}
	return timelinePanels{events: events, top: top, bottom: bottom, lanes: len(lanes.lanes)}
}

// stack lays plots out top to bottom in c, pad apart, with their data
// areas aligned left and right. A plot with a fixed data height gets it;
// the others share the rest equally (their data areas equally high).
func stack(c draw.Canvas, ps []*gplot.Plot, dataH []vg.Length, pad vg.Length) []draw.Canvas {
	// What each plot needs around its data area (title, axes) does not
	// depend on the canvas size: measure it on c.
	over := make([]vg.Length, len(ps))
	rest := c.Max.Y - c.Min.Y - pad*vg.Length(len(ps)-1)
	flex := 0
	for i, p := range ps {
		d := p.DataCanvas(c)
		over[i] = (c.Max.Y - c.Min.Y) - (d.Max.Y - d.Min.Y)
		rest -= over[i]
		if dataH[i] > 0 {
			rest -= dataH[i]
		} else {
			flex++
		}
	}
	cs := make([]draw.Canvas, len(ps))
	y := c.Max.Y
	for i := range ps {
		h := dataH[i]
		if h <= 0 {
			h = rest / vg.Length(flex)
		}
		h += over[i]
		cs[i] = c
		cs[i].Max.Y, cs[i].Min.Y = y, y-h
		y -= h + pad
	}
	// Align the data areas: every plot gets the widest left and right
	// margins any of them needs.
	var left, right vg.Length
	for i, p := range ps {
		d := p.DataCanvas(cs[i])
		left, right = max(left, d.Min.X-cs[i].Min.X), max(right, cs[i].Max.X-d.Max.X)
	}
	for i, p := range ps {
		d := p.DataCanvas(cs[i])
		cs[i] = draw.Crop(cs[i], left-(d.Min.X-cs[i].Min.X), -(right - (cs[i].Max.X - d.Max.X)), 0, 0)
	}
	return cs
}

// classLegend adds an entry per class with requests in sum, in the order
// the stack shows them from the top (2xx first, unless failedOnly).
func classLegend(l *gplot.Legend, sum counts, failedOnly bool) {
	for i := len(classes) - 1; i >= 0; i-- {
		if sum[i] == 0 || (failedOnly && !classes[i].Failed()) {
			continue
		}
		l.Add(string(classes[i]), swatch{ClassColor(classes[i])})
	}
}

// markerLegend adds an entry per kind in kinds, saying "not seen" for a
// kind with no marker.
func markerLegend(l *gplot.Legend, ms []marker, kinds []timeline.Kind) {
	seen := map[timeline.Kind]bool{}
	for _, m := range ms {
		seen[m.kind] = true
	}
	for _, k := range kinds {
		label := markerLabels[k]
		if !seen[k] {
			label += " (not seen)"
		}
		l.Add(label, lineThumb{markerStyles[k]})
	}
}

// panelLines are the markers drawn across the panels: all but the
// per-node kinds, which stay in their lanes (across the panels they would
// hide the bars).
func panelLines(ms []marker) vlines {
	var out vlines
	for _, m := range ms {
		if !slices.Contains(perNode, m.kind) {
			out = append(out, m)
		}
	}
	return out
}
