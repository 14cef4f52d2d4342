// Package kube applies droprun's objects to a cluster and waits for them,
// the way kubectl would, but from Go: server-side apply with one field
// manager (so a field left behind by an earlier change is removed, not
// silently kept), namespace ownership checks, and a rollout wait that
// also waits for the old pods to be gone.
package kube
