package analysis

import (
	"slices"
	"strconv"
	"time"

	"github.com/droprun/droprun/harness/timeline"
)

// deletion is one pod's first deletion request.
type deletion struct {
	pod string
	t   time.Time
}

// deletionsOf returns every pod's first deletion request, in time order.
func deletionsOf(events []timeline.Event) []deletion {
	seen := map[string]bool{}
	var out []deletion
	for _, e := range events {
		if e.Kind == timeline.KindPodDeletionRequested && e.Pod != "" && !seen[e.Pod] {
			seen[e.Pod] = true
			out = append(out, deletion{e.Pod, e.Time})
		}
	}
	slices.SortStableFunc(out, func(a, b deletion) int { return a.t.Compare(b.t) })
	return out
}

// nearest returns the latest deletion at or before t, and false when none
// precedes t: the pod termination a request sent at t most likely met.
func nearest(ds []deletion, t time.Time) (deletion, bool) {
	i, _ := slices.BinarySearchFunc(ds, t, func(d deletion, t time.Time) int {
		if d.t.After(t) {
			return 1
		}
		return -1
	})
	if i == 0 {
		return deletion{}, false
	}
	return ds[i-1], true
}

// gapOf measures one deleted pod's way out of the traffic path: from its
// deletion request to its endpoint turning unready (or terminating), to
// its endpoint leaving the slice, and to each node's first kube-proxy sync
// after that endpoint change. events are in time order.
func gapOf(events []timeline.Event, d deletion) Gap {
	g := Gap{Pod: d.pod, EndpointUnready: -1, EndpointRemoved: -1}
	since := func(t time.Time) float64 { return t.Sub(d.t).Seconds() }
	var changed time.Time
	for _, e := range events {
		if e.Pod != d.pod || e.Time.Before(d.t) {
			continue
		}
		switch e.Kind {
		case timeline.KindEndpointUnready, timeline.KindEndpointTerminating:
			if g.EndpointUnready < 0 {
				g.EndpointUnready = since(e.Time)
				if changed.IsZero() {
					changed = e.Time
				}
			}
		case timeline.KindEndpointRemoved:
			if g.EndpointRemoved < 0 {
				g.EndpointRemoved = since(e.Time)
				if changed.IsZero() {
					changed = e.Time
				}
			}
		}
	}
	if changed.IsZero() {
		return g
	}
	for _, e := range events {
		if e.Kind != timeline.KindKubeProxySynced || e.Node == "" || !e.Time.After(changed) {
			continue
		}
		if g.KubeProxySynced == nil {
			g.KubeProxySynced = map[string]float64{}
		}
		if _, ok := g.KubeProxySynced[e.Node]; !ok {
			g.KubeProxySynced[e.Node] = since(e.Time)
		}
	}
	return g
}

// programmingLatency returns a kube-proxy sync's mean network programming
// latency in seconds, and false for a sync that applied no change.
func programmingLatency(e timeline.Event) (float64, bool) {
	if e.Kind != timeline.KindKubeProxySynced || e.Detail["programming_changes"] == "" {
		return 0, false
	}
	v, err := strconv.ParseFloat(e.Detail["programming_latency_avg"], 64)
	return v, err == nil
}
