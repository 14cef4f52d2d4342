package timeline

import (
	"reflect"
	"testing"
	"time"
)

var base = time.Date(2026, 11, 30, 1, 0, 0, 0, time.UTC)

// at is an event of kind about pod (or on node, for kube-proxy) at
// base+ms milliseconds.
func at(ms int, kind Kind, pod, node string) Event {
	return Event{Time: base.Add(time.Duration(ms) * time.Millisecond), Kind: kind, Pod: pod, Node: node}
}

func TestDeletionToRemoval(t *testing.T) {
	events := []Event{
		at(0, KindRolloutStart, "", ""),
		at(100, KindKubeProxySynced, "", "w1"), // before any change: ignored
		at(1000, KindPodDeletionRequested, "web-a", "w1"),
		at(1000, KindPodDeletionRequested, "web-a", "w1"), // recorded twice (a relist): first wins
		at(1040, KindEndpointTerminating, "web-a", "w1"),
		at(1040, KindEndpointUnready, "web-a", "w1"),
		at(1100, KindEndpointReady, "web-new", "w2"), // another pod
		at(1250, KindKubeProxySynced, "", "w1"),
		at(1500, KindKubeProxySynced, "", "w1"),
		at(1750, KindKubeProxySynced, "", "w2"),
		at(1500, KindPodDeletionRequested, "web-b", "w2"), // out of order on purpose
		at(2000, KindEndpointRemoved, "web-b", "w2"),      // removed without being marked first
		at(2250, KindKubeProxySynced, "", "w2"),
		at(3000, KindKubeProxySynced, "", "w1"),
		at(6100, KindEndpointRemoved, "web-a", "w1"),
		at(7000, KindPodDeletionRequested, "web-c", "w1"), // never left the slice
		at(8000, KindEndpointRemoved, "web-z", "w1"),      // never deleted: no gap
	}
	got := DeletionToRemoval(events)
	want := []PodGap{
		{Pod: "web-a", Deleted: base.Add(1000 * time.Millisecond), EndpointUnready: 40 * time.Millisecond, EndpointRemoved: 5100 * time.Millisecond,
			KubeProxySynced: map[string]time.Duration{"w1": 250 * time.Millisecond, "w2": 750 * time.Millisecond}},
		{Pod: "web-b", Deleted: base.Add(1500 * time.Millisecond), EndpointUnready: -1, EndpointRemoved: 500 * time.Millisecond,
			KubeProxySynced: map[string]time.Duration{"w2": 750 * time.Millisecond, "w1": 1500 * time.Millisecond}},
		{Pod: "web-c", Deleted: base.Add(7000 * time.Millisecond), EndpointUnready: -1, EndpointRemoved: -1},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("DeletionToRemoval:\n got %+v\nwant %+v", got, want)
	}
	if got := DeletionToRemoval(nil); got != nil {
		t.Errorf("no events: %+v", got)
	}
}

func TestDeletionToRemovalIgnoresEndpointChangesBeforeDeletion(t *testing.T) {
	events := []Event{
		at(0, KindEndpointUnready, "web-a", ""), // readiness probe failing, pod not deleted yet
		at(500, KindPodDeletionRequested, "web-a", ""),
		at(520, KindEndpointTerminating, "web-a", ""),
	}
	got := DeletionToRemoval(events)
	if len(got) != 1 || got[0].EndpointUnready != 20*time.Millisecond || got[0].EndpointRemoved != -1 || got[0].KubeProxySynced != nil {
		t.Errorf("got %+v", got)
	}
}

func TestNearestDeletion(t *testing.T) {
	events := []Event{
		at(1000, KindPodDeletionRequested, "web-a", ""),
		at(1200, KindEndpointUnready, "web-a", ""),
		at(3000, KindPodDeletionRequested, "web-b", ""),
		at(2000, KindPodDeletionRequested, "web-c", ""), // out of order
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
			e, ok := NearestDeletion(events, base.Add(time.Duration(tt.ms)*time.Millisecond))
			if ok != (tt.pod != "") || e.Pod != tt.pod {
				t.Errorf("got %q, %v; want %q", e.Pod, ok, tt.pod)
			}
		})
	}
}
