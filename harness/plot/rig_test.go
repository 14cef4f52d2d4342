package plot

import (
	"bytes"
	"image/png"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/recorder"

	"github.com/droprun/droprun/harness/analysis"
	"github.com/droprun/droprun/harness/analysis/analysistest"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// Decoding and correcting the rig samples, and picking a range's, are the
// analysis's: harness/analysis tests them (rig_test.go).

// TestRigLagLine draws the lag line and checks its points are the
// samples', at their offsets and lags, split where the sampler stopped.
func TestRigLagLine(t *testing.T) {
	t0 := at(10)
	ms := time.Millisecond
	ss := []rigSample{
		{T: at(9.5), Interval: 250 * ms, Lag: 0.01},
		{T: at(9.75), Interval: 250 * ms, Lag: 0.2},
		{T: at(10), Interval: 250 * ms, Lag: 0.8},
		{T: at(10.5), Interval: 500 * ms, Lag: 0.5}, // starved: a long interval, still joined
		{T: at(13), Interval: 250 * ms, Lag: 0.1},   // after a pause: a new line
		{T: at(13.25), Interval: 250 * ms, Lag: 0},
	}
	want := [][]xy{{{-0.5, 0.01}, {-0.25, 0.2}, {0, 0.8}, {0.5, 0.5}}, {{3, 0.1}, {3.25, 0}}}
	got := rigLag{ss: ss, t0: t0}.points()
	if len(got) != len(want) {
		t.Fatalf("lines %v, want %v", got, want)
	}
	for i := range want {
		if len(got[i]) != len(want[i]) {
			t.Fatalf("line %d: %v, want %v", i, got[i], want[i])
		}
		for k := range want[i] {
			if !near(got[i][k].x, want[i][k].x) || !near(got[i][k].y, want[i][k].y) {
				t.Errorf("line %d point %d: %v, want %v", i, k, got[i][k], want[i][k])
			}
		}
	}

	// Drawn on a 400×100 canvas over x -2..8 s (40 points a second) and
	// y 0..1 s (100 points a second): one stroke per line, through the
	// samples.
	rec := &recorder.Canvas{}
	c := draw.NewCanvas(rec, 400, 100)
	p := gplot.New()
	p.X.Min, p.X.Max = -2, 8
	p.Y.Min, p.Y.Max = 0, 1
	rigLag{ss: ss, t0: t0}.Plot(c, p)
	var strokes [][]vg.Point
	for _, a := range rec.Actions {
		if s, ok := a.(*recorder.Stroke); ok {
			var pts []vg.Point
			for _, comp := range s.Path {
				pts = append(pts, comp.Pos)
			}
			strokes = append(strokes, pts)
		}
	}
	if len(strokes) != len(want) {
		t.Fatalf("%d strokes, want %d", len(strokes), len(want))
	}
	for i, l := range want {
		if len(strokes[i]) != len(l) {
			t.Fatalf("stroke %d has %d points, want %d", i, len(strokes[i]), len(l))
		}
		for k, d := range l {
			wx, wy := 40*(d.x+2), 100*d.y
			if g := strokes[i][k]; !near(g.X.Points(), wx) || !near(g.Y.Points(), wy) {
				t.Errorf("stroke %d point %d at (%g, %g), want (%g, %g)", i, k, g.X.Points(), g.Y.Points(), wx, wy)
			}
		}
	}

	// The tolerance line is horizontal, at its lag.
	rec = &recorder.Canvas{}
	c = draw.NewCanvas(rec, 400, 100)
	hline{0.25, toleranceLine}.Plot(c, p)
	if len(rec.Actions) == 0 {
		t.Fatal("no tolerance line")
	}
	for _, a := range rec.Actions {
		if s, ok := a.(*recorder.Stroke); ok {
			first, last := s.Path[0].Pos, s.Path[len(s.Path)-1].Pos
			if !near(first.Y.Points(), 25) || first.Y != last.Y || first.X != 0 || last.X != 400 {
				t.Errorf("tolerance line from %v to %v, want y=25 across", first, last)
			}
		}
	}
}

// TestRigSteps checks the CPU steps: each sample's share over its CPU
// span, in percent, with gaps where a sample has none.
func TestRigSteps(t *testing.T) {
	ms := time.Millisecond
	ss := []rigSample{
		{T: at(1), Interval: 250 * ms, CPUEnd: at(1), Pressure: 0.5},
		{T: at(1.25), Interval: 250 * ms, CPUEnd: at(1.5), Pressure: 1}, // merged with the next
		{T: at(1.5), Interval: 250 * ms, CPUEnd: at(1.5), Pressure: -1},
		{T: at(1.75), Interval: 250 * ms, CPUEnd: at(1.75), Pressure: -1}, // not reported
		{T: at(2), Interval: 250 * ms, CPUEnd: at(2), Pressure: 0.2},
	}
	got := rigSteps{ss: ss, t0: at(0), value: pressureOf}.steps()
	want := [][]xy{
		{{0.75, 50}, {1, 50}, {1, 100}, {1.5, 100}},
		{{1.75, 20}, {2, 20}},
	}
	if len(got) != len(want) {
		t.Fatalf("steps %v, want %v", got, want)
	}
	for i := range want {
		if !slices.EqualFunc(got[i], want[i], func(a, b xy) bool { return near(a.x, b.x) && near(a.y, b.y) }) {
			t.Errorf("steps %d: %v, want %v", i, got[i], want[i])
		}
	}
}

func TestLagTicks(t *testing.T) {
	for _, c := range []struct {
		max  float64
		want []string
	}{
		{0.5, []string{"0", "0.25", "0.5"}},
		{0.864, []string{"0", "0.25", "0.5", "0.75"}},
		{5.1, []string{"0", "2.5", "5"}},
		{15.2, []string{"0", "5", "10", "15"}},
		{26.5, []string{"0", "10", "20"}},
		{80, []string{"0", "25", "50", "75"}},
	} {
		var got []string
		for _, tk := range (lagTicks{}).Ticks(0, c.max) {
			if tk.Label != "" {
				got = append(got, tk.Label)
			}
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("lag ticks up to %g: %q, want %q", c.max, got, c.want)
		}
	}
}

// pngHeight returns a figure's PNG height in inches.
func pngHeight(t *testing.T, f Figure) float64 {
	t.Helper()
	cfg, err := png.DecodeConfig(bytes.NewReader(f.PNG))
	if err != nil {
		t.Fatalf("%s: %v", f.Name, err)
	}
	return float64(cfg.Height) / DPI
}

// TestBuildRunDirRig draws the synthetic run with rig samples (alpha's
// traffic only): alpha's timelines get the rig panels, beta's do not;
// alpha's rollout 2, whose client fell 1.6 s behind, says the rig was
// short of CPU.
func TestBuildRunDirRig(t *testing.T) {
	dir := analysistest.Write(t, analysistest.Run{Events: append(analysistest.Events(), analysistest.RigSamples()...)})
	a := analyze(t, dir)
	figs, err := Figures(a)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]Figure{}
	for _, f := range figs {
		byName[f.Name] = f
		checkImages(t, f, 0, 0)
	}
	for name, h := range map[string]vg.Length{
		"timeline-alpha-r1":            timelineRigHeight,
		"timeline-alpha-r2":            timelineRigHeight,
		"timeline-beta-introducing-r1": timelineHeight,
		"timeline-beta-r2":             timelineHeight,
	} {
		f, ok := byName[name]
		if !ok {
			t.Fatalf("no figure %s", name)
		}
		checkImages(t, f, figWidth, h)
		if rig := strings.Contains(f.Caption, "the rig (the machine"); rig != (h == timelineRigHeight) {
			t.Errorf("%s: the caption describes rig panels: %v, want %v", name, rig, !rig)
		}
	}

	r2 := byName["timeline-alpha-r2"]
	const sat = "The rig was short of CPU during this rollout: the client ran up to 1.6 s behind schedule and its goroutines waited up to 1 ms for a core; its failures may be the machine's, not the variant's."
	if !strings.HasPrefix(r2.Caption, sat) {
		t.Errorf("caption of the saturated rollout: %q", r2.Caption)
	}
	if !strings.HasSuffix(r2.Title, "; the rig was short of CPU") {
		t.Errorf("title of the saturated rollout: %q", r2.Title)
	}
	for _, name := range []string{"timeline-alpha-r1", "timeline-beta-r2"} {
		if f := byName[name]; strings.Contains(f.Title+f.Caption, "short of CPU") {
			t.Errorf("%s says the rig was short of CPU: %q / %q", name, f.Title, f.Caption)
		}
	}

	// Each timeline holds the samples of its range, and its lag line
	// goes through every one of them.
	series := map[string]*analysis.RowSeries{}
	for _, rs := range a.Rows {
		series[rs.Row] = rs
	}
	for _, s := range series["beta"].Rollouts {
		if rd := rolloutDataOf(s); len(rd.rig) != 0 {
			t.Errorf("beta rollout %d has %d rig samples", rd.rs.N, len(rd.rig))
		}
	}
	samples := analysistest.RigSamples()
	var alpha []*rolloutData
	for _, s := range series["alpha"].Rollouts {
		alpha = append(alpha, rolloutDataOf(s))
	}
	for _, rd := range alpha {
		// Rollout 1 is shown from 1 s to 11 s, rollout 2 from 10 s to
		// 19 s; the sample after the range covers its last 250 ms.
		t0 := rd.rs.Start.Sub(analysistest.T0).Seconds()
		from, to := t0-timelinePad.Seconds(), t0+(rd.end+timelinePad).Seconds()
		var want []xy
		for _, s := range samples {
			if s.T >= from && s.T < to+0.25 {
				lag := 0.0
				if v, ok := s.Event.Detail["lag_ms"]; ok {
					lag = mustFloat(t, v) / 1000
				}
				want = append(want, xy{s.T - t0, lag})
			}
		}
		lines := rigLag{ss: rd.rig, t0: rd.rs.Start}.points()
		if len(lines) != 1 {
			t.Fatalf("alpha rollout %d: %d lag lines, want 1", rd.rs.N, len(lines))
		}
		if !slices.EqualFunc(lines[0], want, func(a, b xy) bool { return math.Abs(a.x-b.x) < 1e-6 && near(a.y, b.y) }) {
			t.Errorf("alpha rollout %d: lag line %v, want %v", rd.rs.N, lines[0], want)
		}
	}
	if r := alpha[1]; maxLag(r.rig) != 1.6 || r.rs.Rig == nil || !r.rs.Rig.Saturated {
		t.Errorf("alpha rollout 2: max lag %g, rig %+v; want 1.6, saturated", maxLag(r.rig), r.rs.Rig)
	}
}

func mustFloat(t *testing.T, s string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
