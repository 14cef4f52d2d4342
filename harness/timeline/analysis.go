package timeline

import (
	"slices"
	"time"
)

// PodGap is, for one deleted pod, how long after its deletion was requested
// each step of taking it out of the traffic path was seen. Durations count
// from Deleted; -1 means the step was never seen.
type PodGap struct {
	// Pod is the pod's name.
	Pod string
	// Deleted is when pod.deletion_requested was recorded.
	Deleted time.Time
	// EndpointUnready is the time to the pod's first endpoint.unready or
	// endpoint.terminating at or after Deleted: the EndpointSlice no
	// longer offers it for new connections.
	EndpointUnready time.Duration
	// EndpointRemoved is the time to the pod's first endpoint.removed at or
	// after Deleted.
	EndpointRemoved time.Duration
	// KubeProxySynced is, per node, the time to the first kubeproxy.synced
	// received after the endpoint change (EndpointUnready, or
	// EndpointRemoved when the endpoint was removed without being marked
	// first). A node without such a sync is absent; the map is nil when
	// there was no endpoint change or no kube-proxy events at all. Its
	// resolution is the kube-proxy poll interval, and the sync found may
	// have begun before the change reached that kube-proxy: its
	// programming_latency_avg detail says how long changes took.
	KubeProxySynced map[string]time.Duration
}

// DeletionToRemoval measures, for every pod whose deletion was requested,
// the gaps of PodGap, in order of deletion. Events may be in any order.
func DeletionToRemoval(events []Event) []PodGap {
	events = byTime(events)
	var gaps []PodGap
	seen := map[string]bool{}
	for _, e := range events {
		if e.Kind != KindPodDeletionRequested || e.Pod == "" || seen[e.Pod] {
			continue
		}
		seen[e.Pod] = true
		gaps = append(gaps, podGap(events, e))
	}
	return gaps
}

// podGap measures one pod's gaps from its deletion event del; events are
// in time order.
func podGap(events []Event, del Event) PodGap {
	g := PodGap{Pod: del.Pod, Deleted: del.Time, EndpointUnready: -1, EndpointRemoved: -1}
	since := func(t time.Time) time.Duration { return t.Sub(del.Time) }
	for _, e := range events {
		if e.Pod != del.Pod || e.Time.Before(del.Time) {
			continue
		}
		switch e.Kind {
		case KindEndpointUnready, KindEndpointTerminating:
			if g.EndpointUnready < 0 {
				g.EndpointUnready = since(e.Time)
			}
		case KindEndpointRemoved:
			if g.EndpointRemoved < 0 {
				g.EndpointRemoved = since(e.Time)
			}
		}
	}
	change := g.EndpointUnready
	if change < 0 {
		change = g.EndpointRemoved
	}
	if change < 0 {
		return g
	}
	changedAt := del.Time.Add(change)
	for _, e := range events {
		if e.Kind != KindKubeProxySynced || e.Node == "" || !e.Time.After(changedAt) {
			continue
		}
		if g.KubeProxySynced == nil {
			g.KubeProxySynced = map[string]time.Duration{}
		}
		if _, ok := g.KubeProxySynced[e.Node]; !ok {
			g.KubeProxySynced[e.Node] = since(e.Time)
		}
	}
	return g
}

// NearestDeletion returns the latest pod.deletion_requested at or before t,
// the pod termination a request that failed at t is most likely due to,
// and false when no pod deletion precedes t.
func NearestDeletion(events []Event, t time.Time) (Event, bool) {
	var best Event
	found := false
	for _, e := range events {
		if e.Kind != KindPodDeletionRequested || e.Time.After(t) {
			continue
		}
		if !found || e.Time.After(best.Time) {
			best, found = e, true
		}
	}
	return best.clone(), found
}

// byTime returns events in time order, keeping the recorded order of equal
// stamps; it copies only when events are out of order.
func byTime(events []Event) []Event {
	if slices.IsSortedFunc(events, cmpTime) {
		return events
	}
	sorted := slices.Clone(events)
	slices.SortStableFunc(sorted, cmpTime)
	return sorted
}

func cmpTime(a, b Event) int { return a.Time.Compare(b.Time) }
