package cluster

import (
	"context"
	"testing"
)

// conntrackOnly is a provider's nodes that offer one capability, as a
// node agent would offer conntrack without the nodes' containers.
type conntrackOnly struct{}

func (conntrackOnly) FlushConntrack(context.Context) (map[string]int, error) { return nil, nil }

// TestCapabilities: a cluster offers exactly the node capabilities its
// provider's nodes implement, each asked for alone: a kind cluster all
// four, an existing cluster none, and nodes with one capability that one.
func TestCapabilities(t *testing.T) {
	offers := func(c *Cluster) [4]bool {
		return [4]bool{c.Conntrack() != nil, c.Exec() != nil, c.Containers() != nil, c.Images() != nil}
	}
	for _, tc := range []struct {
		name string
		c    *Cluster
		want [4]bool
	}{
		{"kind", &Cluster{Provider: ProviderKind, nodes: kindNodes{}}, [4]bool{true, true, true, true}},
		{"existing", &Cluster{Provider: ProviderExisting}, [4]bool{}},
		{"conntrack only", &Cluster{nodes: conntrackOnly{}}, [4]bool{true, false, false, false}},
	} {
		if got := offers(tc.c); got != tc.want {
			t.Errorf("%s: offers conntrack, exec, containers, images = %v, want %v", tc.name, got, tc.want)
		}
	}
	var _ Provider = KindProvider{}
	var _ Provider = ExistingProvider{}
}
