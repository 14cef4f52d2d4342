// Package testbed prepares what a run measures: the user's input checked
// once, before any cluster work (Check), a cluster (kind, created or
// reused, or an existing one), the app's images loaded into its nodes,
// droprun's namespace, and a variant deployed and answering on 127.0.0.1,
// through the host ports of every node on kind (Targets). Rollout is the
// one way droprun changes a workload, for a deploy and for every measured
// rollout; Close deletes the namespace and, unless kept, the cluster
// Prepare created (the one place droprun deletes a cluster).
//
// Where requests go: Targets are the only URLs droprun sends requests to,
// load (harness/run, through a traffic.Source) and probes (WaitAnswering,
// through attack.ProbeClient) alike, and both check every URL with
// traffic.CheckURL against Testbed.Allow. On kind the targets are the host
// ports on 127.0.0.1; on an existing cluster the one URL the user gave,
// which may be a load balancer or ingress beyond 127.0.0.1 only when the
// user named its host with --allow-target (CheckAllow, before any cluster
// work).
package testbed
