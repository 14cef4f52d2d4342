package plot

import (
	"fmt"
	"image/color"
	"math"
	"slices"
	"strconv"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/droprun/droprun/harness/analysis"
	"github.com/droprun/droprun/harness/stats"
	"github.com/droprun/droprun/harness/timeline"
)

// stackBars draws a hist as stacked bars, one BinWidth wide each, x in
// seconds. With failedOnly the 2xx are left out.
type stackBars struct {
	h          *hist
	failedOnly bool
}

// Plot implements plot.Plotter.
func (s stackBars) Plot(c draw.Canvas, p *gplot.Plot) {
	if s.h == nil {
		return
	}
	trX, trY := p.Transforms(&c)
	w := BinWidth.Seconds()
	// Bars overlap their right neighbour by a hair, so anti-aliasing
	// leaves no pale seams between bins.
	const seam = vg.Length(0.3)
	for i := range s.h.Bins {
		x0 := trX(float64(s.h.First+i) * w)
		x1 := trX(float64(s.h.First+i+1)*w) + seam
		var y float64
		for j, v := range s.h.Bins[i] {
			if v == 0 || (s.failedOnly && !classes[j].Failed()) {
				continue
			}
			y0, y1 := trY(y), trY(y+float64(v))
			y += float64(v)
			pts := c.ClipPolygonXY([]vg.Point{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}})
			if len(pts) > 0 {
				c.FillPolygon(ClassColor(classes[j]), pts)
			}
		}
	}
}

// fadeColor is laid over data outside a rollout window.
var fadeColor = color.NRGBA{R: 255, G: 255, B: 255, A: 165}

// fade pales the data between x0 and x1 (seconds): what a window does
// not count.
type fade struct{ x0, x1 float64 }

// Plot implements plot.Plotter.
func (f fade) Plot(c draw.Canvas, p *gplot.Plot) {
	if f.x1 <= f.x0 {
		return
	}
	trX, _ := p.Transforms(&c)
	x0, x1 := max(trX(f.x0), c.Min.X), min(trX(f.x1), c.Max.X)
	if x1 <= x0 {
		return
	}
	c.FillPolygon(fadeColor, []vg.Point{{X: x0, Y: c.Min.Y}, {X: x1, Y: c.Min.Y}, {X: x1, Y: c.Max.Y}, {X: x0, Y: c.Max.Y}})
}

// fadeThumb is the legend thumbnail of fade: a faded bar.
type fadeThumb struct{}

// Thumbnail implements plot.Thumbnailer.
func (fadeThumb) Thumbnail(c *draw.Canvas) {
	swatch{color.Gray{Y: 110}}.Thumbnail(c)
	swatch{fadeColor}.Thumbnail(c)
}

// markerKinds are the cluster events a timeline marks, in legend order.
var markerKinds = analysis.MarkerKinds

// markerLabels say what each marked event is.
var markerLabels = map[timeline.Kind]string{
	timeline.KindPodReady:             "new pod ready",
	timeline.KindPodDeletionRequested: "pod deletion requested",
	timeline.KindKubeProxySynced:      "kube-proxy rules synced",
	timeline.KindRouteRemoved:         "node stopped routing to a pod",
	timeline.KindEndpointRemoved:      "endpoint removed",
	timeline.KindPodGone:              "pod gone",
	timeline.KindRolloutComplete:      "rollout complete",
}

// markerStyles give each marked event its own line: colour and dashes
// both differ, so the lines stay apart in grey print too.
var markerStyles = map[timeline.Kind]draw.LineStyle{
	timeline.KindPodReady:             {Color: hex("#1b7837"), Width: vg.Points(1.6)},
	timeline.KindPodDeletionRequested: {Color: color.Black, Width: vg.Points(1.6), Dashes: []vg.Length{vg.Points(6), vg.Points(3)}},
	timeline.KindKubeProxySynced:      {Color: hex("#2166ac"), Width: vg.Points(1.2), Dashes: []vg.Length{vg.Points(2), vg.Points(2)}},
	timeline.KindRouteRemoved:         {Color: hex("#d6604d"), Width: vg.Points(1.4), Dashes: []vg.Length{vg.Points(4), vg.Points(1.5)}},
	timeline.KindEndpointRemoved:      {Color: hex("#b35806"), Width: vg.Points(2.2), Dashes: []vg.Length{vg.Points(1.5), vg.Points(2.5)}},
	timeline.KindPodGone:              {Color: hex("#542788"), Width: vg.Points(1.4), Dashes: []vg.Length{vg.Points(7), vg.Points(2.5), vg.Points(1.5), vg.Points(2.5)}},
	timeline.KindRolloutComplete:      {Color: hex("#404040"), Width: vg.Points(2.6), Dashes: []vg.Length{vg.Points(12), vg.Points(4)}},
}

