package plot

import (
	"fmt"
	"image/color"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/droprun/droprun/harness/analysis"
	"github.com/droprun/droprun/harness/stats"
)

// rigSample is one rig sample, as the analysis corrected it.
type rigSample = analysis.RigSample

// rigStep returns the typical time between the samples of ss (not
// empty): their mean spacing, to 10 ms.
func rigStep(ss []rigSample) time.Duration {
	d := ss[0].Interval
	if len(ss) > 1 {
		d = ss[len(ss)-1].T.Sub(ss[0].T) / time.Duration(len(ss)-1)
	}
	return d.Round(10 * time.Millisecond)
}

// maxLag returns the largest client lag in ss, in seconds.
func maxLag(ss []rigSample) float64 {
	m := 0.0
	for _, s := range ss {
		m = max(m, s.Lag)
	}
	return m
}

// Getters of a sample's CPU shares, for rigSteps and anyValue.
var (
	pressureOf = func(s rigSample) float64 { return s.Pressure }
	busyOf     = func(s rigSample) float64 { return s.Busy }
	// starvedOf is the worst node's share without CPU; -1 when no node
	// was watched.
	starvedOf = func(s rigSample) float64 {
		if s.StarvedNode == "" {
			return -1
		}
		return s.Starved
	}
)

// anyValue reports whether some sample of ss has a value (not negative).
func anyValue(ss []rigSample, value func(rigSample) float64) bool {
	for _, s := range ss {
		if value(s) >= 0 {
			return true
		}
	}
	return false
}

// Rig panel styles: the CPU panel in greys (CPU pressure a filled area,
// host busy a thin line over it), the client's lag a blue line over a
// pale fill, its tolerance a dashed red line; the worst node's share
// without CPU an orange line.
var (
	pressureFill  = hex("#bdbdbd")
	busyStyle     = draw.LineStyle{Color: hex("#252525"), Width: vg.Points(1)}
	starvedStyle  = draw.LineStyle{Color: hex("#e6550d"), Width: vg.Points(1.2)}
	lagFill       = hex("#c6dbef")
	lagStyle      = draw.LineStyle{Color: hex("#08519c"), Width: vg.Points(1.5)}
	toleranceLine = draw.LineStyle{Color: hex("#cb181d"), Width: vg.Points(1.2), Dashes: []vg.Length{vg.Points(5), vg.Points(3)}}
	warningColor  = hex("#a50f15")
)

// rigGap is how far apart two samples may be, beyond the interval the
// later one covers, for their lines to be joined: more, and the sampler
// was not running in between (nothing is drawn there).
const rigGap = analysis.RigGap

// rigRuns splits ss into stretches of contiguous samples: a sample that
// starts more than rigGap after the one before ended starts a new one.
func rigRuns(ss []rigSample) [][]rigSample {
	var runs [][]rigSample
	start := 0
	for k := 1; k < len(ss); k++ {
		if ss[k].T.Add(-ss[k].Interval).After(ss[k-1].T.Add(rigGap)) {
			runs = append(runs, ss[start:k])
			start = k
		}
	}
	if len(ss) > 0 {
		runs = append(runs, ss[start:])
	}
	return runs
}

// rigSteps draws a share each sample holds over its CPU span (CPU
// pressure or host busy), as steps, in percent: filled down to zero when
// fill is set, else as a line. Samples without the value leave a gap. x
// is seconds since t0.
type rigSteps struct {
	ss    []rigSample
	t0    time.Time
	value func(rigSample) float64 // 0..1; negative: none
	fill  color.Color             // nil: a line in style
	style draw.LineStyle
}

