package cluster

import (
	"context"
	"io"
)

// ExecFunc runs a command inside one node, with stdin (nil for none) and
// stdout connected.
type ExecFunc func(ctx context.Context, node string, stdin io.Reader, stdout io.Writer, args ...string) error

// What droprun can do inside a cluster's nodes besides the API: each a
// capability a provider offers or not, and a run asks for each before
// the thing that needs it (Cluster.Conntrack, Exec, Containers, Images:
// nil when not offered). A kind cluster's nodes are containers on this
// machine's engine and offer all four; an existing cluster's nodes are not
// droprun's to enter and offer none. A node agent (a DaemonSet on any
// cluster, issue 39) would offer conntrack and the rule watch, not the
// containers or image loading.
type (
	// Conntrack deletes the TCP conntrack entries stuck in SYN_SENT in
	// every node and returns how many, per node (the run does, between
	// rollouts).
	Conntrack interface {
		FlushConntrack(ctx context.Context) (map[string]int, error)
	}
	// NodeExec returns the nodes' names and a function that runs a
	// command inside one of them: the rule watch (harness/dataplane) and
	// the listener-close prober (harness/closeprobe) run through it.
	NodeExec interface {
		Exec() ([]string, ExecFunc, error)
	}
	// NodeContainers returns each node's container ID on this machine, by
	// node name: the rig samples each node's CPU by it, and the run lowers
	// the nodes' CPU weight where the nodes share this machine's cores.
	NodeContainers interface {
		ContainerIDs(ctx context.Context) (map[string]string, error)
	}
	// ImageLoader loads a docker-save archive into every node.
	ImageLoader interface {
		LoadImageArchive(ctx context.Context, archive string) error
	}
)

// Conntrack is the cluster's conntrack capability, nil when its provider
// offers none.
func (c *Cluster) Conntrack() Conntrack { v, _ := c.nodes.(Conntrack); return v }

// Exec is the cluster's capability to run commands in its nodes, nil when
// its provider offers none.
func (c *Cluster) Exec() NodeExec { v, _ := c.nodes.(NodeExec); return v }

// Containers is the cluster's capability to name its nodes' containers on
// this machine, nil when its provider offers none.
func (c *Cluster) Containers() NodeContainers { v, _ := c.nodes.(NodeContainers); return v }

// Images is the cluster's capability to load images into its nodes, nil
// when its provider offers none (an existing cluster's images must
// already be on its nodes).
func (c *Cluster) Images() ImageLoader { v, _ := c.nodes.(ImageLoader); return v }

// kindNodes are a kind cluster's nodes, through the kind library: every
// capability.
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