// marker is one event to mark: its kind, its node (a kube-proxy sync)
// and x (seconds).
type marker struct {
	kind timeline.Kind
	node string
	x    float64
}

// vlines draws markers as vertical lines across the data area.
type vlines []marker

// Plot implements plot.Plotter.
func (m vlines) Plot(c draw.Canvas, p *gplot.Plot) {
	trX, _ := p.Transforms(&c)
	for _, mk := range m {
		x := trX(mk.x)
		if x < c.Min.X || x > c.Max.X {
			continue
		}
		c.StrokeLine2(panelLine(markerStyles[mk.kind]), x, c.Min.Y, x, c.Max.Y)
	}
}

// panelLine returns sty as drawn across data: a little translucent, so the
// bars under a line still show.
func panelLine(sty draw.LineStyle) draw.LineStyle {
	r, g, b, _ := sty.Color.RGBA()
	sty.Color = color.NRGBA{R: uint8(r >> 8), G: uint8(g >> 8), B: uint8(b >> 8), A: 190}
	return sty
}

// perNode are the marked kinds that happen on each node, drawn in one
// lane per node: a kube-proxy sync, and a node's stop of routing to a pod.
var perNode = []timeline.Kind{timeline.KindKubeProxySynced, timeline.KindRouteRemoved}

// lane is one row of the event lanes: a kind, and for a per-node kind
// the node.
type lane struct {
	kind timeline.Kind
	node string
}

// eventLanes draws markers in lanes, one per kind (markerKinds, the first
// on top) and, for the per-node kinds, one per node: a short bar at each
// event's time. Unlike the vertical lines across the panels, events at the
// same moment stay apart, and each node's rule updates show on their own.
type eventLanes struct {
	lanes []lane
	ms    []marker
}

// newEventLanes lays out the lanes of ms: every marker kind, with each
// per-node kind's lane split per node seen (kept as one lane when none
// was).
func newEventLanes(ms []marker) eventLanes {
	nodes := map[timeline.Kind][]string{}
	for _, m := range ms {
		if slices.Contains(perNode, m.kind) && !slices.Contains(nodes[m.kind], m.node) {
			nodes[m.kind] = append(nodes[m.kind], m.node)
		}
	}
	var ls []lane
	for _, k := range markerKinds {
		if len(nodes[k]) == 0 {
			ls = append(ls, lane{kind: k})
			continue
		}
		slices.Sort(nodes[k])
		for _, n := range nodes[k] {
			ls = append(ls, lane{kind: k, node: n})
		}
	}
	return eventLanes{lanes: ls, ms: ms}
}

// Plot implements plot.Plotter.
func (l eventLanes) Plot(c draw.Canvas, p *gplot.Plot) {
	trX, trY := p.Transforms(&c)
	guide := draw.LineStyle{Color: color.Gray{Y: 225}, Width: vg.Points(0.5)}
	n := len(l.lanes)
	for i := range l.lanes {
		y := trY(float64(n - 1 - i))
		c.StrokeLine2(guide, c.Min.X, y, c.Max.X, y)
	}
	for _, m := range l.ms {
		i := slices.Index(l.lanes, lane{kind: m.kind, node: m.node})
		if i < 0 {
			i = slices.Index(l.lanes, lane{kind: m.kind})
		}
		x := trX(m.x)
		if i < 0 || x < c.Min.X || x > c.Max.X {
			continue
		}
		y := float64(n - 1 - i)
		sty := markerStyles[m.kind]
		sty.Dashes, sty.Width = nil, vg.Points(2.5)
		c.StrokeLine2(sty, x, trY(y-0.38), x, trY(y+0.38))
	}
}

// ticks names the lanes on the y axis.
func (l eventLanes) ticks() gplot.ConstantTicks {
	var ts gplot.ConstantTicks
	n := len(l.lanes)
	for i, ln := range l.lanes {
		label := markerLabels[ln.kind]
		switch {
		case ln.node != "" && ln.kind == timeline.KindRouteRemoved:
			label = "unrouted on " + ln.node
		case ln.node != "":
			label = "kube-proxy " + ln.node
		}
		ts = append(ts, gplot.Tick{Value: float64(n - 1 - i), Label: label})
	}
	return ts
}

// note writes a line of text in the middle of the data area (for a panel
// with nothing to show, saying so).
type note string

