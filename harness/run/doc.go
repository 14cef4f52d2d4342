// Package run is droprun's measurement: for each variant of a scenario it
// deploys the variant, starts constant-rate traffic, holds a control
// window, drives N rollouts, and records what every request got and what
// the cluster did at that moment.
//
// A run directory holds the raw data (results-<variant>.bin in vegeta's
// encoding, events.jsonl, app-metrics.jsonl, and run.json for what only
// the live run knows) and what is derived from it (failures.jsonl,
// summary.json). run records; harness/analysis derives, from the files
// alone, exactly as `droprun report` does later. A rollout's window lasts
// until the pods of its old ReplicaSets are gone (kube.WaitOldPodsGone),
// whatever the Deployment's status fields say, plus the settle time.
//
// Traffic enters the cluster through every node, round robin over one
// 127.0.0.1 host port per node (testbed.Testbed.Targets), as a cloud load
// balancer would spread it, so every node's kube-proxy is on the path.
package run
