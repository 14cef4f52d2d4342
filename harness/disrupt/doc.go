// Package disrupt takes a variant's serving pods away, once per round of
// a run: the event whose dropped requests droprun measures. The run
// drives a Disruption round by round and records each round's window; it
// does not know how the pods go.
//
// Rollout, a rolling update between the scenario's two versions, is the
// one disruption there is. Draining a node, scaling a Deployment down and
// deleting pods (issue 40) are the next, each a new implementation of
// Disruption, with nothing in the run to change but which one it builds.
package disrupt
