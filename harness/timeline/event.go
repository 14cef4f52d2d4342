package timeline

import (
	"io"
	"maps"
	"time"

	"github.com/droprun/droprun/harness/jsonl"
	"github.com/droprun/droprun/harness/rig"
	"github.com/droprun/droprun/harness/traffic"
	"github.com/droprun/droprun/harness/variant"
)

// Event is one transition, stamped with the local clock at receipt (API
// timestamps have 1 s resolution). Events are written as JSON lines.
type Event struct {
	// Time is when droprun received the change, by its local clock, in UTC
	// (written as RFC 3339 with nanoseconds).
	Time time.Time `json:"t"`
	// Kind says what happened, e.g. pod.ready or endpoint.removed.
	Kind Kind `json:"kind"`
	// Object is the object that changed, as kind/name, e.g.
	// pod/web-5bff69ccb-4b98r, replicaset/web-5bff69ccb,
	// endpointslice/web-abcde, deployment/web, node/droprun-worker.
	Object string `json:"object,omitempty"`
	// Pod is the pod the event concerns (the pod itself, an endpoint's
	// target pod, or the pod a Warning event is about).
	Pod string `json:"pod,omitempty"`
	// Node is the node the pod or endpoint is on, or the kube-proxy's node.
	Node string `json:"node,omitempty"`
	// IP is the pod's IP, or the endpoint's first address.
	IP string `json:"ip,omitempty"`
	// Detail holds the facts that go with Kind: template hash, variant,
	// image, replicas, reason, message, last sync time, and so on.
	Detail map[string]string `json:"detail,omitempty"`
	// Stats is the traffic client's account of its attack (traffic.stop).
	Stats *traffic.Stats `json:"stats,omitempty"`
	// Flushed is the stale conntrack entries cleared per node
	// (conntrack.flushed).
	Flushed map[string]int `json:"flushed,omitempty"`
	// Rig is one sample of the rig's load (rig.sample).
	Rig *rig.Sample `json:"rig,omitempty"`
	// Live is the shutdown settings the live pod template had when a
	// rollout started (rollout.start): the pods that rollout deletes.
	Live *variant.PodFacts `json:"live,omitempty"`
}

// Kind names what an Event records. The names are stable: reports and
// analyses match on them.
type Kind string

// Pod transitions. Pod events carry the pod's labels droprun.dev/variant,
// droprun.dev/row and pod-template-hash in Detail when the pod has them.
const (
	// KindPodSnapshot is a pod that existed when the Recorder started;
	// Detail holds phase, ready and deleting.
	KindPodSnapshot Kind = "pod.snapshot"
	// KindPodCreated is a pod seen for the first time after Start.
	KindPodCreated Kind = "pod.created"
	// KindPodScheduled is spec.nodeName being set (or PodScheduled=True).
	KindPodScheduled Kind = "pod.scheduled"
	// KindPodStarted is every container of the pod reaching Running (the
	// image was pulled and the process started).
	KindPodStarted Kind = "pod.started"
	// KindPodReady is the pod's Ready condition turning True.
	KindPodReady Kind = "pod.ready"
	// KindPodUnready is the pod's Ready condition leaving True.
	KindPodUnready Kind = "pod.unready"
	// KindPodDeletionRequested is metadata.deletionTimestamp being set;
	// Detail grace_period_seconds.
	KindPodDeletionRequested Kind = "pod.deletion_requested"
	// KindPodContainersTerminated is every container of the pod being
	// terminated; Detail exit_codes and reasons, as name=value lists.
	KindPodContainersTerminated Kind = "pod.containers_terminated"
	// KindPodContainerRestarted is a container's restart count growing;
	// Detail container, restart_count, last_exit_code, last_reason.
	KindPodContainerRestarted Kind = "pod.container_restarted"
	// KindPodGone is the pod object being deleted from the API.
	KindPodGone Kind = "pod.gone"
	// KindPodEvent is a Warning Event about a pod (FailedPreStopHook,
	// Unhealthy, FailedScheduling, ...); Detail reason, message, count.
	KindPodEvent Kind = "pod.event"
)

