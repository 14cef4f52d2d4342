package path

import (
	"testing"

	"github.com/droprun/droprun/harness/traffic"
)

func TestLookup(t *testing.T) {
	for name, want := range map[string]string{"": "nodeport", "nodeport": "nodeport", "gateway": "gateway", "traefik": "traefik"} {
		if p, ok := Lookup(name); !ok || p.Name != want {
			t.Errorf("Lookup(%q) = %+v, %v; want %s", name, p, ok, want)
		}
	}
	if _, ok := Lookup("ingress"); ok {
		t.Error("Lookup(ingress) found a path droprun does not have")
	}
}

// TestRoutingNode: direct, the entry node routes; through the gateway the
// node of the gateway pod that answered, and nobody when none answered;
// through Traefik, which sends to pod IPs itself, no node's rules chose.
func TestRoutingNode(t *testing.T) {
	nodes := map[string]string{"gw-1": "n2"}
	for _, tc := range []struct {
		p    Path
		via  string
		want string
	}{
		{NodePort, "", "n1"},
		{NodePort, "gw-1", "n1"},
		{Gateway, "gw-1", "n2"},
		{Gateway, "", ""},
		{Gateway, "gw-gone", ""},
		{Traefik, "gw-1", ""},
	} {
		if got := tc.p.RoutingNode("n1", traffic.Record{Via: tc.via}, nodes); got != tc.want {
			t.Errorf("%s via %q: %q, want %q", tc.p.Name, tc.via, got, tc.want)
		}
	}
}
