package disrupt_test

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"

	"github.com/droprun/droprun/harness/disrupt"
	"github.com/droprun/droprun/harness/scenario"
	"github.com/droprun/droprun/harness/testbed/render"
	"github.com/droprun/droprun/harness/variant"
)

// applier records what a round applies, as testbed.Testbed.Rollout would.
type applier struct {
	objs    []any
	timeout time.Duration
}

func (a *applier) Rollout(_ context.Context, timeout time.Duration, objs ...any) error {
	a.objs, a.timeout = objs, timeout
	return nil
}

// TestRolloutAlternates holds a rollout's rounds to the versions the run
// has always gone through (v1 → v2, v2 → v1, ...) and to what each round
// applies: the variant's Deployment at the version it goes to, its change
// cause naming the run, the round and the versions, with the timeout.
func TestRolloutAlternates(t *testing.T) {
	sc, err := scenario.Parse("t", []byte(`apiVersion: droprun/v1alpha1
kind: Scenario
metadata: {name: alt}
variants: [{variant: no-prestop}]
`))
	if err != nil {
		t.Fatal(err)
	}
	a := &applier{}
	var d disrupt.Disruption = disrupt.Rollout{Run: "alt", Variant: render.Of(sc, 0), Apply: a, Timeout: time.Minute}
	for n, want := range map[int][2]string{1: {"v1", "v2"}, 2: {"v2", "v1"}, 3: {"v1", "v2"}} {
		r, err := d.Round(n)
		if err != nil {
			t.Fatal(err)
		}
		if r.From != want[0] || r.To != want[1] || r.Deployment != variant.WebName {
			t.Errorf("round %d: %s → %s of %q, want %s → %s of %q", n, r.From, r.To, r.Deployment, want[0], want[1], variant.WebName)
		}
		if a.objs != nil {
			t.Fatalf("round %d: preparing it applied %v", n, a.objs)
		}
		if err := r.Take(context.Background()); err != nil {
			t.Fatal(err)
		}
		dep, ok := a.objs[0].(*appsv1ac.DeploymentApplyConfiguration)
		if len(a.objs) != 1 || !ok || a.timeout != time.Minute {
			t.Fatalf("round %d applied %v with timeout %s, want one Deployment with 1m", n, a.objs, a.timeout)
		}
		cause := dep.Annotations[variant.AnnotationChangeCause]
		if !strings.Contains(cause, "alt: rollout") || !strings.HasSuffix(cause, want[0]+"→"+want[1]) {
			t.Errorf("round %d: change cause %q", n, cause)
		}
		image := *dep.Spec.Template.Spec.Containers[0].Image
		if !strings.Contains(image, want[1]) {
			t.Errorf("round %d: image %q, want version %s", n, image, want[1])
		}
		a.objs = nil
	}
	if _, err := d.Round(0); err == nil {
		t.Error("round 0: no error")
	}
}
