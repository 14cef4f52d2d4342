package cluster

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os/exec"
	"regexp"
	"strconv"
	"strings"

	"sigs.k8s.io/kind/pkg/cluster/nodes"
)

// FlushConntrack deletes the TCP conntrack entries stuck in SYN_SENT in
// every node of cluster name and returns how many were deleted, per node.
//
// Requests that timed out against a dead pod leave SYN_SENT [UNREPLIED]
// entries pointing at its IP; a later connection that reuses the client's
// source port matches one, is sent to the dead IP and times out too, for
// tens of seconds (../shared/ENVIRONMENT.md). Call it between measured
// windows only, never during one.
func (k *Kind) FlushConntrack(ctx context.Context, name string) (map[string]int, error) {
	nodes, err := k.provider.ListNodes(name)
	if err != nil {
		return nil, fmt.Errorf("listing the nodes of %q: %w", name, err)
	}
	out := map[string]int{}
	for _, n := range nodes {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		var buf bytes.Buffer
		// conntrack exits 1 when nothing matched; its message says how many
		// entries it deleted either way.
		_ = n.CommandContext(ctx, "conntrack", "-D", "-p", "tcp", "--state", "SYN_SENT").SetStdout(&buf).SetStderr(&buf).Run()
		deleted, ok := parseConntrackDeleted(buf.String())
		if !ok {
			return out, fmt.Errorf("conntrack on node %s: %s", n.String(), buf.String())
		}
		out[n.String()] = deleted
	}
	return out, nil
}

var conntrackDeleted = regexp.MustCompile(`(\d+) flow entries have been deleted`)

func parseConntrackDeleted(s string) (int, bool) {
	m := conntrackDeleted.FindStringSubmatch(s)
	if m == nil {
		return 0, false
	}
	n, err := strconv.Atoi(m[1])
	return n, err == nil
}

// NodeContainerIDs returns the docker container ID of every node of
// cluster name, by node name. The rig sampler uses them to find each
// node's CPU accounting.
func (k *Kind) NodeContainerIDs(ctx context.Context, name string) (map[string]string, error) {
	nodes, err := k.provider.ListNodes(name)
	if err != nil {
		return nil, fmt.Errorf("listing the nodes of %q: %w", name, err)
	}
	ids := map[string]string{}
	for _, n := range nodes {
		out, err := exec.CommandContext(ctx, "docker", "inspect", "--format", "{{.Id}}", n.String()).Output()
		if err != nil {
			return ids, fmt.Errorf("docker inspect %s: %w", n.String(), err)
		}
		ids[n.String()] = strings.TrimSpace(string(out))
	}
	return ids, nil
}

// NodeExec returns the names of cluster name's nodes and a function that
// runs a command inside one of them (docker exec, through kind), with
// stdin (nil for none) and stdout connected. harness/dataplane watches
// each node's rules with it.
func (k *Kind) NodeExec(name string) ([]string, ExecFunc, error) {
	list, err := k.provider.ListNodes(name)
	if err != nil {
		return nil, nil, fmt.Errorf("listing the nodes of %q: %w", name, err)
	}
	byName := map[string]nodes.Node{}
	var names []string
	for _, n := range list {
		byName[n.String()] = n
		names = append(names, n.String())
	}
	exec := func(ctx context.Context, node string, stdin io.Reader, stdout io.Writer, args ...string) error {
		n, ok := byName[node]
		if !ok {
			return fmt.Errorf("no node %q in cluster %q", node, name)
		}
		var stderr bytes.Buffer
		cmd := n.CommandContext(ctx, args[0], args[1:]...).SetStdout(stdout).SetStderr(&stderr)
		if stdin != nil {
			cmd.SetStdin(stdin)
		}
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("%s on node %s: %w: %s", strings.Join(args, " "), node, err, strings.TrimSpace(stderr.String()))
		}
		return nil
	}
	return names, exec, nil
}
