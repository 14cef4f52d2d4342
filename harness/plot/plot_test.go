package plot

import (
	"bytes"
	"encoding/xml"
	"errors"
	"image/png"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/recorder"

	"github.com/droprun/droprun/harness/analysis"
	"github.com/droprun/droprun/harness/analysis/analysistest"
	"github.com/droprun/droprun/harness/timeline"
	"github.com/droprun/droprun/harness/traffic"
)

// at is s seconds after the synthetic runs' time zero.
func at(s float64) time.Time { return analysistest.At(s) }

// The bins and histograms are the analysis's: harness/analysis tests them
// (bins_test.go).

// TestEveryClassHasAColour keeps the class order and colours in step with
// traffic's classes.
func TestEveryClassHasAColour(t *testing.T) {
	seen := map[any]traffic.Class{}
	for _, c := range traffic.Classes() {
		clr, ok := classColors[c]
		if !ok {
			t.Errorf("class %s has no colour", c)
		}
		if o, dup := seen[clr]; dup {
			t.Errorf("classes %s and %s share a colour", c, o)
		}
		seen[clr] = c
		if classes[indexOf(c)] != c {
			t.Errorf("indexOf(%s) is wrong", c)
		}
	}
	if classes[len(classes)-1] != traffic.Class2xx {
		t.Error("2xx should be stacked last, on top of the failures")
	}
}

func TestTicks(t *testing.T) {
	labels := func(ts []gplot.Tick) []string {
		var out []string
		for _, t := range ts {
			if t.Label != "" {
				out = append(out, t.Label)
			}
		}
		return out
	}
	if got, want := labels(percentTicks{}.Ticks(1e-7, 1)), []string{"0.00001%", "0.0001%", "0.001%", "0.01%", "0.1%", "1%", "10%", "100%"}; !slices.Equal(got, want) {
		t.Errorf("percent ticks %q, want %q", got, want)
	}
	if got, want := labels(secondTicks{}.Ticks(-2, 19.3)), []string{"-2", "0", "2", "4", "6", "8", "10", "12", "14", "16", "18"}; !slices.Equal(got, want) {
		t.Errorf("second ticks %q, want %q", got, want)
	}
	if got, want := labels(secondTicks{}.Ticks(-0.5, 3)), []string{"-0.5", "0", "0.5", "1", "1.5", "2", "2.5", "3"}; !slices.Equal(got, want) {
		t.Errorf("second ticks %q, want %q", got, want)
	}
	for _, max := range []float64{4, 37, 310, 1600, 25000} {
		ls := labels(countTicks{}.Ticks(0, max))
		if len(ls) < 3 || len(ls) > 12 {
			t.Errorf("count ticks up to %g: %q", max, ls)
		}
		for _, l := range ls {
			if strings.ContainsAny(l, ".e") {
				t.Errorf("count tick %q is not a whole number", l)
			}
		}
	}
}

