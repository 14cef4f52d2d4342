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

	"github.com/droprun/droprun/harness/run"
	"github.com/droprun/droprun/harness/timeline"
	"github.com/droprun/droprun/harness/traffic"
)

func TestBinOf(t *testing.T) {
	ms := time.Millisecond
	for _, c := range []struct {
		d    time.Duration
		want int
	}{
		{0, 0}, {99 * ms, 0}, {100*ms - 1, 0}, {100 * ms, 1}, {250 * ms, 2},
		{-1, -1}, {-100 * ms, -1}, {-100*ms - 1, -2}, {-2 * time.Second, -20},
	} {
		if got := binOf(c.d); got != c.want {
			t.Errorf("binOf(%v) = %d, want %d", c.d, got, c.want)
		}
	}
}

func TestHistCountsWhatItIsGiven(t *testing.T) {
	h := newHist(-2*time.Second, 3*time.Second)
	if h.First != -20 || len(h.Bins) != 50 {
		t.Fatalf("range: first bin %d, %d bins; want -20, 50", h.First, len(h.Bins))
	}
	add := func(d time.Duration, c traffic.Class, n int) {
		for range n {
			if !h.add(d, c) {
				t.Fatalf("add(%v) refused inside the range", d)
			}
		}
	}
	add(-2*time.Second, traffic.Class2xx, 3)            // first bin
	add(1050*time.Millisecond, traffic.ClassRefused, 7) // bin 10
	add(1099*time.Millisecond, traffic.ClassTimeout, 2) // bin 10 too
	add(2999*time.Millisecond, traffic.Class2xx, 1)     // last bin
	if h.add(3*time.Second, traffic.Class2xx) || h.add(-2*time.Second-1, traffic.Class2xx) {
		t.Error("add accepted an offset outside the range")
	}
	b := h.Bins[10-h.First]
	if b[indexOf(traffic.ClassRefused)] != 7 || b[indexOf(traffic.ClassTimeout)] != 2 || b.total(false) != 9 || b.total(true) != 9 {
		t.Errorf("bin 10 = %v, want 7 refused and 2 timeouts", b)
	}
	if h.Bins[0][indexOf(traffic.Class2xx)] != 3 || h.Bins[49][indexOf(traffic.Class2xx)] != 1 {
		t.Error("the edge bins did not count their requests")
	}
	s := h.sum()
	if s.total(false) != 13 || s.total(true) != 9 {
		t.Errorf("sum: %d requests, %d failures; want 13, 9", s.total(false), s.total(true))
	}
	if h.max(false) != 9 || h.max(true) != 9 {
		t.Errorf("max: %d, %d; want 9, 9", h.max(false), h.max(true))
	}
}

func TestSparse(t *testing.T) {
	s := sparse{}
	s.add(1234*time.Millisecond, traffic.ClassEOF)
	s.add(1299*time.Millisecond, traffic.ClassEOF)
	s.add(-50*time.Millisecond, traffic.ClassReset)
	o := sparse{}
	o.add(1200*time.Millisecond, traffic.Class503)
	s.merge(o)
	h := s.dense(0, 0)
	if h.First != -1 || len(h.Bins) != 14 {
		t.Fatalf("dense: first %d, %d bins; want -1, 14", h.First, len(h.Bins))
	}
	b := h.Bins[12-h.First]
	if b[indexOf(traffic.ClassEOF)] != 2 || b[indexOf(traffic.Class503)] != 1 {
		t.Errorf("bin 12 = %v", b)
	}
	if h.Bins[0][indexOf(traffic.ClassReset)] != 1 {
		t.Errorf("bin -1 = %v", h.Bins[0])
	}
	if (sparse{}).dense(0, 0) != nil {
		t.Error("an empty sparse histogram should have no dense form")
	}
}

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