// Endpoint transitions, one endpoint of an EndpointSlice at a time. Detail
// holds slice, service and the endpoint's current ready, serving and
// terminating conditions.
const (
	// KindEndpointSnapshot is an endpoint present when the Recorder started.
	KindEndpointSnapshot Kind = "endpoint.snapshot"
	// KindEndpointAdded is an endpoint appearing in a slice, with whatever
	// conditions it has.
	KindEndpointAdded Kind = "endpoint.added"
	// KindEndpointReady is conditions.ready turning true.
	KindEndpointReady Kind = "endpoint.ready"
	// KindEndpointUnready is conditions.ready turning false.
	KindEndpointUnready Kind = "endpoint.unready"
	// KindEndpointServing is conditions.serving turning true.
	KindEndpointServing Kind = "endpoint.serving"
	// KindEndpointNotServing is conditions.serving turning false.
	KindEndpointNotServing Kind = "endpoint.not_serving"
	// KindEndpointTerminating is conditions.terminating turning true.
	KindEndpointTerminating Kind = "endpoint.terminating"
	// KindEndpointRemoved is an endpoint leaving its slice, or its slice
	// being deleted (Detail reason=slice_deleted).
	KindEndpointRemoved Kind = "endpoint.removed"
)

// ReplicaSet and Deployment transitions. Detail holds the pod template's
// variant and image, and the ReplicaSet's pod-template-hash.
const (
	// KindReplicaSetSnapshot is a ReplicaSet present at Start.
	KindReplicaSetSnapshot Kind = "replicaset.snapshot"
	// KindReplicaSetCreated is a ReplicaSet created after Start.
	KindReplicaSetCreated Kind = "replicaset.created"
	// KindReplicaSetScaled is spec.replicas changing; Detail from and to.
	KindReplicaSetScaled Kind = "replicaset.scaled"
	// KindReplicaSetDeleted is a ReplicaSet being deleted.
	KindReplicaSetDeleted Kind = "replicaset.deleted"
	// KindDeploymentSnapshot is a Deployment present at Start.
	KindDeploymentSnapshot Kind = "deployment.snapshot"
	// KindDeploymentCreated is a Deployment created after Start.
	KindDeploymentCreated Kind = "deployment.created"
	// KindDeploymentUpdated is a change of generation, observedGeneration,
	// replicas, status replica counts (updated, ready, available,
	// unavailable, terminating) or the template's image or variant. Detail
	// holds all of them and, in changed, the keys that changed.
	KindDeploymentUpdated Kind = "deployment.updated"
	// KindDeploymentDeleted is a Deployment being deleted.
	KindDeploymentDeleted Kind = "deployment.deleted"
)

// kube-proxy, the routed stage. Object is node/NAME and Node the node.
const (
	// KindKubeProxyWatching is the first successful read of a node's
	// kube-proxy metrics (and the first after it was unreachable); Detail
	// last_sync_timestamp, kube_proxy (the pod).
	KindKubeProxyWatching Kind = "kubeproxy.watching"
	// KindKubeProxySynced is a node's kube-proxy finishing a sync of its
	// rules: Detail last_sync_timestamp (kube-proxy's own clock, RFC 3339),
	// and when the sync applied endpoint or service changes,
	// programming_latency_avg (seconds, the mean network programming
	// latency of those changes) and programming_changes.
	KindKubeProxySynced Kind = "kubeproxy.synced"
	// KindKubeProxyUnreachable is a warning: a node's kube-proxy metrics
	// could not be read (or kube-proxy pods could not be listed). Written
	// once per node until a read succeeds again; Detail error and hint.
	KindKubeProxyUnreachable Kind = "kubeproxy.unreachable"
)

// The data plane, the routed stage at millisecond resolution: a node's
// rules that send the web Service's traffic to a pod IP appearing and
// disappearing, seen inside the node (harness/dataplane). Object is
// node/NAME, Node the node, IP the pod IP; Detail service (namespace/name)
// and source (how it was seen: nft-monitor).
const (
	// KindRouteSnapshot is a route present when the watch on a node
	// started: it says nothing about when it appeared.
	KindRouteSnapshot Kind = "route.snapshot"
	// KindRouteAdded is a node starting to route the Service to the IP.
	KindRouteAdded Kind = "route.added"
	// KindRouteRemoved is a node no longer routing the Service to the IP:
	// from here on, no new connection through that node reaches the pod.
	KindRouteRemoved Kind = "route.removed"
	// KindRouteWatching is a node's data-plane watch starting (Detail
	// routes: the pod IPs routed then) and KindRouteWatchError its
	// failure (Detail error): after it, that node's routes are not known.
	KindRouteWatching   Kind = "route.watching"
	KindRouteWatchError Kind = "route.watch_error"
)

