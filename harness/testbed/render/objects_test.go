package render_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/droprun/droprun/harness/scenario"
	"github.com/droprun/droprun/harness/testbed/render"
	"github.com/droprun/droprun/harness/variant"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// renderYAML returns the YAML `droprun render` prints for one variant of the
// shipped compare-all scenario at v1. A built-in variant compare-all does
// not measure is rendered as `droprun render --variant` does, from the
// built-in defaults (the same as compare-all's).
func renderYAML(t *testing.T, name string) []byte {
	t.Helper()
	s, err := scenario.Load("../../../scenarios/compare-all.yaml")
	if err != nil {
		t.Fatal(err)
	}
	i := s.Index(name)
	if _, builtin := variant.Lookup(name); i < 0 && builtin {
		s, i = scenario.OfVariant(name), 0
	}
	if i < 0 {
		t.Fatalf("compare-all has no variant %q", name)
	}
	objs, err := render.Render(s, i, 0, false, "")
	if err != nil {
		t.Fatal(err)
	}
	out, err := render.YAML(objs.List()...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestGolden compares each variant's rendered manifests with
// testdata/<variant>.yaml. Run `go test ./harness/variant -update` after an
// intended change and review the diff.
func TestGolden(t *testing.T) {
	for _, info := range variant.All() {
		t.Run(info.Name, func(t *testing.T) {
			got := renderYAML(t, info.Name)
			golden := filepath.Join("testdata", info.Name+".yaml")
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("rendered YAML differs from %s:\n%s", golden, got)
			}
		})
	}
}

// deployment decodes the first document of rendered YAML.
func deployment(t *testing.T, y []byte) (*appsv1.Deployment, *corev1.Container) {
	t.Helper()
	first, _, _ := bytes.Cut(y, []byte("---\n"))
	var d appsv1.Deployment
	if err := yaml.UnmarshalStrict(first, &d); err != nil {
		t.Fatal(err)
	}
	return &d, &d.Spec.Template.Spec.Containers[0]
}

// TestVariantSemantics checks what each variant is about, independently of
// the golden files' formatting: the hook, the app flag, the image flavour.
func TestVariantSemantics(t *testing.T) {
	tests := []struct {
		name      string
		image     string
		shutdown  string
		hookExec  []string
		hookSleep int64
	}{
		{name: variant.NoPreStop, image: "bookshop:v1", shutdown: "--shutdown=none"},
		{name: variant.PreStopSleep, image: "bookshop:v1", shutdown: "--shutdown=none", hookExec: []string{"sleep", "5"}},
		{name: variant.PreStopSleepAction, image: "bookshop:v1", shutdown: "--shutdown=none", hookSleep: 5},
		{name: variant.GracefulDrain, image: "bookshop:v1", shutdown: "--shutdown=drain"},
		{name: variant.GracefulDrainClose, image: "bookshop:v1", shutdown: "--shutdown=drain-close"},
		{name: variant.NaiveShutdown, image: "bookshop:v1", shutdown: "--shutdown=naive"},
		{name: variant.PreStopExecDistroless, image: "bookshop:v1-distroless", shutdown: "--shutdown=none", hookExec: []string{"sleep", "5"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, c := deployment(t, renderYAML(t, tc.name))
			if c.Image != tc.image || c.ImagePullPolicy != corev1.PullNever {
				t.Errorf("image %q pull %q", c.Image, c.ImagePullPolicy)
			}
			if c.Args[0] != tc.shutdown {
				t.Errorf("args %v, want %s first", c.Args, tc.shutdown)
			}
			if strings.HasPrefix(tc.shutdown, "--shutdown=drain") && !strings.HasPrefix(strings.Join(c.Args, " "), tc.shutdown+" --drain-delay=5s") {
				t.Errorf("drain args %v", c.Args)
			}
			var exec []string
			var sleep int64
			if c.Lifecycle != nil && c.Lifecycle.PreStop != nil {
				if e := c.Lifecycle.PreStop.Exec; e != nil {
					exec = e.Command
				}
				if s := c.Lifecycle.PreStop.Sleep; s != nil {
					sleep = s.Seconds
				}
			}
			if strings.Join(exec, " ") != strings.Join(tc.hookExec, " ") || sleep != tc.hookSleep {
				t.Errorf("preStop exec=%v sleep=%d, want exec=%v sleep=%d", exec, sleep, tc.hookExec, tc.hookSleep)
			}
			if *d.Spec.Replicas != 2 || *d.Spec.Template.Spec.TerminationGracePeriodSeconds != 30 {
				t.Errorf("replicas %d grace %d", *d.Spec.Replicas, *d.Spec.Template.Spec.TerminationGracePeriodSeconds)
			}
			if d.Spec.Template.Labels[variant.LabelVariant] != tc.name {
				t.Errorf("pod template labels %v", d.Spec.Template.Labels)
			}
		})
	}
}

func TestServiceNodePort(t *testing.T) {
	y, err := render.YAML(render.WebService("ns", "http"))
	if err != nil {
		t.Fatal(err)
	}
	var s corev1.Service
	if err := yaml.UnmarshalStrict(y, &s); err != nil {
		t.Fatal(err)
	}
	if s.Spec.Type != corev1.ServiceTypeNodePort || s.Spec.Ports[0].NodePort != 30080 || s.Spec.Selector["app"] != "web" || s.Namespace != "ns" {
		t.Errorf("service %+v", s.Spec)
	}
}

// TestDetectRoundTrip: every rendered variant is detected as itself from
// its pod spec alone, and a hook left behind is noticed.
func TestDetectRoundTrip(t *testing.T) {
	for _, info := range variant.All() {
		d, _ := deployment(t, renderYAML(t, info.Name))
		got, found := variant.Detect(&d.Spec.Template.Spec)
		if got != info.Name {
			t.Errorf("%s detected as %q (%s)", info.Name, got, found)
		}
	}
	d, c := deployment(t, renderYAML(t, variant.NoPreStop))
	c.Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"sleep", "5"}}}}
	if got, _ := variant.Detect(&d.Spec.Template.Spec); got != variant.PreStopSleep {
		t.Errorf("no-prestop with a leftover hook detected as %q", got)
	}
}