// Plot implements plot.Plotter.
func (n note) Plot(c draw.Canvas, _ *gplot.Plot) {
	sty := textStyle(noteSize+2, draw.XCenter, draw.YCenter, color.Black)
	ctr := c.Center()
	r := sty.Rectangle(string(n))
	pad := vg.Points(4)
	bg := color.NRGBA{R: 255, G: 255, B: 255, A: 230}
	c.FillPolygon(bg, []vg.Point{
		{X: ctr.X + r.Min.X - pad, Y: ctr.Y + r.Min.Y - pad}, {X: ctr.X + r.Max.X + pad, Y: ctr.Y + r.Min.Y - pad},
		{X: ctr.X + r.Max.X + pad, Y: ctr.Y + r.Max.Y + pad}, {X: ctr.X + r.Min.X - pad, Y: ctr.Y + r.Max.Y + pad},
	})
	c.FillText(sty, ctr, string(n))
}

// unlabelled wraps a Ticker and drops its labels (the top panel of a
// pair shares the bottom panel's labelled x axis).
type unlabelled struct{ gplot.Ticker }

// Ticks implements plot.Ticker.
func (u unlabelled) Ticks(min, max float64) []gplot.Tick {
	ts := u.Ticker.Ticks(min, max)
	for i := range ts {
		ts[i].Label = ""
	}
	return ts
}

// secondTicks label a time axis in seconds at a step that gives at most
// about 14 labels (0.5, 1, 2, 5, 10... s), with minor ticks between.
type secondTicks struct{}

// Ticks implements plot.Ticker.
func (secondTicks) Ticks(min, max float64) []gplot.Tick {
	steps := []struct{ major, minor float64 }{{0.5, 0.1}, {1, 0.5}, {2, 1}, {5, 1}, {10, 5}, {20, 10}, {30, 10}, {60, 30}, {120, 60}, {300, 60}, {600, 300}}
	st := steps[len(steps)-1]
	for _, s := range steps {
		if (max-min)/s.major <= 14 {
			st = s
			break
		}
	}
	var ts []gplot.Tick
	for k := math.Ceil(min/st.minor - 1e-9); k*st.minor <= max+1e-9; k++ {
		v := k * st.minor
		if v == 0 {
			v = 0 // not -0
		}
		t := gplot.Tick{Value: v}
		if r := math.Remainder(v, st.major); math.Abs(r) < 1e-6 {
			t.Label = strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64)
		}
		ts = append(ts, t)
	}
	return ts
}

// countTicks are linear ticks at whole numbers only (counts have no
// fractions): about six labelled steps of 1, 2 or 5 times a power of ten,
// with unlabelled minor ticks between.
type countTicks struct{}

// Ticks implements plot.Ticker.
func (countTicks) Ticks(min, max float64) []gplot.Tick {
	raw := (max - min) / 6
	step := 1.0
	for _, m := range []float64{1, 2, 5, 10} {
		mag := math.Pow10(int(math.Floor(math.Log10(math.Max(raw, 1)))))
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	minor := step / 5
	if step/5 != math.Trunc(step/5) {
		minor = step / 2
	}
	if minor != math.Trunc(minor) || minor < 1 {
		minor = step
	}
	var ts []gplot.Tick
	for v := math.Ceil(min/minor) * minor; v <= max; v += minor {
		t := gplot.Tick{Value: v}
		if math.Mod(v, step) == 0 {
			t.Label = strconv.FormatInt(int64(v), 10)
		}
		ts = append(ts, t)
	}
	return ts
}

// rowAxis lays p's y axis out as one row per name, the first at the top,
// and returns a grid of vertical lines in gridColor for the caller to add.
func rowAxis(p *gplot.Plot, names []string, gridColor color.Color) *plotter.Grid {
	n := len(names)
	p.Y.Min, p.Y.Max = -0.6, float64(n)-0.4
	var yt gplot.ConstantTicks
	for i, name := range names {
		yt = append(yt, gplot.Tick{Value: float64(n - 1 - i), Label: name})
	}
	p.Y.Tick.Marker = yt
	p.Y.Tick.Label.Font.Size = vg.Points(labelSize)
	grid := plotter.NewGrid()
	grid.Horizontal.Color = nil
	grid.Vertical.Color = gridColor
	return grid
}

// percent formats a share (0.0766) as a percentage with sensible digits.
func percent(x float64) string {
	p := x * 100
	switch {
	case p == 0:
		return "0%"
	case p >= 10:
		return fmt.Sprintf("%.1f%%", p)
	case p >= 1:
		return fmt.Sprintf("%.2f%%", p)
	default:
		return strconv.FormatFloat(p, 'g', 2, 64) + "%"
	}
}

// verb is "is" for one, "are" for more.
func verb(n uint64) string {
	if n == 1 {
		return "is"
	}
	return "are"
}

// plural returns n and noun, with an s when n != 1.
func plural(n uint64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return stats.FormatCount(n) + " " + noun + "s"
}