// A front's own choice of pods (harness/observe's FrontServers and
// FrontLogs): the pod IPs a front pod sends new requests to, read from the
// front's API every 20 ms (or from its log). Object is pod/NAME and Pod
// the front pod, IP the web pod's IP. The event's time is when droprun
// received the reading; Detail at (RFC 3339) is when the front's reading
// was taken (the read that first showed the change ended, or the front
// logged it), and last_seen, for a removal, when the last reading that
// still had the IP was taken: the change lies between them (FrontChange).
// Detail servers (space-separated IPs) is the set at watching, and via
// how the front pod is read (prober, api-server, log).
const (
	// KindFrontWatching is droprun starting to read a front pod's
	// servers (Detail servers: those chosen then).
	KindFrontWatching Kind = "front.watching"
	// KindFrontAdded is a front pod starting to send to the IP.
	KindFrontAdded Kind = "front.added"
	// KindFrontRemoved is a front pod no longer sending new requests to
	// the IP (removed from its list, or fenced): some moment between
	// last_seen and at.
	KindFrontRemoved Kind = "front.removed"
	// KindFrontPollError is a poll that failed (Detail error); the next
	// removal's last_seen still bounds it.
	KindFrontPollError Kind = "front.poll_error"

	DetailFrontAt       = "at"
	DetailFrontLastSeen = "last_seen"
)

// FrontChange returns when a front.* event's change was seen (Detail at,
// else the event's time, as runs recorded before at did) and, for a
// removal, when the front last still had the IP (zero when not known).
func (e Event) FrontChange() (at, lastSeen time.Time) {
	at = e.Time
	if t, err := time.Parse(time.RFC3339Nano, e.Detail[DetailFrontAt]); err == nil {
		at = t
	}
	if t, err := time.Parse(time.RFC3339Nano, e.Detail[DetailFrontLastSeen]); err == nil {
		lastSeen = t
	}
	return at, lastSeen
}

// A pod's listener closing, seen from outside the app
// (harness/closeprobe): a prober inside a node connected to the pod's IP
// and port every few milliseconds from its deletion on. Object is
// pod/NAME, Pod and IP the pod's; Detail open (the last connect that
// succeeded, RFC 3339; absent when the first one failed), closed (the first
// that failed; absent when none did before the probe gave up), how
// (refused, timeout, error, or open: it never closed) and prober (the node
// it ran in). The event's own time is when droprun heard of it.
const (
	KindListenerProbed Kind = "probe.listener_closed"
)

// The Detail keys of a KindListenerProbed event.
const (
	DetailProbeOpen   = "open"
	DetailProbeClosed = "closed"
	// DetailProbeHow is how the first failed connect failed: ProbeRefused,
	// "timeout" or "error" (apps/closeprobe's HOW).
	DetailProbeHow = "how"
	ProbeRefused   = "refused"
)

// ProbedClose reads a KindListenerProbed event: when the listener was last
// seen open (zero when never) and when a connect first failed; ok is false
// for another kind of event, a probe that never saw it close, or a time
// that does not parse.
func (e Event) ProbedClose() (open, closed time.Time, ok bool) {
	if e.Kind != KindListenerProbed {
		return time.Time{}, time.Time{}, false
	}
	c, err := time.Parse(time.RFC3339Nano, e.Detail[DetailProbeClosed])
	if err != nil {
		return time.Time{}, time.Time{}, false
	}
	if s, has := e.Detail[DetailProbeOpen]; has {
		if open, err = time.Parse(time.RFC3339Nano, s); err != nil {
			return time.Time{}, time.Time{}, false
		}
	}
	return open, c, true
}

