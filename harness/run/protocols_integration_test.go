package run

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/droprun/droprun/harness/traffic"
)

// TestIntegrationRunH2C measures a rolling update over HTTP/2 (h2c, 4
// connections per node's port, 300 req/s, 2 rollouts): no-prestop, whose
// pods cut their connections at SIGTERM while the nodes still route new
// ones to them, drops in the HTTP/2 client's own classes; graceful-drain,
// which serves through its drain delay and then sends GOAWAY, drops none
// beyond the rig's floor (a stream its GOAWAY refused is retried on a new
// connection, and counted as masked, not dropped).
func TestIntegrationRunH2C(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	needCluster(t, ctx)
	sc := itScenario(t, `metadata: {name: e2e-h2c}
variants:
  - variant: no-prestop
  - variant: graceful-drain
rollouts: 2
traffic: {rate: 300, protocol: h2c, connections: 4, control: 5s, between: 3s, settle: 3s}
`)
	a, _ := quietRun(ctx, t, sc)
	if got := a.Summary.Traffic.ProtocolOf(); got != traffic.ProtocolH2C || a.Summary.Traffic.Connections != 4 {
		t.Errorf("the run recorded protocol %s with %d connections, want h2c with 4", got, a.Summary.Traffic.Connections)
	}
	const floor = 5 // the rig's own drops on a used cluster (see TestIntegrationStarvedRig)
	// What an HTTP/2 client meets on a pod that stopped: a new connection
	// refused or timed out, streams cut with the connection (EOF, reset),
	// refused by a GOAWAY or reset.
	h2 := []traffic.Class{traffic.ClassRefused, traffic.ClassTimeout, traffic.ClassEOF, traffic.ClassReset, traffic.ClassGoAway, traffic.ClassStreamReset}
	for _, v := range a.Summary.Variants {
		t.Logf("h2c %s: %d drops of %d, classes %v, masked %d %v, control %d/%d", v.Variant, v.Drops, v.WindowRequests, v.Classes, v.Masked, v.MaskedClasses, v.Control.Failures, v.Control.Requests)
		if v.Control.Failures > 0 || v.Control.Requests == 0 {
			t.Errorf("h2c %s: control %d failures in %d requests, want a clean control window", v.Variant, v.Control.Failures, v.Control.Requests)
		}
		for c, n := range v.Classes {
			if c.Failed() && n > 0 && !slices.Contains(h2, c) {
				t.Errorf("h2c %s: %d requests of class %s, not one an HTTP/2 client meets in a rollout (%v)", v.Variant, n, c, h2)
			}
		}
		switch v.Variant {
		case "no-prestop":
			if v.RolloutsWithDrops == 0 {
				t.Errorf("h2c no-prestop: no rollout dropped (classes %v): the race was not reproduced over HTTP/2", v.Classes)
			}
		case "graceful-drain":
			if v.Drops-v.Excused > floor {
				t.Errorf("h2c graceful-drain: %d drops (%d excused as the rig's), classes %v; want at most %d", v.Drops, v.Excused, v.Classes, floor)
			}
			// What a retry hid is the GOAWAY's refusal (or the
			// connection closing under the stream), never unknown.
			t.Logf("h2c graceful-drain: %d streams retried behind the client's back, by class %v", v.Masked, v.MaskedClasses)
			for _, c := range slices.Sorted(maps.Keys(v.MaskedClasses)) {
				if c != traffic.ClassGoAway && c != traffic.ClassEOF && c != traffic.ClassReset {
					t.Errorf("h2c graceful-drain: %d masked streams hid a failure of class %s, want %s (or the connection closing)", v.MaskedClasses[c], c, traffic.ClassGoAway)
				}
			}
		}
	}
}
