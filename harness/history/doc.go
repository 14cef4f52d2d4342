// Package history reads many runs' summaries and turns them into series:
// one per configuration key, the runs in time order with their drops per
// rollout. It is the regression benchmark's memory: `droprun history`
// prints the series, finds where one changed (ChangePoints), and `droprun
// check --history` holds a new run to the percentile of its own key's
// past rollouts (Past).
//
// A run is a directory holding summary.json (harness/analysis); the
// history reads nothing else, so a history can be kept, shipped or cached
// as summaries alone. A run that did not finish, or whose summary cannot
// be read, is skipped with a one-line reason.
//
// The key (Key) is what must match for two runs to be comparable: the
// scenario, the row, the path, the protocol, kube-proxy's mode, the
// Kubernetes version and the app's image repositories. What a team
// changes from one run to the next (droprun's own version, the app's
// image tag or digest) is not in the key: it is what the series is
// watched for, and each point says it.
//
// The rollout is the unit, as everywhere in droprun: each point keeps its
// rollouts' drops, the threshold is a percentile of past rollouts, and
// the change-point test moves whole runs, whose rollouts share a cluster
// and a day (docs/history.md).
package history