// TestFacts reads the shutdown settings back from rendered bookshop
// variants.
func TestFacts(t *testing.T) {
	for _, tc := range []struct{ variant, want string }{
		{variant.NoPreStop, "no preStop, grace 30s, readiness GET /readyz :8080 every 1s, unready after 2 failures"},
		{variant.PreStopSleep, "preStop exec sleep 5 (5s), grace 30s, readiness GET /readyz :8080 every 1s, unready after 2 failures"},
		{variant.PreStopSleepAction, "preStop sleep 5s, grace 30s, readiness GET /readyz :8080 every 1s, unready after 2 failures"},
	} {
		d, _ := deployment(t, renderYAML(t, tc.variant))
		f, err := variant.Facts(&d.Spec.Template.Spec, variant.ContainerName)
		if err != nil {
			t.Fatal(err)
		}
		if got := f.String(); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.variant, got, tc.want)
		}
	}
}

// TestIdleTimeoutArg: a workload's idleTimeout becomes the app's
// --idle-timeout; none (the default) leaves the flag out.
func TestIdleTimeoutArg(t *testing.T) {
	for _, tc := range []struct {
		idle time.Duration
		want string
	}{{0, ""}, {1500 * time.Millisecond, "--idle-timeout=1.5s"}} {
		s := scenario.OfVariant(variant.GracefulDrain)
		s.Variants[0].IdleTimeout = scenario.D(tc.idle)
		objs, err := render.Render(s, 0, 0, false, "")
		if err != nil {
			t.Fatal(err)
		}
		out, err := render.YAML(objs.List()...)
		if err != nil {
			t.Fatal(err)
		}
		_, c := deployment(t, out)
		args := strings.Join(c.Args, " ")
		if got := strings.Contains(args, "--idle-timeout"); got != (tc.want != "") || !strings.Contains(args, tc.want) {
			t.Errorf("idleTimeout %s: args %q, want %q", tc.idle, args, tc.want)
		}
	}
}
