package analysis

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/droprun/droprun/harness/analysis/analysistest"
	"github.com/droprun/droprun/harness/timeline"
)

// TestRolloutSeriesMarkers checks that a rollout's series marks each event
// at its offset from the rollout's start, and leaves out events outside
// the plotted range, kinds it does not mark and kube-proxy syncs that
// applied no change; a sync that did carries its node.
func TestRolloutSeriesMarkers(t *testing.T) {
	rs := RolloutSummary{N: 1, Start: at(10), Complete: at(14), WindowEnd: at(16)}
	synced := func(s float64, node string, changes bool) timeline.Event {
		e := timeline.Event{Time: at(s), Kind: timeline.KindKubeProxySynced, Node: node, Detail: map[string]string{}}
		if changes {
			e.Detail["programming_changes"], e.Detail["programming_latency_avg"] = "2", "0.300"
		}
		return e
	}
	events := byTime([]timeline.Event{
		{Time: at(11.25), Kind: timeline.KindPodReady, Pod: "new"},
		{Time: at(11.5), Kind: timeline.KindPodDeletionRequested, Pod: "old"},
		{Time: at(12.75), Kind: timeline.KindEndpointRemoved, Pod: "old"},
		synced(12.9, "w1", true),
		synced(12.95, "w2", false), // applied nothing: not marked
		{Time: at(13), Kind: timeline.KindPodGone, Pod: "old"},
		{Time: at(14), Kind: timeline.KindRolloutComplete},
		{Time: at(11), Kind: timeline.KindEndpointUnready, Pod: "old"},     // not marked
		{Time: at(7.9), Kind: timeline.KindPodDeletionRequested, Pod: "x"}, // before the range
		{Time: at(18.1), Kind: timeline.KindPodGone, Pod: "y"},             // after it
	})
	in := &input{events: events}
	s := in.rolloutSeries(&rs, NewTimeline(nil))
	want := []Marker{
		{Kind: timeline.KindPodReady, X: 1.25}, {Kind: timeline.KindPodDeletionRequested, X: 1.5},
		{Kind: timeline.KindEndpointRemoved, X: 2.75}, {Kind: timeline.KindKubeProxySynced, Node: "w1", X: 2.9},
		{Kind: timeline.KindPodGone, X: 3}, {Kind: timeline.KindRolloutComplete, X: 4},
	}
	if !slices.EqualFunc(s.Markers, want, func(a, b Marker) bool { return a.Kind == b.Kind && a.Node == b.Node && near(a.X, b.X) }) {
		t.Errorf("markers %v, want %v", s.Markers, want)
	}
	if !s.Closed || s.End != 6*time.Second {
		t.Errorf("window: closed %v, end %v; want closed, 6s", s.Closed, s.End)
	}
	if s.Hist.First != -20 || len(s.Hist.Bins) != 100 {
		t.Errorf("timeline bins: first %d, %d bins; want -20 and 100 (−2 s to 8 s)", s.Hist.First, len(s.Hist.Bins))
	}
	if s.Rig != nil {
		t.Errorf("rig samples from a run without any: %v", s.Rig)
	}

	// A window never closed (the run was interrupted) ends where the
	// timeline's window for it does.
	open := RolloutSummary{N: 1, Start: at(10)}
	tl := NewTimeline([]Window{{Phase: PhaseControl, Start: at(0), End: at(10)}, {Phase: PhaseRollout, Rollout: 1, Start: at(10), End: at(13)}})
	s = in.rolloutSeries(&open, tl)
	if s.Closed || s.End != 3*time.Second || s.Hist.First != -20 || len(s.Hist.Bins) != 70 {
		t.Errorf("open window: closed %v, end %v, bins from %d, %d of them; want open, 3s, -20, 70", s.Closed, s.End, s.Hist.First, len(s.Hist.Bins))
	}
}

// TestSeriesMatchSummary: each rollout's series bins the requests of its
// range against the rollout's start, and carries the rollout exactly as
// the summary has it (window tallies, rig), which the figures draw.
func TestSeriesMatchSummary(t *testing.T) {
	dir := analysistest.Write(t, analysistest.Run{Events: append(analysistest.Events(), analysistest.RigSamples()...)})
	a, err := Analyze(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i, row := range a.Summary.Variants {
		rs := a.Rows[i]
		if rs.Row != row.Variant || len(rs.Rollouts) != len(row.Rollouts) {
			t.Fatalf("row %d: series of %q with %d rollouts for %q with %d", i, rs.Row, len(rs.Rollouts), row.Variant, len(row.Rollouts))
		}
		for k, s := range rs.Rollouts {
			if !reflect.DeepEqual(s.Rollout, row.Rollouts[k]) {
				t.Errorf("%s rollout %d: series has %+v, summary %+v", row.Variant, row.Rollouts[k].N, s.Rollout, row.Rollouts[k])
			}
		}
	}
	// alpha r1 is shown from 1 s to 11 s: 1,000 requests, one every 10 ms.
	r1 := a.Rows[0].Rollouts[0]
	if sum := r1.Hist.Sum(); sum.Total(false) != 1000 || r1.Rollout.Window.Requests == 0 {
		t.Errorf("alpha r1: %d requests binned, window %+v", sum.Total(false), r1.Rollout.Window)
	}
	if r := a.Rows[0].Rollouts[1].Rollout; r.Rig == nil || !r.Rig.Saturated {
		t.Errorf("alpha r2's series: rig %+v, want saturated", r.Rig)
	}
}