// TestMarkersAtTheirTime checks that a timeline marks each event at its
// offset from the rollout's start, and leaves out events outside the
// plotted range and kinds it does not mark.
func TestMarkersAtTheirTime(t *testing.T) {
	rs := run.RolloutSummary{N: 1, Start: at(10), Complete: at(14), WindowEnd: at(16)}
	events := []timeline.Event{
		{Time: at(11.25), Kind: timeline.KindPodReady, Pod: "new"},
		{Time: at(11.5), Kind: timeline.KindPodDeletionRequested, Pod: "old"},
		{Time: at(12.75), Kind: timeline.KindEndpointRemoved, Pod: "old"},
		{Time: at(13), Kind: timeline.KindPodGone, Pod: "old"},
		{Time: at(14), Kind: timeline.KindRolloutComplete},
		{Time: at(11), Kind: timeline.KindEndpointUnready, Pod: "old"},     // not marked
		{Time: at(7.9), Kind: timeline.KindPodDeletionRequested, Pod: "x"}, // before the range
		{Time: at(18.1), Kind: timeline.KindPodGone, Pod: "y"},             // after it
	}
	rd := newRolloutData("v", rs, events, nil)
	want := []marker{
		{timeline.KindPodReady, 1.25}, {timeline.KindPodDeletionRequested, 1.5},
		{timeline.KindEndpointRemoved, 2.75}, {timeline.KindPodGone, 3}, {timeline.KindRolloutComplete, 4},
	}
	if !slices.Equal(rd.markers, want) {
		t.Errorf("markers %v, want %v", rd.markers, want)
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
	rs := run.RolloutSummary{N: 2, Start: at(0), Complete: at(5), WindowEnd: at(7),
		Window: run.Tally{Requests: 700, Failures: 12}}
	rd := newRolloutData("no-prestop", rs, []timeline.Event{{Time: at(2), Kind: timeline.KindPodDeletionRequested, Pod: "p"}}, nil)
	for k := range 900 {
		c := traffic.Class2xx
		if k >= 300 && k < 312 {
			c = traffic.ClassRefused
		}
		rd.h.add(time.Duration(k-200)*10*time.Millisecond, c)
	}
	f, err := timelineFigure(rd)
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

// TestEmptyRow draws every figure for a row with nothing in it: no
// rollouts, no requests, no gaps, and a rollout with no requests at all.
func TestEmptyRow(t *testing.T) {
	sum := &run.Summary{Variants: []run.VariantSummary{{Variant: "empty"}, {Variant: "clean", WindowRequests: 1000}}}
	f, err := variantsFigure(sum)
	if err != nil {
		t.Fatal(err)
	}
	checkImages(t, f, 0, 0)
	f, err = gapsFigure(sum, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkImages(t, f, 0, 0)
	c := NewCollector()
	f, err = sinceFigure(c.sinceData(sum.Variants[0], nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	checkImages(t, f, figWidth, 5*vg.Inch)
	if !strings.Contains(f.Caption, "no failed requests") {
		t.Errorf("caption of a row without failures: %q", f.Caption)
	}
	f, err = timelineFigure(newRolloutData("empty", run.RolloutSummary{N: 1, Start: at(0)}, nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	checkImages(t, f, 0, 0)
	if !strings.Contains(f.Caption, "never closed") {
		t.Errorf("caption of an unclosed window: %q", f.Caption)
	}
	// No summary rows at all.
	if _, err := variantsFigure(&run.Summary{}); err != nil {
		t.Error(err)
	}
}

func TestNamesUniqueAndFileSafe(t *testing.T) {
	if got := fileSafe("the-trap/introducing"); got != "the-trap-introducing" {
		t.Errorf("fileSafe: %q", got)
	}
	if got := fileSafe("../.."); strings.Contains(got, "/") || strings.Trim(got, ".") == "" {
		t.Errorf("fileSafe(../..) = %q", got)
	}
	// Two rows whose file-safe names collide, neither with a rollout
	// (so no results file is needed).
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, run.EventsFile), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	sum := &run.Summary{Variants: []run.VariantSummary{{Variant: "a/b"}, {Variant: "a-b"}}}
	figs, err := NewCollector().Build(dir, sum)
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

// TestBuildRunDir builds the figures of a small synthetic run directory
// and checks them against what was put in it.
func TestBuildRunDir(t *testing.T) {
	dir := writeSynthRun(t)
	c := NewCollector()
	sum, err := run.Analyze(dir, c.Failure)
	if err != nil {
		t.Fatal(err)
	}
	figs, err := c.Build(dir, sum)
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

	// The collector placed every rollout-window failure by its time
	// since the deletion before it, and counted the tail apart.
	rows := map[string]run.VariantSummary{}
	for _, r := range sum.Variants {
		rows[r.Variant] = r
	}
	deleted := deletions(mustEvents(t, dir))
	gaps := splitGaps(sum, deleted)
	for _, w := range []struct {
		row         string
		drops, tail uint64
		bins        map[int]uint64 // failures per since-deletion bin
		removed     []float64
		notSeen     int
	}{
		{"alpha", 60, 5, map[int]uint64{2: 10, 3: 10, 5: 10, 6: 10, 7: 10}, []float64{1.5, 1.2}, 0},
		{"beta/introducing", 30, 0, map[int]uint64{2: 10, 3: 10, 4: 10}, []float64{1}, 0},
		{"beta", 0, 0, nil, nil, 1},
	} {
		sd := c.sinceData(rows[w.row], gaps[w.row], deleted)
		if sd.drops != w.drops || rows[w.row].Drops != w.drops || sd.tail != w.tail {
			t.Errorf("%s: %d drops (summary %d), %d tail; want %d, %d", w.row, sd.drops, rows[w.row].Drops, sd.tail, w.drops, w.tail)
		}
		got := map[int]uint64{}
		if sd.h != nil {
			for i, b := range sd.h.Bins {
				if n := b.total(true); n > 0 {
					got[sd.h.First+i] = n
				}
			}
		}
		var shown uint64
		for _, n := range got {
			shown += n
		}
		if shown+sd.noDeletion+sd.earlier != sd.drops {
			t.Errorf("%s: %d shown + %d without a deletion + %d before the rollout's first deletion != %d drops", w.row, shown, sd.noDeletion, sd.earlier, sd.drops)
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
	tls, err := binTimelines(dir, sum, mustEvents(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	r1 := tls["alpha"][0]
	s := r1.h.sum()
	// Range: rollout 1 starts at 3 s, its window closes at 9 s; shown
	// from 1 s to 11 s: 1,000 requests, 30 refused (4.5–4.8 s) and the
	// tail's 5 EOFs (10.0–10.05 s).
	if s.total(false) != 1000 || s[indexOf(traffic.ClassRefused)] != 30 || s[indexOf(traffic.ClassEOF)] != 5 {
		t.Errorf("alpha r1 timeline: %d requests, %d refused, %d eof; want 1000, 30, 5", s.total(false), s[indexOf(traffic.ClassRefused)], s[indexOf(traffic.ClassEOF)])
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
		if b.total(false) != 10 {
			t.Errorf("alpha r1 bin %d holds %d requests, want 10 (one every 10 ms)", r1.h.First+i, b.total(false))
			break
		}
	}
	if len(tls["beta/introducing"]) != 1 || len(tls["beta"]) != 1 || tls["beta"][0].rs.N != 2 {
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

	// Build does the same in one call.
	sum2, figs2, err := Build(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(figs2) != len(figs) || len(sum2.Variants) != 3 {
		t.Errorf("Build: %d figures, %d rows; want %d, 3", len(figs2), len(sum2.Variants), len(figs))
	}
}

func inches(l vg.Length) float64 { return float64(l / vg.Inch) }

func mustEvents(t *testing.T, dir string) []timeline.Event {
	t.Helper()
	events, err := readEvents(dir)
	if err != nil {
		t.Fatal(err)
	}
	return events
}

func BenchmarkBuild(b *testing.B) {
	dir := writeSynthRun(b)
	for b.Loop() {
		if _, _, err := Build(dir); err != nil {
			b.Fatal(err)
		}
	}
}