// TestMarkersAtTheirTime checks that a timeline draws each marker of its
// series at its offset from the rollout's start. Which events are marked
// (the plotted range, the kinds) is the analysis's to decide:
// harness/analysis TestRolloutSeriesMarkers checks that.
func TestMarkersAtTheirTime(t *testing.T) {
	s := &analysis.RolloutSeries{Row: "v", Rollout: analysis.RolloutSummary{N: 1, Start: at(10), Complete: at(14), WindowEnd: at(16)},
		End: 6 * time.Second, Closed: true, Hist: analysis.NewHist(-timelinePad, 6*time.Second+timelinePad),
		Markers: []analysis.Marker{
			{Kind: timeline.KindPodReady, X: 1.25}, {Kind: timeline.KindPodDeletionRequested, X: 1.5},
			{Kind: timeline.KindEndpointRemoved, X: 2.75}, {Kind: timeline.KindPodGone, X: 3}, {Kind: timeline.KindRolloutComplete, X: 4},
		}}
	rd := rolloutDataOf(s)
	want := []marker{
		{kind: timeline.KindPodReady, x: 1.25}, {kind: timeline.KindPodDeletionRequested, x: 1.5},
		{kind: timeline.KindEndpointRemoved, x: 2.75}, {kind: timeline.KindPodGone, x: 3}, {kind: timeline.KindRolloutComplete, x: 4},
	}
	if !slices.Equal(rd.markers, want) {
		t.Errorf("markers %v, want %v", rd.markers, want)
	}
	if rd.row != "v" || rd.rs.N != 1 || rd.end != 6*time.Second || !rd.closed || rd.h != s.Hist {
		t.Errorf("rollout data: row %q, rollout %d, end %v, closed %v; want the series'", rd.row, rd.rs.N, rd.end, rd.closed)
	}
	if rd.h.First != -20 || len(rd.h.Bins) != 100 {
		t.Errorf("timeline bins: first %d, %d bins; want -20 and 100 (−2 s to 8 s)", rd.h.First, len(rd.h.Bins))
	}

	// Drawn, each marker's line stands at its x on the data canvas.
	rec := &recorder.Canvas{}
	c := draw.NewCanvas(rec, 400, 100)
	p := gplot.New()
	p.X.Min, p.X.Max = -2, 8
	p.Y.Min, p.Y.Max = 0, 1
	vlines(rd.markers).Plot(c, p)
	var xs []float64
	for _, a := range rec.Actions {
		if s, ok := a.(*recorder.Stroke); ok {
			xs = append(xs, s.Path[0].Pos.X.Points())
			if s.Path[0].Pos.X != s.Path[len(s.Path)-1].Pos.X {
				t.Error("a marker line is not vertical")
			}
		}
	}
	wantX := []float64{40 * 3.25, 40 * 3.5, 40 * 4.75, 40 * 5, 40 * 6} // 40 points per second from -2
	if len(xs) != len(wantX) {
		t.Fatalf("%d lines drawn, want %d", len(xs), len(wantX))
	}
	for i := range xs {
		if math.Abs(xs[i]-wantX[i]) > 1e-9 {
			t.Errorf("line %d at x=%g, want %g", i, xs[i], wantX[i])
		}
	}
}