// steps returns the steps rigSteps draws, in data coordinates (x seconds,
// y percent): per stretch of contiguous samples, two points per sample.
func (r rigSteps) steps() [][]xy {
	var out [][]xy
	var cur []xy
	var end time.Time
	for _, s := range r.ss {
		v := r.value(s)
		if v < 0 {
			continue
		}
		from := s.T.Add(-s.Interval)
		if len(cur) > 0 && from.After(end.Add(rigGap)) {
			out, cur = append(out, cur), nil
		}
		cur = append(cur, xy{from.Sub(r.t0).Seconds(), 100 * v}, xy{s.CPUEnd.Sub(r.t0).Seconds(), 100 * v})
		end = s.CPUEnd
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// Plot implements plot.Plotter.
func (r rigSteps) Plot(c draw.Canvas, p *gplot.Plot) {
	trX, trY := p.Transforms(&c)
	for _, l := range r.steps() {
		pts := make([]vg.Point, len(l), len(l)+2)
		for k, d := range l {
			pts[k] = vg.Point{X: trX(d.x), Y: trY(d.y)}
		}
		if r.fill == nil {
			for _, cl := range c.ClipLinesXY(pts) {
				c.StrokeLines(r.style, cl)
			}
			continue
		}
		zero := trY(0)
		pts = append(pts, vg.Point{X: pts[len(pts)-1].X, Y: zero}, vg.Point{X: pts[0].X, Y: zero})
		if pts = c.ClipPolygonXY(pts); len(pts) > 0 {
			c.FillPolygon(r.fill, pts)
		}
	}
}

// rigLag draws the client's lag behind schedule, in seconds, as a line
// through the samples (each says how late the latest request went out
// when it was taken), over a pale fill down to zero. x is seconds since
// t0.
type rigLag struct {
	ss []rigSample
	t0 time.Time
}

// points returns the lines rigLag draws, one per stretch of contiguous
// samples, in data coordinates.
func (r rigLag) points() [][]xy {
	var out [][]xy
	for _, ss := range rigRuns(r.ss) {
		l := make([]xy, len(ss))
		for k, s := range ss {
			l[k] = xy{s.T.Sub(r.t0).Seconds(), s.Lag}
		}
		out = append(out, l)
	}
	return out
}

// xy is a point in data coordinates.
type xy struct{ x, y float64 }

// Plot implements plot.Plotter.
func (r rigLag) Plot(c draw.Canvas, p *gplot.Plot) {
	trX, trY := p.Transforms(&c)
	for _, l := range r.points() {
		pts := make([]vg.Point, len(l))
		for k, d := range l {
			pts[k] = vg.Point{X: trX(d.x), Y: trY(d.y)}
		}
		zero := trY(0)
		area := append(slices.Clip(pts), vg.Point{X: pts[len(pts)-1].X, Y: zero}, vg.Point{X: pts[0].X, Y: zero})
		if area = c.ClipPolygonXY(area); len(area) > 0 {
			c.FillPolygon(lagFill, area)
		}
		for _, cl := range c.ClipLinesXY(pts) {
			c.StrokeLines(lagStyle, cl)
		}
	}
}

// hline draws a horizontal line across the data area at y.
type hline struct {
	y     float64
	style draw.LineStyle
}

// Plot implements plot.Plotter.
func (h hline) Plot(c draw.Canvas, p *gplot.Plot) {
	_, trY := p.Transforms(&c)
	y := trY(h.y)
	if y < c.Min.Y || y > c.Max.Y {
		return
	}
	c.StrokeLine2(h.style, c.Min.X, y, c.Max.X, y)
}

// percentAxisTicks label a 0–100 % axis every 50, with minor ticks every
// 25.
var percentAxisTicks = gplot.ConstantTicks{
	{Value: 0, Label: "0"}, {Value: 25}, {Value: 50, Label: "50"}, {Value: 75}, {Value: 100, Label: "100"},
}

// lagTicks label a seconds axis from 0 at a step of 1, 2.5 or 5 times a
// power of ten that gives at most five labels (a thin panel; 0.25 s, the
// lag tolerance, is a step on the axis of a client that kept up), with
// five minor steps per step.
type lagTicks struct{}

// Ticks implements plot.Ticker.
func (lagTicks) Ticks(lo, hi float64) []gplot.Tick {
	if !(hi > lo) {
		return nil
	}
	mag := math.Pow10(int(math.Floor(math.Log10((hi - lo) / 4))))
	step := 10 * mag
	for _, m := range []float64{1, 2.5, 5} {
		if (hi-lo)/(m*mag) <= 4.5 {
			step = m * mag
			break
		}
	}
	minor := step / 5
	var ts []gplot.Tick
	for k := math.Ceil(lo/minor - 1e-9); k*minor <= hi+1e-9; k++ {
		v := k * minor
		if v == 0 {
			v = 0 // not -0
		}
		t := gplot.Tick{Value: v}
		if r := math.Remainder(v, step); math.Abs(r) < minor/100 {
			l := strconv.FormatFloat(v, 'f', 6, 64)
			t.Label = strings.TrimSuffix(strings.TrimRight(l, "0"), ".")
		}
		ts = append(ts, t)
	}
	return ts
}

// rigSaturation says, for a caption, that the rig was short of CPU during
// rs, or "" when it was not (or is not known).
func rigSaturation(rs analysis.RolloutSummary) string {
	if rs.Rig == nil || !rs.Rig.Saturated {
		return ""
	}
	return fmt.Sprintf("The rig was short of CPU during this rollout: %s; its failures may be the machine's, not the variant's.", rs.Rig.Stalls(", and "))
}

// rigPanels are a timeline's two panels about the rig: its CPU (pressure
// and busy share) and the client's lag behind schedule.
type rigPanels struct {
	cpu, lag *gplot.Plot
	leg      gplot.Legend
}

// newRigPanels builds the rig panels of rd, over x from xmin to xmax
// seconds (rd has rig samples).
func newRigPanels(rd *rolloutData, xmin, xmax float64, fades []gplot.Plotter) rigPanels {
	title := "the rig: the machine that runs the cluster and the traffic client"
	if rd.rs.Rig != nil && rd.rs.Rig.Saturated {
		title = fmt.Sprintf("the rig was short of CPU: %s\n(its failures may be the machine's, not the variant's)", rd.rs.Rig.Stalls(",\n"))
	}
	cpu := newPlot(title, "", "CPU, %")
	cpu.Title.TextStyle.Font.Size = labelSize
	if rd.rs.Rig != nil && rd.rs.Rig.Saturated {
		cpu.Title.TextStyle.Color = warningColor
	}
	lag := newPlot("", "seconds since the rollout started", "client lag, s")
	for _, p := range []*gplot.Plot{cpu, lag} {
		p.X.Min, p.X.Max = xmin, xmax
		p.Y.Min = 0
		p.Y.Padding = 0
	}
	cpu.X.Tick.Marker = unlabelled{secondTicks{}}
	lag.X.Tick.Marker = secondTicks{}
	cpu.Y.Max = 105 // a busy line at 100% clears the panel's top
	cpu.Y.Tick.Marker = percentAxisTicks
	tol := analysis.SaturationLag.Seconds()
	lag.Y.Max = max(2*tol, maxLag(rd.rig)*1.08)
	lag.Y.Tick.Marker = lagTicks{}

	pressure, busy := anyValue(rd.rig, pressureOf), anyValue(rd.rig, busyOf)
	t0 := rd.rs.Start
	if pressure {
		cpu.Add(rigSteps{ss: rd.rig, t0: t0, value: pressureOf, fill: pressureFill})
	}
	if busy {
		cpu.Add(rigSteps{ss: rd.rig, t0: t0, value: busyOf, style: busyStyle})
	}
	starved := anyValue(rd.rig, starvedOf)
	if starved {
		cpu.Add(rigSteps{ss: rd.rig, t0: t0, value: starvedOf, style: starvedStyle})
	}
	cpu.Add(fades...)
	cpu.Add(panelLines(rd.markers))
	if !pressure {
		cpu.Add(note("the kernel does not report CPU pressure"))
	}
	lag.Add(rigLag{ss: rd.rig, t0: t0})
	lag.Add(hline{tol, toleranceLine})
	lag.Add(fades...)
	lag.Add(panelLines(rd.markers))

	leg := newLegend()
	if pressure {
		leg.Add("CPU pressure", swatch{pressureFill})
	}
	if busy {
		leg.Add("host CPU busy", lineThumb{busyStyle})
	}
	if starved {
		leg.Add("worst node without CPU", lineThumb{starvedStyle})
	}
	leg.Add("")
	leg.Add("client lag behind schedule", lineThumb{lagStyle})
	leg.Add(stats.FormatSeconds(tol)+" lag tolerance", lineThumb{toleranceLine})
	return rigPanels{cpu: cpu, lag: lag, leg: leg}
}
