package observe

import (
	"strconv"

	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/droprun/droprun/harness/timeline"
)

// endpointConditions are the endpoint condition flips the timeline records,
// in the order they are written when one update carries several. An empty
// kind is not recorded (an endpoint does not stop terminating).
var endpointConditions = []struct {
	get             func(discoveryv1.EndpointConditions) bool
	onTrue, onFalse timeline.Kind
}{
	{epReady, timeline.KindEndpointReady, timeline.KindEndpointUnready},
	{epServing, timeline.KindEndpointServing, timeline.KindEndpointNotServing},
	{epTerminating, timeline.KindEndpointTerminating, ""},
}

// epReady reads conditions.ready; nil means true (discovery/v1 docs).
func epReady(c discoveryv1.EndpointConditions) bool { return c.Ready == nil || *c.Ready }

// epServing reads conditions.serving; nil means true (discovery/v1 docs).
func epServing(c discoveryv1.EndpointConditions) bool { return c.Serving == nil || *c.Serving }

// epTerminating reads conditions.terminating; nil means false.
func epTerminating(c discoveryv1.EndpointConditions) bool {
	return c.Terminating != nil && *c.Terminating
}

// endpointKey identifies an endpoint within a slice: its target pod, else
// its first address.
func endpointKey(ep *discoveryv1.Endpoint) string {
	if pod := endpointPod(ep); pod != "" {
		return "pod/" + pod
	}
	if len(ep.Addresses) > 0 {
		return "address/" + ep.Addresses[0]
	}
	return ""
}

func endpointPod(ep *discoveryv1.Endpoint) string {
	if ep.TargetRef != nil && (ep.TargetRef.Kind == "Pod" || ep.TargetRef.Kind == "") {
		return ep.TargetRef.Name
	}
	return ""
}

// endpointEvent is an timeline.Event about one endpoint of slice s.
func endpointEvent(kind timeline.Kind, s *discoveryv1.EndpointSlice, ep *discoveryv1.Endpoint, extra map[string]string) timeline.Event {
	d := map[string]string{
		"slice":       s.Name,
		"ready":       strconv.FormatBool(epReady(ep.Conditions)),
		"serving":     strconv.FormatBool(epServing(ep.Conditions)),
		"terminating": strconv.FormatBool(epTerminating(ep.Conditions)),
	}
	if svc := s.Labels[discoveryv1.LabelServiceName]; svc != "" {
		d["service"] = svc
	}
	for k, v := range extra {
		d[k] = v
	}
	e := timeline.Event{Kind: kind, Object: "endpointslice/" + s.Name, Pod: endpointPod(ep), Detail: d}
	if ep.NodeName != nil {
		e.Node = *ep.NodeName
	}
	if len(ep.Addresses) > 0 {
		e.IP = ep.Addresses[0]
	}
	return e
}

// sliceAdded turns a slice seen by the informer's add into one event per
// endpoint: snapshots for a slice listed at Start, else endpoint.added.
func sliceAdded(s *discoveryv1.EndpointSlice, initial bool) []timeline.Event {
	kind := timeline.KindEndpointAdded
	if initial {
		kind = timeline.KindEndpointSnapshot
	}
	var events []timeline.Event
	for i := range s.Endpoints {
		events = append(events, endpointEvent(kind, s, &s.Endpoints[i], nil))
	}
	return events
}

// sliceUpdated returns, endpoint by endpoint in the slice's order, the
// endpoints added and the condition flips, then the endpoints removed.
func sliceUpdated(old, cur *discoveryv1.EndpointSlice) []timeline.Event {
	before := map[string]*discoveryv1.Endpoint{}
	for i := range old.Endpoints {
		before[endpointKey(&old.Endpoints[i])] = &old.Endpoints[i]
	}
	now := map[string]bool{}
	var events []timeline.Event
	for i := range cur.Endpoints {
		ep := &cur.Endpoints[i]
		key := endpointKey(ep)
		now[key] = true
		prev, ok := before[key]
		if !ok {
			events = append(events, endpointEvent(timeline.KindEndpointAdded, cur, ep, nil))
			continue
		}
		for _, c := range endpointConditions {
			was, is := c.get(prev.Conditions), c.get(ep.Conditions)
			kind := c.onTrue
			if !is {
				kind = c.onFalse
			}
			if was != is && kind != "" {
				events = append(events, endpointEvent(kind, cur, ep, nil))
			}
		}
	}
	for i := range old.Endpoints {
		ep := &old.Endpoints[i]
		if !now[endpointKey(ep)] {
			events = append(events, endpointEvent(timeline.KindEndpointRemoved, cur, ep, nil))
		}
	}
	return events
}

// sliceDeleted removes every endpoint the slice still had.
func sliceDeleted(s *discoveryv1.EndpointSlice) []timeline.Event {
	var events []timeline.Event
	for i := range s.Endpoints {
		events = append(events, endpointEvent(timeline.KindEndpointRemoved, s, &s.Endpoints[i], map[string]string{"reason": "slice_deleted"}))
	}
	return events
}
