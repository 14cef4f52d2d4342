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

	"github.com/droprun/droprun/harness/run"
	"github.com/droprun/droprun/harness/timeline"
)

// rigEvent is a rig sample event stamped at s seconds after synthT0, with
// the given detail pairs.
func rigEvent(s float64, kv ...string) timeline.Event {
	d := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		d[kv[i]] = kv[i+1]
	}
	return timeline.Event{Time: at(s), Kind: run.MarkRigSample, Detail: d}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func nearTime(a, b time.Time) bool { return a.Sub(b).Abs() < time.Microsecond }

func TestRigSamples(t *testing.T) {
	if rigSamples([]timeline.Event{{Time: at(1), Kind: timeline.KindPodReady}}) != nil {
		t.Error("samples from a run without any")
	}
	events := []timeline.Event{
		rigEvent(1.0, "interval_ms", "250.0", "lag_ms", "12.5", "cpu_pressure", "0.400", "host_busy", "0.700"),
		{Time: at(1.1), Kind: timeline.KindPodReady, Pod: "p"},
		// Stamped 0.3 s late: the next sample's interval says it was
		// taken at 1.25 s.
		rigEvent(1.55, "interval_ms", "250.0", "lag_ms", "300.0", "cpu_pressure", "1.000", "host_busy", "0.900"),
		// Its counters had not moved (host_busy 0): merged into the one
		// before, whose CPU span then ends at 1.55 s. Pressure weighted
		// by time: (1·0.25 + 0.2·0.3)/0.55.
		rigEvent(1.55, "interval_ms", "300.0", "lag_ms", "310.0", "cpu_pressure", "0.200", "host_busy", "0.000"),
		// No CPU pressure reported.
		rigEvent(1.8, "interval_ms", "250.0", "lag_ms", "0.0", "host_busy", "0.500"),
		// Too short for its own busy share: merged, busy weighted too:
		// (0.5·0.25 + 1·0.005)/0.255.
		rigEvent(1.805, "interval_ms", "5.0", "lag_ms", "1.0", "host_busy", "1.000"),
	}
	got := rigSamples(events)
	type want struct {
		t, interval, cpuEnd, lag, pressure, busy float64
	}
	wants := []want{
		{1.0, 0.25, 1.0, 0.0125, 0.4, 0.7},
		{1.25, 0.25, 1.55, 0.3, (0.25 + 0.2*0.3) / 0.55, 0.9},
		{1.55, 0.3, 1.55, 0.31, -1, -1},
		{1.8, 0.25, 1.805, 0, -1, (0.5*0.25 + 0.005) / 0.255},
		{1.805, 0.005, 1.805, 0.001, -1, -1},
	}
	if len(got) != len(wants) {
		t.Fatalf("%d samples, want %d: %+v", len(got), len(wants), got)
	}
	for i, w := range wants {
		g := got[i]
		if !nearTime(g.t, at(w.t)) || !near(g.interval.Seconds(), w.interval) || !nearTime(g.cpuEnd, at(w.cpuEnd)) ||
			!near(g.lag, w.lag) || !near(g.pressure, w.pressure) || !near(g.busy, w.busy) {
			t.Errorf("sample %d: t %v, interval %v, cpu to %v, lag %g, pressure %g, busy %g; want %+v",
				i, g.t.Sub(synthT0), g.interval, g.cpuEnd.Sub(synthT0), g.lag, g.pressure, g.busy, w)
		}
	}

	// A run whose samples never read the host's CPU keeps their pressure.
	got = rigSamples([]timeline.Event{
		rigEvent(1, "interval_ms", "250.0", "cpu_pressure", "0.300"),
		rigEvent(1.25, "interval_ms", "250.0", "cpu_pressure", "0.500"),
	})
	if len(got) != 2 || got[0].busy != -1 || got[1].busy != -1 || got[0].pressure != 0.3 || got[1].pressure != 0.5 {
		t.Errorf("samples without host_busy: %+v", got)
	}
}

