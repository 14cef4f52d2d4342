package report

import (
	"strings"
	"testing"
	"time"

	"github.com/droprun/droprun/harness/analysis"
	"github.com/droprun/droprun/harness/traffic"
)

func TestStory(t *testing.T) {
	del := time.Date(2026, 12, 1, 18, 37, 16, 491e6, time.UTC)
	pair := func(node string, unrouted float64, drops map[traffic.Class]uint64) analysis.RouteGap {
		return analysis.RouteGap{Rollout: 1, Pod: "web-1", IP: "10.244.1.3", Node: node, Deleted: del, Source: analysis.RouteSourceDataPlane,
			Unrouted: unrouted, AppTimes: true, SIGTERM: 0.03, ListenerClosed: 0.031, Window: unrouted - 0.031, Drops: drops}
	}
	v := analysis.VariantSummary{Routes: []analysis.RouteGap{
		pair("worker", 0.523, map[traffic.Class]uint64{traffic.ClassRefused: 25}),
		pair("control-plane", 0.855, map[traffic.Class]uint64{traffic.ClassRefused: 35, traffic.ClassTimeout: 2}),
		{Rollout: 2, Pod: "web-2", Node: "worker", Deleted: del, Source: analysis.RouteSourceDataPlane, Unrouted: 0.6, AppTimes: true, SIGTERM: 5.01, ListenerClosed: 5.02, Window: -4.42},
	}}
	got := Story(v, 1)
	if len(got) != 1 {
		t.Fatalf("Story = %q, want one line for the one pod", got)
	}
	for _, want := range []string{
		"web-1 (10.244.1.3): deletion requested at 18:37:16.491",
		"SIGTERM 30 ms later and closed its listener 1 ms after that",
		"control-plane after 855 ms, worker after 523 ms",
		"control-plane for 824 ms, worker for 492 ms still sent it new connections",
		"the client saw 62 failures in that gap",
	} {
		if !strings.Contains(got[0], want) {
			t.Errorf("story %q lacks %q", got[0], want)
		}
	}
	safe := Story(v, 2)
	if len(safe) != 1 || !strings.Contains(safe[0], "Every node had stopped before its listener closed: a margin of at least 4420 ms") {
		t.Errorf("a safe pod's story = %q", safe)
	}
	if s := Story(analysis.VariantSummary{}, 1); s != nil {
		t.Errorf("without route data: %q", s)
	}
}

func TestExplainedText(t *testing.T) {
	if s := ExplainedText(nil); s != "" {
		t.Errorf("nil: %q", s)
	}
	e := &analysis.Explained{Explained: 190, Unexplained: 10, Why: map[string]uint64{analysis.WhyOutside: 7, analysis.WhyNoRoutes: 3}}
	want := "190 of 200 drops explained by a (pod, node) race window (95.0%); 10 unexplained: no route data for the node that routed it 3, outside every (pod, node) race window 7"
	if s := ExplainedText(e); s != want {
		t.Errorf("ExplainedText = %q, want %q", s, want)
	}
}

// TestExplainedTextConntrack: drops put down to stale conntrack entries or
// a client's reconnect backoff are said apart from those a race window
// explains.
func TestExplainedTextConntrack(t *testing.T) {
	got := ExplainedText(&analysis.Explained{Explained: 90, Conntrack: 8, Backoff: 10, Unexplained: 2, Why: map[string]uint64{analysis.WhyOutside: 2}})
	for _, want := range []string{"90 of 110 drops explained by a (pod, node) race window (81.8%)", "8 by stale conntrack entries", "10 by the client's reconnect backoff after a race (9.1%", "2 unexplained"} {
		if !strings.Contains(got, want) {
			t.Errorf("ExplainedText = %q, want it to say %q", got, want)
		}
	}
}

// TestExplainedTextFront: through a front that logs its errors, they are
// said by class, the most first, each with what it means.
func TestExplainedTextFront(t *testing.T) {
	got := ExplainedText(&analysis.Explained{Explained: 38, Cut: 2, Unexplained: 10, Why: map[string]uint64{analysis.WhyOutside: 10},
		FrontErrors: map[traffic.Class]uint64{traffic.ClassEOF: 2, traffic.ClassReset: 38, traffic.ClassRefused: 10}})
	for _, want := range []string{"38 of 50 drops explained by a (pod, node) race window (76.0%)", "2 cut by the close",
		"the front logged why it failed 50 of them: 38 connection reset (a connection the pod had accepted, closed under the request), 10 connection refused (the front's connection to the pod was refused: nothing listened), 2 closed before a response (a connection"} {
		if !strings.Contains(got, want) {
			t.Errorf("ExplainedText = %q\nwant it to say %q", got, want)
		}
	}
}