// TestKubeProxyLanes checks that kube-proxy syncs get one event lane per
// node, each sync drawn in its node's lane, and stay out of the lines
// drawn across the panels.
func TestKubeProxyLanes(t *testing.T) {
	s := &analysis.RolloutSeries{Row: "v", Rollout: analysis.RolloutSummary{N: 1, Start: at(10), WindowEnd: at(16)},
		End: 6 * time.Second, Closed: true, Hist: analysis.NewHist(-timelinePad, 6*time.Second+timelinePad),
		Markers: []analysis.Marker{
			{Kind: timeline.KindPodDeletionRequested, X: 1},
			{Kind: timeline.KindKubeProxySynced, Node: "w2", X: 1.5},
			{Kind: timeline.KindKubeProxySynced, Node: "cp", X: 2},
			{Kind: timeline.KindEndpointRemoved, X: 2.5},
			{Kind: timeline.KindKubeProxySynced, Node: "w2", X: 3},
		}}
	rd := rolloutDataOf(s)
	if rd.markers[1] != (marker{kind: timeline.KindKubeProxySynced, node: "w2", x: 1.5}) {
		t.Errorf("marker %+v lost its node", rd.markers[1])
	}
	l := newEventLanes(rd.markers)
	kp := timeline.KindKubeProxySynced
	wantLanes := []lane{
		{kind: timeline.KindPodReady}, {kind: timeline.KindPodDeletionRequested},
		{kind: kp, node: "cp"}, {kind: kp, node: "w2"}, {kind: timeline.KindRouteRemoved},
		{kind: timeline.KindEndpointRemoved}, {kind: timeline.KindPodGone}, {kind: timeline.KindRolloutComplete},
	}
	if !slices.Equal(l.lanes, wantLanes) {
		t.Fatalf("lanes %v, want %v", l.lanes, wantLanes)
	}
	var labels []string
	for _, tk := range l.ticks() {
		labels = append(labels, tk.Label)
	}
	if labels[2] != "kube-proxy cp" || labels[3] != "kube-proxy w2" || labels[1] != markerLabels[timeline.KindPodDeletionRequested] {
		t.Errorf("lane labels %q", labels)
	}
	if got, want := panelLines(rd.markers), (vlines{rd.markers[0], rd.markers[3]}); !slices.Equal(got, want) {
		t.Errorf("panel lines %v, want %v (no kube-proxy syncs)", got, want)
	}

	// Drawn on a 400×100 canvas over x -2..8 s (40 points a second) and
	// the lanes' y range, as timelineFigure lays them out: each marker's
	// bar is vertical, at its x, centred on its lane (lane i at y n-1-i).
	rec := &recorder.Canvas{}
	c := draw.NewCanvas(rec, 400, 100)
	p := gplot.New()
	n := len(l.lanes)
	p.X.Min, p.X.Max = -2, 8
	p.Y.Min, p.Y.Max = -0.6, float64(n)-0.4
	l.Plot(c, p)
	type bar struct {
		x    float64
		lane int
	}
	var bars []bar
	for _, a := range rec.Actions {
		st, ok := a.(*recorder.Stroke)
		if !ok {
			continue
		}
		first, last := st.Path[0].Pos, st.Path[len(st.Path)-1].Pos
		if first.Y == last.Y {
			continue // a lane's guide
		}
		if first.X != last.X {
			t.Errorf("a marker bar is not vertical: %v to %v", first, last)
		}
		y := (first.Y.Points()+last.Y.Points())/2/100*(p.Y.Max-p.Y.Min) + p.Y.Min
		bars = append(bars, bar{first.X.Points()/40 - 2, n - 1 - int(math.Round(y))})
	}
	wantBars := []bar{{1, 1}, {1.5, 3}, {2, 2}, {2.5, 5}, {3, 3}}
	if !slices.EqualFunc(bars, wantBars, func(a, b bar) bool { return near(a.x, b.x) && a.lane == b.lane }) {
		t.Errorf("bars (x, lane) %v, want %v", bars, wantBars)
	}

	// A node's stop of routing to a pod gets a lane per node too.
	routes := newEventLanes([]marker{{kind: timeline.KindRouteRemoved, node: "w2", x: 1}, {kind: timeline.KindRouteRemoved, node: "cp", x: 1.2}})
	if i := slices.Index(routes.lanes, lane{kind: timeline.KindRouteRemoved, node: "cp"}); i < 0 || routes.lanes[i+1] != (lane{kind: timeline.KindRouteRemoved, node: "w2"}) {
		t.Errorf("route lanes %v, want one per node, sorted", routes.lanes)
	}
	if got := routes.ticks()[slices.Index(routes.lanes, lane{kind: timeline.KindRouteRemoved, node: "cp"})].Label; got != "unrouted on cp" {
		t.Errorf("route lane label %q", got)
	}

	// Without a node (or without any sync), kube-proxy keeps one lane.
	for _, ms := range [][]marker{nil, {{kind: kp, x: 1}}} {
		l := newEventLanes(ms)
		if len(l.lanes) != len(markerKinds) || !slices.Contains(l.lanes, lane{kind: kp}) {
			t.Errorf("markers %v: lanes %v, want one per kind", ms, l.lanes)
		}
	}
}