func TestRigBetween(t *testing.T) {
	var all []rigSample
	for k := 1; k <= 20; k++ {
		s := float64(k) * 0.25
		all = append(all, rigSample{t: at(s), interval: 250 * time.Millisecond})
	}
	got := rigBetween(all, at(1.1), at(2.1))
	// Taken within [1.1, 2.1]: 1.25 ... 2.0; and 2.25, which covers
	// from 2.0.
	if len(got) != 5 || !got[0].t.Equal(at(1.25)) || !got[4].t.Equal(at(2.25)) {
		t.Errorf("samples %v", got)
	}
	if cap(got) != len(got) {
		t.Error("the samples of a range can be appended to over the next ones")
	}
	if got := rigBetween(all, at(10), at(12)); got != nil {
		t.Errorf("samples after the last: %v", got)
	}
	if got := rigBetween(all, at(-5), at(0.1)); len(got) != 1 {
		t.Errorf("the first sample covers from 0 s: %v", got)
	}
	if rigBetween(nil, at(0), at(1)) != nil {
		t.Error("samples from none")
	}
}

// TestRigLagLine draws the lag line and checks its points are the
// samples', at their offsets and lags, split where the sampler stopped.
func TestRigLagLine(t *testing.T) {
	t0 := at(10)
	ms := time.Millisecond
	ss := []rigSample{
		{t: at(9.5), interval: 250 * ms, lag: 0.01},
		{t: at(9.75), interval: 250 * ms, lag: 0.2},
		{t: at(10), interval: 250 * ms, lag: 0.8},
		{t: at(10.5), interval: 500 * ms, lag: 0.5}, // starved: a long interval, still joined
		{t: at(13), interval: 250 * ms, lag: 0.1},   // after a pause: a new line
		{t: at(13.25), interval: 250 * ms, lag: 0},
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
		{t: at(1), interval: 250 * ms, cpuEnd: at(1), pressure: 0.5},
		{t: at(1.25), interval: 250 * ms, cpuEnd: at(1.5), pressure: 1}, // merged with the next
		{t: at(1.5), interval: 250 * ms, cpuEnd: at(1.5), pressure: -1},
		{t: at(1.75), interval: 250 * ms, cpuEnd: at(1.75), pressure: -1}, // not reported
		{t: at(2), interval: 250 * ms, cpuEnd: at(2), pressure: 0.2},
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

func TestLagText(t *testing.T) {
	for s, want := range map[float64]string{0.0125: "13 ms", 0.25: "250 ms", 0.9996: "1.0 s", 4.73: "4.7 s", 29.7299: "29.7 s"} {
		if got := lagText(s); got != want {
			t.Errorf("lagText(%g) = %q, want %q", s, got, want)
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

// TestBuildRunDirRig builds the synthetic run with rig samples (alpha's
// traffic only): alpha's timelines get the rig panels, beta's do not;
// alpha's rollout 2, whose client fell 1.6 s behind, says the rig was
// short of CPU.
func TestBuildRunDirRig(t *testing.T) {
	dir := writeSynthRigRun(t)
	c := NewCollector()
	sum, err := run.Analyze(dir, c.Failure)
	if err != nil {
		t.Fatal(err)
	}
	figs, err := c.Build(dir, sum)
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
	tls, err := binTimelines(dir, sum, mustEvents(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	for _, rd := range tls["beta"] {
		if len(rd.rig) != 0 {
			t.Errorf("beta rollout %d has %d rig samples", rd.rs.N, len(rd.rig))
		}
	}
	samples := synthRigSamples()
	for _, rd := range tls["alpha"] {
		// Rollout 1 is shown from 1 s to 11 s, rollout 2 from 10 s to
		// 19 s; the sample after the range covers its last 250 ms.
		from, to := rd.rs.Start.Add(-timelinePad).Sub(synthT0).Seconds(), rd.rs.Start.Add(rd.end+timelinePad).Sub(synthT0).Seconds()
		var want []xy
		for _, s := range samples {
			if s.t >= from && s.t < to+0.25 {
				lag := 0.0
				if v, ok := s.detail["lag_ms"]; ok {
					lag = mustFloat(t, v) / 1000
				}
				want = append(want, xy{s.t - rd.rs.Start.Sub(synthT0).Seconds(), lag})
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
	if r := tls["alpha"][1]; maxLag(r.rig) != 1.6 || r.rs.Rig == nil || !r.rs.Rig.Saturated {
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
