// Package run is droprun's measurement: for each variant of a scenario it
// deploys the variant, starts constant-rate traffic, holds a control
// window, drives N rollouts, and records what every request got and what
// the cluster did at that moment.
//
// A run directory holds the raw data (results-<variant>.bin in vegeta's
// encoding, events.jsonl) and what is derived from it (failures.jsonl,
// summary.json). Failures count against a rollout only inside its window
// (from its start until its old pods are gone plus the settle time);
// failures after that (the conntrack tail) and in the control window are
// reported apart, so a variant's drops are never mixed with the rig's
// noise or with the previous rollout's.
package run