// checkImages checks that a figure's PNG decodes to the expected size (if
// w > 0) and that its SVG is well-formed XML with an svg root.
func checkImages(t *testing.T, f Figure, w, h vg.Length) {
	t.Helper()
	cfg, err := png.DecodeConfig(bytes.NewReader(f.PNG))
	if err != nil {
		t.Fatalf("%s: PNG: %v", f.Name, err)
	}
	if _, err := png.Decode(bytes.NewReader(f.PNG)); err != nil {
		t.Fatalf("%s: PNG: %v", f.Name, err)
	}
	if cfg.Width != int(math.Round(inches(figWidth)*DPI)) {
		t.Errorf("%s: PNG %d px wide, want %g", f.Name, cfg.Width, inches(figWidth)*DPI)
	}
	if w > 0 && (cfg.Width != int(math.Round(inches(w)*DPI)) || cfg.Height != int(math.Round(inches(h)*DPI))) {
		t.Errorf("%s: PNG %dx%d, want %gx%g", f.Name, cfg.Width, cfg.Height, inches(w)*DPI, inches(h)*DPI)
	}
	dec := xml.NewDecoder(bytes.NewReader(f.SVG))
	root := ""
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: SVG: %v", f.Name, err)
		}
		if se, ok := tok.(xml.StartElement); ok && root == "" {
			root = se.Name.Local
		}
	}
	if root != "svg" {
		t.Errorf("%s: SVG root element %q", f.Name, root)
	}
	if f.Title == "" || f.Caption == "" {
		t.Errorf("%s: no title or caption", f.Name)
	}
}

func TestTimelineFigureImages(t *testing.T) {
	rs := analysis.RolloutSummary{N: 2, Start: at(0), Complete: at(5), WindowEnd: at(7),
		Window: analysis.Tally{Requests: 700, Failures: 12}}
	s := &analysis.RolloutSeries{Row: "no-prestop", Rollout: rs, End: 7 * time.Second, Closed: true,
		Hist:    analysis.NewHist(-timelinePad, 7*time.Second+timelinePad),
		Markers: []analysis.Marker{{Kind: timeline.KindPodDeletionRequested, X: 2}}}
	for k := range 900 {
		c := traffic.Class2xx
		if k >= 300 && k < 312 {
			c = traffic.ClassRefused
		}
		s.Hist.Add(time.Duration(k-200)*10*time.Millisecond, c)
	}
	f, err := timelineFigure(rolloutDataOf(s))
	if err != nil {
		t.Fatal(err)
	}
	if f.Name != "timeline-no-prestop-r2" || f.Variant != "no-prestop" {
		t.Errorf("name %q, variant %q", f.Name, f.Variant)
	}
	if !strings.Contains(f.Title, "12 of 700") {
		t.Errorf("title %q does not count the window's failures", f.Title)
	}
	checkImages(t, f, figWidth, 7.5*vg.Inch)
}

// derived fills in what the analysis derives from a hand-built
// summary's tallies: every row's intervals (analysis.SetIntervals).
func derived(sum *analysis.Summary) *analysis.Summary {
	analysis.SetIntervals(sum)
	return sum
}

// TestEmptyRow draws every figure for a row with nothing in it: no
// rollouts, no requests, no gaps, and a rollout with no requests at all.
func TestEmptyRow(t *testing.T) {
	sum := derived(&analysis.Summary{Variants: []analysis.VariantSummary{{Variant: "empty"}, {Variant: "clean", WindowRequests: 1000}}})
	f, err := variantsFigure(sum)
	if err != nil {
		t.Fatal(err)
	}
	checkImages(t, f, 0, 0)
	f, err = gapsFigure(sum)
	if err != nil {
		t.Fatal(err)
	}
	checkImages(t, f, 0, 0)
	f, err = sinceFigure(sinceDataOf(sum.Variants[0], &analysis.RowSeries{Row: "empty"}))
	if err != nil {
		t.Fatal(err)
	}
	checkImages(t, f, figWidth, 5*vg.Inch)
	if !strings.Contains(f.Caption, "no failed requests") {
		t.Errorf("caption of a row without failures: %q", f.Caption)
	}
	// A window never closed, as the analysis hands it over: its end is
	// where the run stopped (here a minute after the start).
	open := &analysis.RolloutSeries{Row: "empty", Rollout: analysis.RolloutSummary{N: 1, Start: at(0)}, End: time.Minute,
		Hist: analysis.NewHist(-timelinePad, time.Minute+timelinePad)}
	f, err = timelineFigure(rolloutDataOf(open))
	if err != nil {
		t.Fatal(err)
	}
	checkImages(t, f, 0, 0)
	if !strings.Contains(f.Caption, "never closed") {
		t.Errorf("caption of an unclosed window: %q", f.Caption)
	}
	// No summary rows at all.
	if _, err := variantsFigure(&analysis.Summary{}); err != nil {
		t.Error(err)
	}
	if figs, err := Figures(&analysis.Analysis{Summary: &analysis.Summary{}}); err != nil || len(figs) != 2 {
		t.Errorf("figures of a run without rows: %d, %v; want the variants and gaps figures", len(figs), err)
	}
	if _, err := Figures(nil); err == nil {
		t.Error("figures of no analysis")
	}
}

