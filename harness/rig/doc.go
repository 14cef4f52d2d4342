// Package rig samples the measuring rig itself while a run goes on: how
// busy the host's cores are, how long runnable tasks waited for a core
// (the kernel's pressure stall information), how much CPU the traffic
// client and each kind node container used, how much of the time each
// node got no CPU at all (its cgroup's pressure, "full"), how long the
// client's own goroutines waited to be scheduled, and how far behind
// schedule the client sent requests.
//
// A 2-core machine that runs a 3-node cluster and a 1000 req/s client at
// once can run out of CPU. When it does, every request slows down, old and
// new pods alike, and timeouts pile up that have nothing to do with the
// shutdown race. The samples, written into the run's timeline, let the
// analysis tell the two apart: a rollout window in which the rig was
// saturated is flagged, not silently counted as the variant's fault.
//
// It also keeps the rig from starving its own client: DockerCPU lowers the
// CPU weight of docker's containers (the kind nodes) while a run lasts, so
// that a node starting a pod, which takes a whole core for a second or
// more, no longer takes it from the client (see DefaultClusterShares).
// SetMarked records the original weight in a marker file (DefaultMarker)
// before lowering it, so that RestoreLeftover, called by the next run and
// reported by droprun doctor, puts it back after a run killed with SIGKILL.
package rig
