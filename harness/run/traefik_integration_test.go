package run

import (
	"context"
	"testing"
	"time"

	"github.com/droprun/droprun/harness/testbed"
	"github.com/droprun/droprun/harness/traffic"
)

// TestIntegrationRunTraefik: through Traefik Proxy (an ingress controller
// that sends to pod IPs from its own endpoint list, built from the Go
// module proxy once and kept in the user's cache), both control windows
// are clean, no-prestop's drops show as 502s, and graceful-drain, which
// serves until it is out of every endpoint list, drops none beyond the
// rig's floor.
func TestIntegrationRunTraefik(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	needCluster(t, ctx)
	sc := itScenario(t, `metadata: {name: e2e-traefik}
variants:
  - variant: no-prestop
  - variant: graceful-drain
rollouts: 2
traffic: {rate: 300, control: 5s, between: 3s, settle: 3s, target: traefik}
`)
	a, err := Run(ctx, sc, Options{Dir: runDir(t), Log: testWriter{t}, Keep: true,
		Testbed: testbed.Options{ModuleDir: moduleDir(), ImageDir: t.TempDir()}})
	if a != nil {
		itCreated = true
	}
	if err != nil {
		t.Fatal(err)
	}
	const floor = 5 // the rig's own drops on a used cluster (see TestIntegrationStarvedRig)
	for _, v := range a.Summary.Variants {
		t.Logf("traefik %s: %d drops of %d, classes %v, control %d/%d", v.Variant, v.Drops, v.WindowRequests, v.Classes, v.Control.Failures, v.Control.Requests)
		if v.Control.Failures > 0 || v.Control.Requests == 0 {
			t.Errorf("%s through traefik: control %d failures in %d requests, want a clean control window", v.Variant, v.Control.Failures, v.Control.Requests)
		}
		switch v.Variant {
		case "no-prestop":
			if v.Drops == 0 || v.Classes[traffic.Class502] == 0 {
				t.Errorf("no-prestop through traefik: %d drops, classes %v; want drops, 502s among them", v.Drops, v.Classes)
			}
		case "graceful-drain":
			if v.Drops > floor {
				t.Errorf("graceful-drain through traefik: %d drops, classes %v; want at most %d", v.Drops, v.Classes, floor)
			}
		}
	}
}
