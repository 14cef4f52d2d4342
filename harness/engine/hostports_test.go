package engine

import (
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/droprun/droprun/harness/scenario"
)

// TestDefaultsMatchTheScenario: doctor checks the layout a default
// scenario asks for.
func TestDefaultsMatchTheScenario(t *testing.T) {
	if DefaultHostPort != scenario.DefaultHostPort || DefaultHostPort+1 != scenario.DefaultGatewayHostPort || DefaultNodes != scenario.DefaultNodes {
		t.Errorf("doctor defaults %d/%d×%d, scenario %d/%d×%d", DefaultHostPort, DefaultHostPort+1, DefaultNodes,
			scenario.DefaultHostPort, scenario.DefaultGatewayHostPort, scenario.DefaultNodes)
	}
}

// freeLayout finds a base port whose 3-node layout (base..base+5) is free.
func freeLayout(t *testing.T) int {
	t.Helper()
	for base := 41000; base < 60000; base += 97 {
		free := true
		for p := base; p < base+6 && free; p++ {
			free = listenable(p) == nil
		}
		if free {
			return base
		}
	}
	t.Skip("no 6 consecutive free ports on 127.0.0.1")
	return 0
}

func TestHostPortsCheck(t *testing.T) {
	base := freeLayout(t)
	c := hostPortsCheck(base, base+1, 3, "droprun", nil)
	want := "127.0.0.1:" + strconv.Itoa(base) + "," + strconv.Itoa(base+2) + "," + strconv.Itoa(base+4) + " (web) and " +
		strconv.Itoa(base+1) + "," + strconv.Itoa(base+3) + "," + strconv.Itoa(base+5) + " (gateway), one pair per node of 3: free"
	if !c.OK || c.Detail != want {
		t.Errorf("free layout: %+v\nwant detail %q", c, want)
	}

	// A worker's gateway port held by another program.
	taken := base + 3
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(taken))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c = hostPortsCheck(base, base+1, 3, "droprun", nil)
	if c.OK || !strings.Contains(c.Detail, "1 of 6 taken: "+strconv.Itoa(taken)+" in use") {
		t.Errorf("taken port: %+v", c)
	}
	for _, w := range []string{"stop what listens on " + strconv.Itoa(taken), "ss -ltnp 'sport = :" + strconv.Itoa(taken) + "'", "node k uses hostPort+2k and gatewayHostPort+2k"} {
		if !strings.Contains(c.Fix, w) {
			t.Errorf("fix %q lacks %q", c.Fix, w)
		}
	}
	// With one node only node 0's ports count.
	if c := hostPortsCheck(base, base+1, 1, "droprun", nil); !c.OK {
		t.Errorf("1 node: %+v", c)
	}
	// Ports the nodes of the cluster a run reuses publish are fine;
	// another cluster's, or another container's, are not.
	nodesOf := func(cluster string) func(int) []publisher {
		return func(p int) []publisher {
			if p == base || p == base+1 {
				return []publisher{{container: cluster + "-control-plane", cluster: cluster}}
			}
			return nil
		}
	}
	if c := hostPortsCheck(base, base+1, 1, "droprun", nodesOf("droprun")); !c.OK || !strings.Contains(c.Detail, "2 published by kind cluster droprun, which a run reuses") {
		t.Errorf("ports of the cluster a run reuses: %+v", c)
	}
	if c := hostPortsCheck(base, base+1, 1, "droprun", nodesOf("other")); c.OK || !strings.Contains(c.Detail, "published by container other-control-plane") {
		t.Errorf("ports of another cluster: %+v", c)
	}
}
