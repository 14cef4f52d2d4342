package render_test

import (
	"github.com/droprun/droprun/harness/generators"
	"slices"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/droprun/droprun/harness/scenario"
	"github.com/droprun/droprun/harness/testbed/render"
	"github.com/droprun/droprun/harness/variant"
)

// TestGeneratorsJob: the generators are one Indexed Job, a pod per index
// all at once, each told how many share the load, replaced at most twice
// per index, without API access; one per node when asked, with the
// resources asked.
func TestGeneratorsJob(t *testing.T) {
	j, err := render.GeneratorsJob(render.Generators{Namespace: "ns", Image: "droprun/generator:dev", Count: 3,
		Args: []string{"--target=http://web.ns.svc:80/version", "--rate=1000"}, OnePerNode: true,
		Requests: map[string]string{"cpu": "250m"}, DeadlineSeconds: 3600, Token: "t0ken"})
	if err != nil {
		t.Fatal(err)
	}
	s := j.Spec
	if *s.CompletionMode != batchv1.IndexedCompletion || *s.Completions != 3 || *s.Parallelism != 3 || *s.BackoffLimitPerIndex != 2 || *s.ActiveDeadlineSeconds != 3600 {
		t.Errorf("Job spec %+v: want Indexed, 3 completions at once, 2 retries per index, the deadline", s)
	}
	if j.Labels[variant.LabelManagedBy] != variant.ManagedBy || s.Template.Labels[variant.LabelManagedBy] != variant.ManagedBy {
		t.Errorf("labels %v / %v: want droprun's managed-by on the Job and its pods", j.Labels, s.Template.Labels)
	}
	pod := s.Template.Spec
	c := pod.Containers[0]
	args := strings.Join(c.Args, " ")
	if !strings.Contains(args, "--generators=3") || !strings.Contains(args, "--control=:9000") || !strings.Contains(args, "--rate=1000") {
		t.Errorf("args %q: want the count, the control port and the given flags", args)
	}
	if *pod.RestartPolicy != corev1.RestartPolicyNever || *pod.AutomountServiceAccountToken {
		t.Errorf("restart %s, token %v: want Never (a failed pod is replaced per index) and no token", *pod.RestartPolicy, *pod.AutomountServiceAccountToken)
	}
	if pod.Affinity == nil || len(pod.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) != 1 ||
		*pod.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0].TopologyKey != corev1.LabelHostname {
		t.Errorf("affinity %+v: want one generator per node", pod.Affinity)
	}
	if q := (*c.Resources.Requests)[corev1.ResourceCPU]; q.String() != "250m" {
		t.Errorf("cpu request %s, want 250m", q.String())
	}
	var token string
	for _, e := range c.Env {
		if *e.Name == generators.TokenEnv {
			token = *e.Value
		}
	}
	if token != "t0ken" {
		t.Errorf("env %+v: want the run's control token in $%s", c.Env, generators.TokenEnv)
	}
	// Within Pod Security restricted: not root, no escalation, no
	// capability, the runtime's seccomp profile.
	if sc := c.SecurityContext; sc == nil || !*sc.RunAsNonRoot || *sc.AllowPrivilegeEscalation || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" ||
		*sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("security context %+v: want restricted", sc)
	}
	if _, err := render.GeneratorsJob(render.Generators{Namespace: "ns", Image: "g", Count: 1}); err == nil || !strings.Contains(err.Error(), "no control token") {
		t.Errorf("no token: %v, want an error", err)
	}
	if _, err := render.GeneratorsJob(render.Generators{Namespace: "ns", Image: "g", Count: 0}); err == nil {
		t.Error("0 generators: want an error")
	}
	if _, err := render.GeneratorsJob(render.Generators{Namespace: "ns", Image: "g", Count: 1, Token: "t", Limits: map[string]string{"cpu": "lots"}}); err == nil {
		t.Error("a bad limit: want an error")
	}
}

// TestGeneratorsOf: the generators' Job of a scenario carries its traffic
// settings as the generator's flags, one --target per target (so that
// nothing in a URL adds another), its placement and resources, and the
// --request-ids a front's access log needs; `droprun render` and the run
// both build it here.
func TestGeneratorsOf(t *testing.T) {
	s, err := scenario.Parse("t", []byte(`apiVersion: droprun/v1alpha1
kind: Scenario
metadata: {name: t}
variants: [{variant: no-prestop}]
traffic: {rate: 250, target: traefik, keepAlive: true, connections: 7, idleTimeout: 150ms, arrivals: poisson, method: POST, timeout: 3s,
  generators: {from: pods, count: 2, placement: any, resources: {requests: {cpu: 100m}}}}
`))
	if err != nil {
		t.Fatal(err)
	}
	g := render.GeneratorsOf(s, render.LoadConfig(s, "row"), "img", []string{"http://10.0.0.1:30081/version", "http://10.0.0.2:30081/version"})
	want := []string{"--target=http://10.0.0.1:30081/version", "--target=http://10.0.0.2:30081/version", "--rate=250", "--protocol=" + string(s.Traffic.Protocol()),
		"--method=POST", "--timeout=3s", "--name=row", "--arrivals=poisson", "--connections=7", "--idle-timeout=150ms", "--request-ids"}
	if !slices.Equal(g.Args, want) {
		t.Errorf("args %q, want %q", g.Args, want)
	}
	if g.Namespace != s.Namespace || g.Image != "img" || g.Count != 2 || g.OnePerNode || g.Requests["cpu"] != "100m" || g.DeadlineSeconds != int64(render.GeneratorsDeadline.Seconds()) {
		t.Errorf("job %+v: want the scenario's namespace, count 2 placed anywhere, its cpu request and the deadline", g)
	}
}
