package analysis

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/droprun/droprun/harness/analysis/analysistest"
	"github.com/droprun/droprun/harness/runfile"
	"github.com/droprun/droprun/harness/timeline"
)

// TestGeneratorRuns: a generator's requests leave from the node it was
// placed on at the time they were sent; a window its gap overlaps is
// incomplete, naming the generator, and others are whole.
func TestGeneratorRuns(t *testing.T) {
	t0 := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	placed := func(s int, origin, node string) timeline.Event {
		return timeline.Event{Time: at(s), Kind: timeline.KindGeneratorPlaced, Detail: map[string]string{"variant": "v", "origin": origin, "node": node}}
	}
	events := []timeline.Event{
		placed(0, "pod-0", "a"), placed(0, "pod-1", "b"), placed(30, "pod-1", "c"),
		placed(0, "pod-0", "elsewhere"), // another variant's below
		{Time: at(31), Kind: timeline.KindGeneratorGap, Detail: map[string]string{"variant": "v", "origin": "pod-1",
			"from": at(20).Format(time.RFC3339Nano), "to": at(30).Format(time.RFC3339Nano), "why": "its container restarted (1)"}},
	}
	events[3].Detail["variant"] = "w"
	g := generatorsOf(events, "v", false)
	for _, tc := range []struct {
		origin string
		s      int
		want   string
	}{{"pod-0", 5, "a"}, {"pod-1", 29, "b"}, {"pod-1", 30, "c"}, {"pod-1", 40, "c"}, {"host", 5, ""}} {
		if got := g.node(tc.origin, at(tc.s)); got != tc.want {
			t.Errorf("%s at %ds: node %q, want %q", tc.origin, tc.s, got, tc.want)
		}
	}
	if why := g.incomplete(at(25), at(35)); !strings.Contains(why, "generator pod-1 missing from 10:00:20.000 to 10:00:30.000 (its container restarted (1))") {
		t.Errorf("a window over the gap: %q", why)
	}
	if why := g.incomplete(at(31), at(40)); why != "" {
		t.Errorf("a window after the gap: %q, want whole", why)
	}
}

