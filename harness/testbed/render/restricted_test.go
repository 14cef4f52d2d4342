package render_test

import (
	"encoding/json"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	psa "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"

	"github.com/droprun/droprun/harness/scenario"
	"github.com/droprun/droprun/harness/testbed/render"
	"github.com/droprun/droprun/harness/variant"
)

// TestEveryPodRestricted: every pod droprun renders (each built-in
// variant's app, the gateway, Traefik, Caddy, the generators' Job)
// passes the Pod Security restricted level as the API server's own
// checks (k8s.io/pod-security-admission) evaluate it: not root, no
// privilege escalation, every capability dropped, the runtime's seccomp
// profile, no host namespace, port or path.
func TestEveryPodRestricted(t *testing.T) {
	eval, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		t.Fatal(err)
	}
	restricted := psa.LevelVersion{Level: psa.LevelRestricted, Version: psa.LatestVersion()}
	var objs []any
	for _, info := range variant.All() {
		for _, target := range []string{"", "gateway", "traefik", "caddy"} {
			s := scenario.OfVariant(info.Name)
			s.Traffic.Target = target
			o, err := render.Render(s, 0, 0, false, "")
			if err != nil {
				t.Fatalf("%s through %q: %v", info.Name, target, err)
			}
			objs = append(objs, o.List()...)
		}
	}
	job, err := render.GeneratorsJob(render.Generators{Namespace: "ns", Image: "droprun/generator:dev", Count: 3, Token: "t0ken"})
	if err != nil {
		t.Fatal(err)
	}
	objs = append(objs, job)
	var seen []string // kind/name of each workload checked
	for _, o := range objs {
		b, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		var w struct {
			Kind     string            `json:"kind"`
			Metadata metav1.ObjectMeta `json:"metadata"`
			Spec     struct {
				Template *corev1.PodTemplateSpec `json:"template"`
			} `json:"spec"`
		}
		if err := json.Unmarshal(b, &w); err != nil {
			t.Fatal(err)
		}
		if w.Spec.Template == nil {
			continue
		}
		name := w.Kind + "/" + w.Metadata.Name
		if !slices.Contains(seen, name) {
			seen = append(seen, name)
		}
		r := policy.AggregateCheckResults(eval.EvaluatePod(restricted, &w.Spec.Template.ObjectMeta, &w.Spec.Template.Spec))
		if !r.Allowed {
			t.Errorf("%s (%s): not restricted: %s", name, w.Metadata.Labels[variant.LabelRow], r.ForbiddenDetail())
		}
	}
	slices.Sort(seen)
	if want := []string{"Deployment/caddy", "Deployment/gateway", "Deployment/traefik", "Deployment/web", "Job/droprun-generators"}; !slices.Equal(seen, want) {
		t.Errorf("checked %v, want %v", seen, want)
	}
}
