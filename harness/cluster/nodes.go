package cluster

import (
	"context"
	"io"
)

// ExecFunc runs a command inside one node, with stdin (nil for none) and
// stdout connected.
type ExecFunc func(ctx context.Context, node string, stdin io.Reader, stdout io.Writer, args ...string) error

// Nodes is what droprun can do inside a cluster's nodes besides the API:
// only a kind cluster offers it, whose nodes are containers on this
// machine's engine (Cluster.Nodes is nil on an existing cluster, whose
// nodes are not droprun's to enter). A run asks for it before each thing
// that needs it: clearing stale conntrack entries between rollouts,
// watching each node's rules (harness/dataplane), sampling each node's CPU
// (harness/rig), loading images; a run lowers the nodes' CPU weight only
// where it has them (their containers share this machine's cores).
// kindNodes is the one implementation; the second it is built for is a
// real cluster's nodes reached through a privileged pod on each node (a
// DaemonSet), which load from inside the cluster and real fronts need.
type Nodes interface {
	// FlushConntrack deletes the TCP conntrack entries stuck in SYN_SENT
	// in every node and returns how many, per node.
	FlushConntrack(ctx context.Context) (map[string]int, error)
	// ContainerIDs returns each node's container ID, by node name.
	ContainerIDs(ctx context.Context) (map[string]string, error)
	// Exec returns the nodes' names and a function that runs a command
	// inside one of them.
	Exec() ([]string, ExecFunc, error)
	// LoadImageArchive loads a docker-save archive into every node.
	LoadImageArchive(ctx context.Context, archive string) error
}

// kindNodes are a kind cluster's nodes, through the kind library.
type kindNodes struct {
	k    *Kind
	name string
}

func (n kindNodes) FlushConntrack(ctx context.Context) (map[string]int, error) {
	return n.k.FlushConntrack(ctx, n.name)
}

func (n kindNodes) ContainerIDs(ctx context.Context) (map[string]string, error) {
	return n.k.NodeContainerIDs(ctx, n.name)
}

func (n kindNodes) Exec() ([]string, ExecFunc, error) {
	return n.k.NodeExec(n.name)
}

func (n kindNodes) LoadImageArchive(ctx context.Context, archive string) error {
	return n.k.LoadImageArchive(ctx, n.name, archive)
}