// TestGeneratorStallExcusesItsOwn: a timeout in flight while the
// generator that sent it stalled (generator.stall) is excused, naming the
// generator; the same timeout sent by another generator, which kept its
// schedule, is a drop; so the stalled generator's share, not the row, is
// in doubt.
func TestGeneratorStallExcusesItsOwn(t *testing.T) {
	timeout := []analysistest.Failure{{From: 6.0, To: 6.1, Err: analysistest.Timeout, Latency: 2 * time.Second}}
	events := append(analysistest.Events(),
		analysistest.Mark(0, timeline.KindGeneratorPlaced, "alpha", 0, "origin", "pod-0", "node", "a"),
		analysistest.Mark(0, timeline.KindGeneratorPlaced, "alpha", 0, "origin", "pod-1", "node", "b"),
		analysistest.Mark(19, timeline.KindGeneratorStall, "alpha", 0, "origin", "pod-0", "lag", "1.5s",
			"from", analysistest.At(5.5).Format(time.RFC3339Nano), "to", analysistest.At(7).Format(time.RFC3339Nano)))
	dir := analysistest.Write(t, analysistest.Run{Events: events, Failures: []analysistest.Failure{}, Traffic: map[string][2]float64{"beta": {30, 48}},
		Extra: func(dir string) {
			for _, origin := range []string{"pod-0", "pod-1"} {
				analysistest.WriteResults(t, filepath.Join(dir, runfile.ResultsFileOf("alpha", origin)), 0, 19, timeout, nil)
			}
		}})
	a, err := Analyze(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var alpha VariantSummary
	for _, v := range a.Summary.Variants {
		if v.Variant == "alpha" {
			alpha = v
		}
	}
	r := alpha.Rollouts[0] // rollout 1 holds 6.0-6.1 s
	if r.Window.Failures != 20 || r.Excused != 10 {
		t.Fatalf("rollout %d: %d failures, %d excused (%s); want pod-0's 10 of 20 excused", r.N, r.Window.Failures, r.Excused, r.ExcusedWhy)
	}
	if !strings.Contains(r.ExcusedWhy, "the generator pod that sent them was up to 1.5 s behind schedule or waiting for a core") {
		t.Errorf("excused because %q", r.ExcusedWhy)
	}
}

// TestGeneratorClocks: a node's clock is corrected only when an estimate
// is off by more than its bound, then by the estimates interpolated
// linearly (the nearest's outside them); a node never estimated has no
// bound; on kind (shared) nothing is corrected and times are exact.
func TestGeneratorClocks(t *testing.T) {
	t0 := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	placed := func(s int, origin, node, offset string) timeline.Event {
		d := map[string]string{"variant": "v", "origin": origin, "node": node}
		if offset != "" {
			d["offset"], d["bound"] = offset, "5ms"
		}
		return timeline.Event{Time: at(s), Kind: timeline.KindGeneratorPlaced, Detail: d}
	}
	events := []timeline.Event{
		placed(0, "pod-0", "a", "300ms"), placed(0, "pod-1", "b", "2ms"), placed(50, "pod-1", "d", ""),
		{Time: at(101), Kind: timeline.KindGeneratorClock, Detail: map[string]string{"variant": "v", "origin": "pod-0", "node": "a",
			"at": at(100).Format(time.RFC3339Nano), "offset": "500ms", "bound": "5ms"}},
	}
	g := generatorsOf(events, "v", false)
	for _, tc := range []struct {
		origin string
		s      int
		want   time.Duration
	}{{"pod-0", -10, 300 * time.Millisecond}, {"pod-0", 50, 400 * time.Millisecond}, {"pod-0", 200, 500 * time.Millisecond}, {"pod-1", 10, 0}} {
		if got := g.correction(tc.origin, at(tc.s)); got != tc.want {
			t.Errorf("%s at %ds: corrected by %s, want %s", tc.origin, tc.s, got, tc.want)
		}
	}
	if b := g.clockBound("pod-0", at(10)); b != 5*time.Millisecond {
		t.Errorf("pod-0's bound %s, want 5ms", b)
	}
	if b := g.clockBound("pod-1", at(60)); b != unknownClock {
		t.Errorf("pod-1 on node d, never estimated: bound %s, want unknown", b)
	}
	clocks := g.nodeClocks()
	want := []NodeClock{{Node: "a", Estimates: 2, Offset: 0.5, Bound: 0.005, Corrected: true}, {Node: "b", Estimates: 1, Offset: 0.002, Bound: 0.005}, {Node: "d"}}
	if !slices.Equal(clocks, want) {
		t.Errorf("node clocks %+v, want %+v", clocks, want)
	}
	kind := generatorsOf(events, "v", true)
	if c, b := kind.correction("pod-0", at(50)), kind.clockBound("pod-1", at(60)); c != 0 || b != 0 {
		t.Errorf("on kind: corrected by %s, bound %s; want neither", c, b)
	}
}

// TestGeneratorTimesCorrected: a generator whose node's clock ran 1 s
// ahead wrote its records' times 1 s late; with its estimates recorded,
// the analysis puts them back, and the rollouts count what the same
// requests sent on droprun's clock count. Taken as kind (the nodes share
// droprun's clock), nothing is corrected and the windows count otherwise.
func TestGeneratorTimesCorrected(t *testing.T) {
	shift := func(fs []analysistest.Failure, by float64) []analysistest.Failure {
		out := slices.Clone(fs)
		for i := range out {
			out[i].From += by
			out[i].To += by
		}
		return out
	}
	runJSON := func(kind bool) string {
		return fmt.Sprintf(`{"format":"droprun.run/v1","scenario":"synthetic","started":"2026-01-02T03:04:00Z","finished":"2026-01-02T03:05:00Z",
"cluster":{"name":"shop","kind":%t,"nodes":3,"droprun":"test"},
"traffic":{"url":"http://web.droprun.svc.cluster.local.:80/version","rate":100,"keepAlive":false,"method":"GET","timeout":"2s","target":"clusterip","generators":1,"rollouts":2,"settle":"2s","control":"2s","between":"1s"}}`, kind)
	}
	analyzeAlpha := func(kind, ahead bool) VariantSummary {
		by := 0.0
		offset := "0s"
		if ahead {
			by, offset = 1, "1s"
		}
		events := append(analysistest.Events(),
			analysistest.Mark(0, timeline.KindGeneratorPlaced, "alpha", 0, "origin", "pod-0", "node", "a", "offset", offset, "bound", "5ms"))
		dir := analysistest.Write(t, analysistest.Run{RunJSON: runJSON(kind), Events: events, Failures: []analysistest.Failure{}, Traffic: map[string][2]float64{"beta": {30, 48}},
			Extra: func(dir string) {
				analysistest.WriteResults(t, filepath.Join(dir, runfile.ResultsFileOf("alpha", "pod-0")), by, 19+by, shift(analysistest.Failures, by), nil)
			}})
		a, err := Analyze(dir, Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range a.Summary.Variants {
			if v.Variant == "alpha" {
				return v
			}
		}
		t.Fatal("no row alpha")
		return VariantSummary{}
	}
	windows := func(v VariantSummary) []uint64 {
		var out []uint64
		for _, r := range v.Rollouts {
			out = append(out, r.Window.Requests, r.Window.Failures)
		}
		return append(out, v.Control.Requests, v.Control.Failures)
	}
	onTime, ahead, kindAhead := analyzeAlpha(false, false), analyzeAlpha(false, true), analyzeAlpha(true, true)
	if !slices.Equal(windows(ahead), windows(onTime)) {
		t.Errorf("a clock 1 s ahead, corrected: windows %v, want %v as on droprun's clock", windows(ahead), windows(onTime))
	}
	if slices.Equal(windows(kindAhead), windows(onTime)) {
		t.Errorf("taken as kind, the same records were corrected: windows %v", windows(kindAhead))
	}
	if c := ahead.Clocks; len(c) != 1 || !c[0].Corrected || c[0].Offset != 1 {
		t.Errorf("clocks %+v, want node a's, 1 s ahead, corrected", c)
	}
}