func TestNamesUniqueAndFileSafe(t *testing.T) {
	if got := fileSafe("the-trap/introducing"); got != "the-trap-introducing" {
		t.Errorf("fileSafe: %q", got)
	}
	if got := fileSafe("../.."); strings.Contains(got, "/") || strings.Trim(got, ".") == "" {
		t.Errorf("fileSafe(../..) = %q", got)
	}
	// Two rows whose file-safe names collide, neither with a rollout.
	a := &analysis.Analysis{
		Summary: derived(&analysis.Summary{Variants: []analysis.VariantSummary{{Variant: "a/b"}, {Variant: "a-b"}}}),
		Rows:    []*analysis.RowSeries{{Row: "a/b", Since: analysis.Sparse{}}, {Row: "a-b", Since: analysis.Sparse{}}},
	}
	figs, err := Figures(a)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range figs {
		names = append(names, f.Name)
	}
	want := []string{"variants", "deletion-gaps", "since-deletion-a-b", "since-deletion-a-b-2"}
	if !slices.Equal(names, want) {
		t.Errorf("names %q, want %q", names, want)
	}
	out := t.TempDir()
	if err := Write(out, append(figs, figs[0])); err == nil {
		t.Error("Write accepted two figures with one name")
	}
	if err := Write(out, []Figure{{Name: "../x"}}); err == nil {
		t.Error("Write accepted a name that is not file-safe")
	}
}