// Recorder-level events.
const (
	// KindWatchError is an informer's watch failing (the API connection
	// was lost, a watch expired); the informer retries by itself. Detail
	// resource and error.
	KindWatchError Kind = "recorder.watch_error"
)

// Run-level marks, written by the caller with Recorder.Mark.
const (
	// KindRolloutStart marks the start of a rollout; Detail from, to,
	// measured (the variant detected) and live, and Live the container's
	// shutdown settings, read from the live pod template.
	KindRolloutStart Kind = "rollout.start"
	// KindRolloutComplete marks a rollout complete, old pods gone.
	KindRolloutComplete Kind = "rollout.complete"
	// KindWindowClose marks the closing of a measurement window.
	KindWindowClose Kind = "window.close"
	// KindConntrackFlushed marks stale conntrack entries being cleared;
	// Flushed holds the count per node.
	KindConntrackFlushed Kind = "conntrack.flushed"
	// KindTrafficStart marks a variant's traffic starting; KindTrafficStop
	// its end, with the client's Stats.
	KindTrafficStart Kind = "traffic.start"
	KindTrafficStop  Kind = "traffic.stop"
	// KindBaseline marks the wait for a clean baseline after a rollout;
	// Detail clean and wait.
	KindBaseline Kind = "baseline"
	// KindRigSample is one sample of the rig's load, in Rig.
	KindRigSample Kind = "rig.sample"
	// KindAppScraped marks the pods' counters read after traffic stopped.
	KindAppScraped Kind = "app.scraped"
	// KindBalance marks the pods' counters read at one edge of a
	// rollout's balance span (Detail edge: start, just after the rollout
	// completed, or end, traffic.balance later).
	KindBalance Kind = "balance"
	// KindGeneratorPlaced marks a generator pod ready to send
	// (traffic.generators: pods), at the start and after each replacement;
	// Detail variant, origin, pod, node, and offset and bound (its clock's
	// estimated offset from droprun's and the estimate's error, as Go
	// durations; absent for a replacement).
	KindGeneratorPlaced Kind = "generator.placed"
	// KindGeneratorClock is a generator's clock estimated again at its
	// stop; Detail variant, origin, node, at (RFC 3339, droprun's time of
	// the estimate), offset and bound as for KindGeneratorPlaced.
	KindGeneratorClock Kind = "generator.clock"
	// KindGeneratorGap marks an interval in which a generator's requests
	// may be missing; Detail variant, origin, from and to (RFC 3339) and
	// why.
	KindGeneratorGap Kind = "generator.gap"
	// KindGeneratorStall marks a stretch in which a generator sent its
	// requests a second or more behind schedule (generators.Stall);
	// Detail variant, origin, from and to (RFC 3339) and lag (a Go
	// duration).
	KindGeneratorStall Kind = "generator.stall"
	// KindGRPCChannel is a gRPC client channel's state, at its first call
	// and at each change, or one of its connection attempts
	// (traffic.ChannelState); Detail variant, target (host:port), channel
	// (its index there), state (IDLE, CONNECTING, READY,
	// TRANSIENT_FAILURE; dialing, dialed, dial failed), error (a failed
	// attempt's) and at (RFC 3339, when the client saw it).
	KindGRPCChannel Kind = "grpc.channel"
)

// Clone returns a copy of e that shares no map with it.
func (e Event) Clone() Event {
	if e.Detail != nil {
		e.Detail = maps.Clone(e.Detail)
	}
	if e.Flushed != nil {
		e.Flushed = maps.Clone(e.Flushed)
	}
	if e.Stats != nil {
		s := *e.Stats
		s.ByClass, s.Suspect = maps.Clone(s.ByClass), append([]string(nil), s.Suspect...)
		e.Stats = &s
	}
	if e.Rig != nil {
		s := *e.Rig
		s.Nodes = maps.Clone(s.Nodes)
		e.Rig = &s
	}
	return e
}

// ReadEvents parses events written by a Recorder (events.jsonl), one JSON
// Event a line; blank lines are skipped. An error names the line. A last
// line cut off by a crash returns every whole event with a
// *jsonl.Truncated warning.
func ReadEvents(r io.Reader) ([]Event, error) {
	return jsonl.ReadAll[Event](r, "events.jsonl")
}
