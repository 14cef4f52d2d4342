package droprun_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLayering: what reads a run's records (the analysis and its views)
// and the record types themselves import no cluster, image, engine or
// client code (no grpc-go, no harness/attack),
// so that a report renders from a run directory on a machine without
// Docker or Kubernetes, and a record cannot grow a dependency on its
// collector. The Kubernetes tree guards its layering with
// .import-restrictions files; go list over the packages is enough here.
func TestLayering(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	pure := []string{
		// what reads a run directory
		"./harness/analysis", "./harness/report", "./harness/plot", "./harness/gate", "./harness/advise", "./harness/history",
		// the records run writes and analysis reads, and the scenario parser
		"./harness/timeline", "./harness/appmetrics", "./harness/frontlog", "./harness/generators", "./harness/traffic", "./harness/rig",
		"./harness/variant", "./harness/scenario", "./harness/jsonl", "./harness/stats", "./harness/path", "./harness/imageref",
	}
	// Module and package trees, each matched as itself or a path below it.
	forbidden := []string{
		"k8s.io/client-go",
		"sigs.k8s.io/kind",
		"github.com/google/go-containerregistry",
		"github.com/docker",
		// the clients: reading a run needs neither grpc-go nor the host
		// client (harness/attack, which holds vegeta's attacker)
		"google.golang.org/grpc",
		"github.com/droprun/droprun/harness/attack",
		"github.com/droprun/droprun/harness/observe",
		"github.com/droprun/droprun/harness/testbed",
		"github.com/droprun/droprun/harness/cluster",
		"github.com/droprun/droprun/harness/image",
		"github.com/droprun/droprun/harness/nodeimage",
		"github.com/droprun/droprun/harness/engine",
	}
	// The views read a run and hold no client at all: vegeta's library
	// (one package with its attacker) is the clients' too.
	views := map[string]bool{"./harness/analysis": true, "./harness/report": true, "./harness/plot": true, "./harness/gate": true, "./harness/advise": true, "./harness/history": true}
	for _, pkg := range pure {
		out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
		}
		for _, dep := range strings.Fields(string(out)) {
			if views[pkg] && strings.HasPrefix(dep, "github.com/tsenart/vegeta") {
				t.Errorf("%s imports %s (through its dependencies: go list -deps %s)", pkg, dep, pkg)
			}
			for _, f := range forbidden {
				if dep == f || strings.HasPrefix(dep, f+"/") {
					t.Errorf("%s imports %s (through its dependencies: go list -deps %s)", pkg, dep, pkg)
				}
			}
		}
	}
}

// TestClusterKnowsNoScenario: harness/cluster gives a run its cluster
// knowing neither scenarios nor the container engine (issue 38, item 3):
// testbed turns a scenario into a cluster.Config and hands kind the
// engine's checks, so a new provider (a node agent's cluster) needs
// neither.
func TestClusterKnowsNoScenario(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	out, err := exec.Command("go", "list", "-deps", "./harness/cluster").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps ./harness/cluster: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		switch dep {
		case "github.com/droprun/droprun/harness/scenario", "github.com/droprun/droprun/harness/engine":
			t.Errorf("harness/cluster imports %s (go list -deps ./harness/cluster)", dep)
		}
	}
}