// analyze analyses the synthetic run directory dir.
func analyze(tb testing.TB, dir string) *analysis.Analysis {
	tb.Helper()
	a, err := analysis.Analyze(dir, analysis.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	return a
}

// TestBuildRunDir draws the figures of a small synthetic run directory
// (analysistest's) and checks them against what was put in it.
func TestBuildRunDir(t *testing.T) {
	dir := analysistest.Write(t, analysistest.Run{})
	a := analyze(t, dir)
	figs, err := Figures(a)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range figs {
		names = append(names, f.Name)
		if strings.HasPrefix(f.Name, "timeline-") {
			// No rig samples: no rig panels.
			checkImages(t, f, figWidth, timelineHeight)
			if strings.Contains(f.Caption, "rig") {
				t.Errorf("%s: caption mentions the rig: %q", f.Name, f.Caption)
			}
		} else {
			checkImages(t, f, 0, 0)
		}
	}
	want := []string{"variants", "deletion-gaps",
		"since-deletion-alpha", "timeline-alpha-r1", "timeline-alpha-r2",
		"since-deletion-beta-introducing", "timeline-beta-introducing-r1",
		"since-deletion-beta", "timeline-beta-r2"}
	if !slices.Equal(names, want) {
		t.Fatalf("figures %q, want %q", names, want)
	}
	byName := map[string]Figure{}
	for _, f := range figs {
		byName[f.Name] = f
	}
	if v := byName["timeline-beta-introducing-r1"].Variant; v != "beta/introducing" {
		t.Errorf("variant of the introducing timeline: %q", v)
	}

	// The analysis placed every rollout-window failure by its time since
	// the latest deletion of its own rollout, and counted the tail apart.
	// Figures draws row i from a.Rows[i].
	if len(a.Rows) != len(a.Summary.Variants) {
		t.Fatalf("%d row series for %d rows", len(a.Rows), len(a.Summary.Variants))
	}
	rows := map[string]analysis.VariantSummary{}
	series := map[string]*analysis.RowSeries{}
	for i, r := range a.Summary.Variants {
		if a.Rows[i].Row != r.Variant {
			t.Errorf("row %d: series of %q for row %q", i, a.Rows[i].Row, r.Variant)
		}
		rows[r.Variant], series[r.Variant] = r, a.Rows[i]
	}
	for _, w := range []struct {
		row         string
		drops, tail uint64
		bins        map[int]uint64 // failures per since-deletion bin
		noDeletion  uint64
		removed     []float64
		notSeen     int
	}{
		// alpha's 10 EOFs at 12.5–12.6 s were sent before rollout 2
		// deleted old-a2 (13 s): they are not placed against old-a1's
		// deletion (rollout 1's) but counted as sent before their rollout
		// deleted any pod. They were counted apart before too (as
		// "earlier"); now noDeletion holds them all.
		{"alpha", 60, 5, map[int]uint64{2: 10, 3: 10, 5: 10, 6: 10, 7: 10}, 10, []float64{1.5, 1.2}, 0},
		{"beta/introducing", 30, 0, map[int]uint64{2: 10, 3: 10, 4: 10}, 0, []float64{1}, 0},
		{"beta", 0, 0, nil, 0, nil, 1},
	} {
		sd := sinceDataOf(rows[w.row], series[w.row])
		if sd.drops != w.drops || rows[w.row].Drops != w.drops || sd.tail != w.tail {
			t.Errorf("%s: %d drops (summary %d), %d tail; want %d, %d", w.row, sd.drops, rows[w.row].Drops, sd.tail, w.drops, w.tail)
		}
		got := map[int]uint64{}
		if sd.h != nil {
			for i, b := range sd.h.Bins {
				if n := b.Total(true); n > 0 {
					got[sd.h.First+i] = n
				}
			}
		}
		var shown uint64
		for _, n := range got {
			shown += n
		}
		if shown+sd.noDeletion != sd.drops || sd.noDeletion != w.noDeletion {
			t.Errorf("%s: %d shown + %d before their rollout deleted any pod != %d drops (want %d of them not shown)", w.row, shown, sd.noDeletion, sd.drops, w.noDeletion)
		}
		if len(got) != len(w.bins) {
			t.Errorf("%s: since-deletion bins %v, want %v", w.row, got, w.bins)
		}
		for k, n := range w.bins {
			if got[k] != n {
				t.Errorf("%s: since-deletion bin %d holds %d, want %d", w.row, k, got[k], n)
			}
		}
		if len(sd.removed) != len(w.removed) || sd.notSeen != w.notSeen {
			t.Errorf("%s: removal delays %v (%d not seen), want %v (%d)", w.row, sd.removed, sd.notSeen, w.removed, w.notSeen)
		}
		for i := range w.removed {
			if i < len(sd.removed) && math.Abs(sd.removed[i]-w.removed[i]) > 1e-6 {
				t.Errorf("%s: removal delay %g, want %g", w.row, sd.removed[i], w.removed[i])
			}
		}
	}
	if !strings.Contains(byName["since-deletion-beta"].Caption, "no failed requests") {
		t.Errorf("caption of beta's since-deletion figure: %q", byName["since-deletion-beta"].Caption)
	}
	if cap := byName["since-deletion-alpha"].Caption; !strings.Contains(cap, "10 of them, sent before their rollout deleted any pod, are not shown") {
		t.Errorf("caption of alpha's since-deletion figure does not count the failures before the deletion: %q", cap)
	}
	if !strings.Contains(byName["since-deletion-alpha"].Caption, "5 failures after the windows closed") {
		t.Errorf("caption of alpha's since-deletion figure does not count the tail: %q", byName["since-deletion-alpha"].Caption)
	}

	// The timelines hold every request of their plotted range, each in
	// the bin of its offset from the rollout's start.
	r1 := rolloutDataOf(series["alpha"].Rollouts[0])
	s := r1.h.Sum()
	// Range: rollout 1 starts at 3 s, its window closes at 9 s; shown
	// from 1 s to 11 s: 1,000 requests, 30 refused (4.5–4.8 s) and the
	// tail's 5 EOFs (10.0–10.05 s).
	if s.Total(false) != 1000 || s[indexOf(traffic.ClassRefused)] != 30 || s[indexOf(traffic.ClassEOF)] != 5 {
		t.Errorf("alpha r1 timeline: %d requests, %d refused, %d eof; want 1000, 30, 5", s.Total(false), s[indexOf(traffic.ClassRefused)], s[indexOf(traffic.ClassEOF)])
	}
	for k := 15; k <= 17; k++ { // 1.5–1.8 s after the start
		if n := r1.h.Bins[k-r1.h.First][indexOf(traffic.ClassRefused)]; n != 10 {
			t.Errorf("alpha r1 bin %d: %d refused, want 10", k, n)
		}
	}
	if n := r1.h.Bins[70-r1.h.First][indexOf(traffic.ClassEOF)]; n != 5 {
		t.Errorf("alpha r1 bin 70: %d eof, want 5", n)
	}
	for i, b := range r1.h.Bins {
		if b.Total(false) != 10 {
			t.Errorf("alpha r1 bin %d holds %d requests, want 10 (one every 10 ms)", r1.h.First+i, b.Total(false))
			break
		}
	}
	if len(series["beta/introducing"].Rollouts) != 1 || len(series["beta"].Rollouts) != 1 || series["beta"].Rollouts[0].Rollout.N != 2 {
		t.Errorf("beta's rows got the wrong rollouts")
	}

	out := t.TempDir()
	if err := Write(out, figs); err != nil {
		t.Fatal(err)
	}
	for _, n := range want {
		for _, ext := range []string{".png", ".svg"} {
			if _, err := os.Stat(filepath.Join(out, n+ext)); err != nil {
				t.Error(err)
			}
		}
	}

	// Figures reads nothing: with the run directory gone, the same
	// analysis draws the same figures.
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	figs2, err := Figures(a)
	if err != nil {
		t.Fatal(err)
	}
	var names2 []string
	for _, f := range figs2 {
		names2 = append(names2, f.Name)
	}
	if !slices.Equal(names2, names) || len(a.Summary.Variants) != 3 {
		t.Errorf("Figures again: %q, %d rows; want %q, 3", names2, len(a.Summary.Variants), names)
	}
}

func inches(l vg.Length) float64 { return float64(l / vg.Inch) }

// BenchmarkBuild analyses the synthetic run and draws its figures.
func BenchmarkBuild(b *testing.B) {
	dir := analysistest.Write(b, analysistest.Run{})
	for b.Loop() {
		if _, err := Figures(analyze(b, dir)); err != nil {
			b.Fatal(err)
		}
	}
}

// The new-pod share figure is drawn only when a rollout measured it, with
// every decided pod's dot and the undecided spans counted.
func TestBalanceFigure(t *testing.T) {
	sum := &analysis.Summary{Variants: []analysis.VariantSummary{{Variant: "no-prestop", Rollouts: []analysis.RolloutSummary{{N: 1}}}}}
	if _, ok, err := balanceFigure(sum); ok || err != nil {
		t.Fatalf("no balance measured: figure %v, %v; want none", ok, err)
	}
	sum.Variants[0].Rollouts = []analysis.RolloutSummary{
		{N: 1, Balance: &analysis.Balance{Least: 0.25, Pods: []analysis.PodShare{{Pod: "a", OfEven: 0.25}, {Pod: "b", OfEven: 1.75}}}},
		{N: 2, Balance: &analysis.Balance{Undecided: "too few requests"}},
	}
	fig, ok, err := balanceFigure(sum)
	if !ok || err != nil || len(fig.PNG) == 0 || !bytes.Contains(fig.SVG, []byte("0.25 of an even share (1 undecided)")) {
		t.Fatalf("figure %v, %v, %d PNG bytes; want one saying the least share and the undecided span", ok, err, len(fig.PNG))
	}
}
