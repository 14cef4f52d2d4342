// Package observe watches the cluster during a run and writes what it sees
// as records: harness/timeline's events (events.jsonl) and
// harness/appmetrics' request counters (app-metrics.jsonl).
//
//   - Recorder (StartRecorder) follows Pods, ReplicaSets, EndpointSlices,
//     Deployments and Warning events with client-go shared informers and
//     writes each change as transitions (pod.ready, endpoint.terminating,
//     replicaset.scaled, ...); with RecorderOptions.KubeProxy set it also
//     polls each node's kube-proxy metrics and writes kubeproxy.synced.
//     Mark and Record put the run's own marks on the same clock and file.
//   - AppMetrics (StartAppMetrics) scrapes the pods' /metrics through the
//     API server's pod proxy and reads bookshop's exit totals from its
//     termination message.
//
// A run starts its observers, these and harness/dataplane's rule watch
// and harness/rig's sampler among them, as one list (Observer, StartAll)
// and stops them the same way.
//
// These are the only parts of droprun that read the cluster while it
// measures, besides harness/dataplane's per-node rule watch; the record
// packages they write stay free of client-go so that harness/analysis,
// which reads a run directory, needs none. harness/timeline's and
// harness/appmetrics' package comments describe the records and the
// semantics (snapshots, adds, the routed stage, exit totals).
package observe
