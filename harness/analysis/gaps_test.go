package analysis

import (
	"reflect"
	"testing"
	"time"

	"github.com/droprun/droprun/harness/timeline"
)

var base = time.Date(2026, 11, 30, 1, 0, 0, 0, time.UTC)

// ev is an event of kind about pod (or on node, for kube-proxy) at
// base+ms milliseconds.
func ev(ms int, kind timeline.Kind, pod, node string) timeline.Event {
	return timeline.Event{Time: base.Add(time.Duration(ms) * time.Millisecond), Kind: kind, Pod: pod, Node: node}
}

// allGaps is every deleted pod's Gap, in order of deletion.
func allGaps(events []timeline.Event) []Gap {
	events = byTime(events)
	var out []Gap
	for _, d := range deletionsOf(events) {
		out = append(out, gapOf(events, d))
	}
	return out
}

func TestGaps(t *testing.T) {
	events := []timeline.Event{
		ev(0, timeline.KindRolloutStart, "", ""),
		ev(100, timeline.KindKubeProxySynced, "", "w1"), // before any change: ignored
		ev(1000, timeline.KindPodDeletionRequested, "web-a", "w1"),
		ev(1000, timeline.KindPodDeletionRequested, "web-a", "w1"), // recorded twice (a relist): first wins
		ev(1040, timeline.KindEndpointTerminating, "web-a", "w1"),
		ev(1040, timeline.KindEndpointUnready, "web-a", "w1"),
		ev(1100, timeline.KindEndpointReady, "web-new", "w2"), // another pod
		ev(1250, timeline.KindKubeProxySynced, "", "w1"),
		ev(1500, timeline.KindKubeProxySynced, "", "w1"),
		ev(1750, timeline.KindKubeProxySynced, "", "w2"),
		ev(1500, timeline.KindPodDeletionRequested, "web-b", "w2"), // out of order on purpose
		ev(2000, timeline.KindEndpointRemoved, "web-b", "w2"),      // removed without being marked first
		ev(2250, timeline.KindKubeProxySynced, "", "w2"),
		ev(3000, timeline.KindKubeProxySynced, "", "w1"),
		ev(6100, timeline.KindEndpointRemoved, "web-a", "w1"),
		ev(7000, timeline.KindPodDeletionRequested, "web-c", "w1"), // never left the slice
		ev(8000, timeline.KindEndpointRemoved, "web-z", "w1"),      // never deleted: no gap
	}
	got := allGaps(events)
	want := []Gap{
		{Pod: "web-a", EndpointUnready: 0.04, EndpointRemoved: 5.1, KubeProxySynced: map[string]float64{"w1": 0.25, "w2": 0.75}},
		{Pod: "web-b", EndpointUnready: -1, EndpointRemoved: 0.5, KubeProxySynced: map[string]float64{"w2": 0.75, "w1": 1.5}},
		{Pod: "web-c", EndpointUnready: -1, EndpointRemoved: -1},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("gaps:\n got %+v\nwant %+v", got, want)
	}
	if got := allGaps(nil); got != nil {
		t.Errorf("no events: %+v", got)
	}
}

func TestGapIgnoresEndpointChangesBeforeDeletion(t *testing.T) {
	events := []timeline.Event{
		ev(0, timeline.KindEndpointUnready, "web-a", ""), // readiness probe failing, pod not deleted yet
		ev(500, timeline.KindPodDeletionRequested, "web-a", ""),
		ev(520, timeline.KindEndpointTerminating, "web-a", ""),
	}
	got := allGaps(events)
	if len(got) != 1 || !near(got[0].EndpointUnready, 0.02) || got[0].EndpointRemoved != -1 || got[0].KubeProxySynced != nil {
		t.Errorf("got %+v", got)
	}
}

func TestNearestDeletion(t *testing.T) {
	events := []timeline.Event{
		ev(1000, timeline.KindPodDeletionRequested, "web-a", ""),
		ev(1200, timeline.KindEndpointUnready, "web-a", ""),
		ev(3000, timeline.KindPodDeletionRequested, "web-b", ""),
		ev(2000, timeline.KindPodDeletionRequested, "web-c", ""), // out of order
	}
	tests := []struct {
		name string
		ms   int
		pod  string // "" = none
	}{
		{"before any deletion", 999, ""},
		{"at the deletion itself", 1000, "web-a"},
		{"after an unrelated endpoint change", 1500, "web-a"},
		{"latest of several, whatever the order", 2500, "web-c"},
		{"long after", 60000, "web-b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, ok := nearest(deletionsOf(events), base.Add(time.Duration(tt.ms)*time.Millisecond))
			if ok != (tt.pod != "") || d.pod != tt.pod {
				t.Errorf("got %q, %v; want %q", d.pod, ok, tt.pod)
			}
		})
	}
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }
