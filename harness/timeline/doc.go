// Package timeline is the record type of events.jsonl: every rollout event
// of one namespace on one timeline, stamped with droprun's own clock, so
// that a failed request can be set beside what the cluster was doing at
// that moment. Event and its Kinds are written by harness/observe (the
// informers and kube-proxy polls), harness/dataplane (route.*) and
// harness/run (its marks), and read back by ReadEvents; the package
// imports no client-go, so that what reads a run needs none.
//
// API timestamps (creationTimestamp, deletionTimestamp, lastTransitionTime)
// have one-second resolution, far coarser than the race droprun measures, so
// every Event is stamped with the local clock when droprun receives it.
// observe.Recorder watches Pods, ReplicaSets, EndpointSlices, Deployments and
// Warning Events on pods with client-go shared informers, turns each change
// into transitions (a pod became ready, an endpoint became terminating, a
// ReplicaSet scaled from 2 to 1, ...) and writes them as JSON lines, one
// Event a line, to events.jsonl. Caller events (rollout.start,
// window.close, ...) go through its Mark onto the same clock and the same file.
//
// # Objects that existed before Start
//
// The informers' initial list does not produce "created" or "added" events:
// those would claim that an object appeared at the moment droprun started
// looking. Instead every object present at Start is written once as a
// snapshot event (pod.snapshot, endpoint.snapshot, replicaset.snapshot,
// deployment.snapshot) carrying its state in Detail. Warning events that
// already existed at Start are not replayed; a later repetition of one
// (its count grows) is recorded.
//
// # Adds, and what an add implies
//
// A pod seen for the first time after Start produces pod.created followed by
// every transition its state already implies (scheduled, started, ready,
// ...), in lifecycle order and with the same stamp; in practice a new pod is
// unscheduled and only pod.created is written. An endpoint that appears in a
// slice produces a single endpoint.added whose Detail holds its conditions
// (ready, serving, terminating): the EndpointSlice controller often adds a
// pod's endpoint already ready, and "first ready" for an endpoint is
// therefore endpoint.added with ready=true or a later endpoint.ready.
//
// # The routed stage
//
// Whether a node's dataplane has caught up with an endpoint change is only
// visible in that node's kube-proxy. With observe.KubeProxyOptions.Interval set,
// the Recorder polls each kube-proxy's metrics (through the API server's pod
// proxy by default; with KubeProxyOptions.Idle, at that slower pace while
// no pod or endpoint changes) and writes kubeproxy.synced whenever a node's
// kubeproxy_sync_proxy_rules_last_timestamp_seconds changes, with the mean
// network programming latency of the changes that sync applied.
//
// kube-proxy binds its metrics to 127.0.0.1:10249 unless configured
// otherwise (its v1alpha1 defaulting uses 127.0.0.1 for an IPv4 bind
// address), and kind v0.33.0's kubeadm template sets no metricsBindAddress.
// The API server's pod proxy dials the pod IP, which for hostNetwork
// kube-proxy is the node's address, so on a stock kind cluster that dial is
// refused. The poller then writes one kubeproxy.unreachable event per node
// (not one per poll) and keeps trying slowly. Two ways out: configure
// kube-proxy with metricsBindAddress: 0.0.0.0:10249 (a kind
// kubeadmConfigPatches entry for KubeProxyConfiguration), or supply a
// observe.KubeProxyOptions.Fetch that reads 127.0.0.1:10249 inside the node.
//
// kube-proxy's sync is a node-wide moment at the poll's resolution, not
// "the rule to pod P is gone". On kind clusters harness/dataplane watches
// each node's rules themselves and writes route.added, route.removed and
// route.snapshot through Record, one event per node and pod IP, to the
// millisecond; the analysis prefers them and falls back to the syncs.
//
// # Marks and payloads
//
// The run's own marks (traffic.start, rollout.start, window.close, ...)
// carry their variant and rollout in Detail; the ones with data carry it
// typed (Event.Stats, Event.Flushed, Event.Rig), written by
// observe.Recorder.Record. ReadEvents reads events.jsonl back; harness/analysis
// turns it into windows, gaps and attributions.
package timeline
