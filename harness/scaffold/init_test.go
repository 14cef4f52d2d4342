package scaffold

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/droprun/droprun/harness/scenario"
	"github.com/droprun/droprun/harness/testbed"
	"github.com/droprun/droprun/harness/testbed/render"
)

const podinfo = `# podinfo, as its own kustomize base ships it (abridged)
apiVersion: apps/v1
kind: Deployment
metadata:
  name: podinfo
spec:
  replicas: 2
  selector:
    matchLabels: {app: podinfo}
  template:
    metadata:
      labels: {app: podinfo}
    spec:
      terminationGracePeriodSeconds: %GRACE%
      containers:
        - name: podinfod
          image: ghcr.io/stefanprodan/podinfo:6.9.2
          command: [./podinfo, --port=9898, --port-metrics=9797]
          ports:
            - {name: http, containerPort: 9898}
            - {name: http-metrics, containerPort: 9797}
          readinessProbe:
            httpGet: {path: /readyz, port: http}
            periodSeconds: 1
`

// fixture writes files into a new folder (the working directory of the
// test's `droprun init`) and returns its path.
func fixture(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for n, body := range files {
		p := filepath.Join(dir, n)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// archive writes a docker-save archive of random images under tags.
func archive(t *testing.T, p string, tags ...string) {
	t.Helper()
	refs := map[name.Reference]v1.Image{}
	for _, s := range tags {
		img, err := random.Image(256, 1)
		if err != nil {
			t.Fatal(err)
		}
		tag, err := name.NewTag(s)
		if err != nil {
			t.Fatal(err)
		}
		refs[tag] = img
	}
	if err := tarball.MultiRefWriteToFile(p, refs); err != nil {
		t.Fatal(err)
	}
}

func TestInitPodinfo(t *testing.T) {
	dir := fixture(t, map[string]string{"deploy/podinfo.yaml": strings.ReplaceAll(podinfo, "%GRACE%", "3")})
	archive(t, filepath.Join(dir, "images.tar"), "podinfo:t1", "podinfo:t2")
	out := filepath.Join(dir, "bench", "droprun.yaml")
	r, err := Init(Options{
		Manifest: filepath.Join(dir, "deploy/podinfo.yaml"), Out: out,
		Images: []string{"podinfo:t1", "podinfo:t2"}, Archives: []string{filepath.Join(dir, "images.tar")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if r.Container != "podinfod" || r.Port != 9898 || r.Path != "/readyz" {
		t.Errorf("chose container %q, port %d (%s), path %q; want podinfod, 9898 (the readiness probe's), /readyz", r.Container, r.Port, r.PortFrom, r.Path)
	}
	// The files as `droprun validate` reads them.
	sc, err := scenario.Load(out)
	if err != nil {
		t.Fatalf("the written scenario does not load: %v", err)
	}
	if _, err := testbed.Preflight(sc); err != nil {
		t.Fatalf("the written scenario's archives: %v", err)
	}
	if sc.Metadata.Name != "podinfo" || len(sc.Variants) != 2 || sc.Variants[0].Name != AsShipped || sc.Variants[1].Name != PreStopSleep {
		t.Errorf("scenario %s with variants %+v; want podinfo: as-shipped, prestop-sleep", sc.Metadata.Name, sc.Variants)
	}
	if c := sc.App.Custom; c.Port != 9898 || c.Container != "podinfod" || sc.Traffic.Path != "/readyz" {
		t.Errorf("app.custom %+v, traffic.path %q", c, sc.Traffic.Path)
	}
	text, _ := os.ReadFile(out)
	for _, want := range []string{
		`manifest: "../deploy/podinfo.yaml"`, `manifest: "podinfo-prestop-sleep.yaml"`, `imageArchives: ["../images.tar"]`,
		"# The container whose image the rollouts change.", "(the readiness probe's port \"http\")", "those 503s count as drops",
	} {
		if !strings.Contains(string(text), want) {
			t.Errorf("the scenario lacks %q:\n%s", want, text)
		}
	}

	// The as-shipped variant is the user's file itself; prestop-sleep adds
	// the sleep and a grace period it fits in, and nothing else.
	shipped, err := scenario.ReadDeployment(sc.Variants[0].Manifest)
	if err != nil {
		t.Fatal(err)
	}
	pre, err := scenario.ReadDeployment(r.PreStopManifest)
	if err != nil {
		t.Fatal(err)
	}
	pc := pre.Spec.Template.Spec.Containers[0]
	if pc.Lifecycle == nil || pc.Lifecycle.PreStop == nil || pc.Lifecycle.PreStop.Sleep == nil || pc.Lifecycle.PreStop.Sleep.Seconds != DefaultPreStopSeconds {
		t.Fatalf("prestop-sleep container lifecycle %+v; want a native preStop sleep of %d s", pc.Lifecycle, DefaultPreStopSeconds)
	}
	if g := *pre.Spec.Template.Spec.TerminationGracePeriodSeconds; g != DefaultPreStopSeconds+3 {
		t.Errorf("grace period %d; want %d (the sleep plus the 3 s the app had)", g, DefaultPreStopSeconds+3)
	}
	// Without the hook and the grace period, the whole Deployment is the
	// user's.
	pre.Spec.Template.Spec.Containers[0].Lifecycle = shipped.Spec.Template.Spec.Containers[0].Lifecycle
	pre.Spec.Template.Spec.TerminationGracePeriodSeconds = shipped.Spec.Template.Spec.TerminationGracePeriodSeconds
	if !equality.Semantic.DeepEqual(shipped, pre) {
		t.Errorf("prestop-sleep changed more than the hook and the grace period:\nshipped %s\nprestop %s", shipped.String(), pre.String())
	}
	// And droprun renders it with the images swapped in.
	objs, err := render.Render(sc, 1, 1, false, "")
	if err != nil {
		t.Fatal(err)
	}
	rc := objs.Deployment.Spec.Template.Spec.Containers[0]
	if *rc.Image != "podinfo:t2" || rc.Lifecycle == nil || rc.Lifecycle.PreStop.Sleep == nil {
		t.Errorf("rendered prestop-sleep: image %s, lifecycle %+v", *rc.Image, rc.Lifecycle)
	}

	// Never overwritten without Force.
	again := Options{Manifest: filepath.Join(dir, "deploy/podinfo.yaml"), Out: out, Images: []string{"podinfo:t1", "podinfo:t2"}}
	if _, err := Init(again); !isInput(err, out+" exists") {
		t.Errorf("second init without Force: %v; want %s exists", err, out)
	}
	again.Force = true
	if _, err := Init(again); err != nil {
		t.Errorf("second init with Force: %v", err)
	}
	// Nor is the user's manifest, ever.
	inPlace := Options{Manifest: filepath.Join(dir, "deploy/podinfo.yaml"), Out: filepath.Join(dir, "deploy/podinfo.yaml"), Images: []string{"a:1", "a:2"}, Force: true}
	if _, err := Init(inPlace); !isInput(err, "it would be overwritten") {
		t.Errorf("init over the manifest: %v", err)
	}
}

func TestInitNoProbe(t *testing.T) {
	dir := fixture(t, map[string]string{"d.yaml": `apiVersion: apps/v1
kind: Deployment
metadata: {name: shop.v2}
spec:
  selector: {matchLabels: {app: shop}}
  template:
    metadata: {labels: {app: shop}}
    spec:
      containers:
        - name: web
          image: shop:1
          ports: [{containerPort: 8081}]
`})
	out := filepath.Join(dir, "droprun.yaml")
	r, err := Init(Options{Manifest: filepath.Join(dir, "d.yaml"), Out: out, Images: []string{"shop:1", "shop:2"}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Path != "/" || r.Port != 8081 || r.Scenario.Metadata.Name != "shop-v2" {
		t.Errorf("path %q, port %d, name %q; want /, 8081 (the only port), shop-v2", r.Path, r.Port, r.Scenario.Metadata.Name)
	}
	text, _ := os.ReadFile(out)
	if !strings.Contains(string(text), "no HTTP readiness probe to take a path from: / is a guess") {
		t.Errorf("the scenario does not say why the path is /:\n%s", text)
	}
	if !strings.Contains(strings.Join(r.Notes, "\n"), "traffic.path is /") {
		t.Errorf("notes %q do not mention the path", r.Notes)
	}
	// --path overrides the guess, and says so.
	r2, err := Init(Options{Manifest: filepath.Join(dir, "d.yaml"), Out: filepath.Join(dir, "p.yaml"), Images: []string{"shop:1", "shop:2"}, Path: "/version", Force: true})
	if err != nil {
		t.Fatal(err)
	}
	if text, _ := os.ReadFile(r2.Out); r2.Scenario.Traffic.Path != "/version" || !strings.Contains(string(text), "(droprun init --path)") {
		t.Errorf("--path /version: traffic.path %q:\n%s", r2.Scenario.Traffic.Path, text)
	}
	if _, err := Init(Options{Manifest: filepath.Join(dir, "d.yaml"), Out: filepath.Join(dir, "q.yaml"), Images: []string{"shop:1", "shop:2"}, Path: "version"}); !isInput(err, `--path "version" does not start with /`) {
		t.Errorf("--path version: %v", err)
	}
	// The default grace period (30 s) holds the sleep: left unset.
	pre, err := scenario.ReadDeployment(r.PreStopManifest)
	if err != nil {
		t.Fatal(err)
	}
	if pre.Spec.Template.Spec.TerminationGracePeriodSeconds != nil {
		t.Errorf("grace period set to %d; the default 30 s holds a 5 s sleep", *pre.Spec.Template.Spec.TerminationGracePeriodSeconds)
	}
}

func isInput(err error, want string) bool {
	var ie *InputError
	return errors.As(err, &ie) && strings.Contains(ie.Error(), want) && ie.Fix != ""
}

func TestInitBadInput(t *testing.T) {
	twoContainers := strings.Replace(strings.ReplaceAll(podinfo, "%GRACE%", "30"), "      containers:\n", "      containers:\n        - {name: proxy, image: envoy:1}\n", 1)
	dir := fixture(t, map[string]string{
		"podinfo.yaml": strings.ReplaceAll(podinfo, "%GRACE%", "30"),
		"two.yaml":     twoContainers,
		"svc.yaml":     "apiVersion: v1\nkind: Service\nmetadata: {name: podinfo}\n",
		"both.yaml":    strings.ReplaceAll(podinfo, "%GRACE%", "30") + "---\napiVersion: v1\nkind: Service\nmetadata: {name: podinfo}\n",
		"typo.yaml":    strings.Replace(strings.ReplaceAll(podinfo, "%GRACE%", "30"), "replicas:", "replica:", 1),
		"path.yaml":    strings.Replace(strings.ReplaceAll(podinfo, "%GRACE%", "30"), "name: podinfo\n", "name: ../../x\n", 1),
	})
	archive(t, filepath.Join(dir, "images.tar"), "podinfo:t1", "podinfo:t2")
	images := []string{"podinfo:t1", "podinfo:t2"}
	in := func(n string) string { return filepath.Join(dir, n) }
	tests := []struct {
		name string
		o    Options
		want string
	}{
		{"several containers", Options{Manifest: in("two.yaml"), Images: images}, "Deployment podinfo has 2 containers (proxy, podinfod)"},
		{"container not there", Options{Manifest: in("two.yaml"), Container: "app", Images: images}, `has no container "app"; its containers: proxy, podinfod`},
		{"not a Deployment", Options{Manifest: in("svc.yaml"), Images: images}, "not an apps/v1 Deployment"},
		{"Deployment and Service", Options{Manifest: in("both.yaml"), Images: images}, "holds more than one YAML document"},
		{"unknown field", Options{Manifest: in("typo.yaml"), Images: images}, `unknown field "spec.replica"`},
		{"missing manifest", Options{Manifest: in("nope.yaml"), Images: images}, "nope.yaml"},
		{"one image", Options{Manifest: in("podinfo.yaml"), Images: images[:1]}, "needs two images of container \"podinfod\" to alternate between, one per rollout, and got 1 (the manifest's image is ghcr.io/stefanprodan/podinfo:6.9.2)"},
		{"same image twice", Options{Manifest: in("podinfo.yaml"), Images: []string{"podinfo:t1", "docker.io/library/podinfo:t1"}}, "are one image"},
		{"image not in archive", Options{Manifest: in("podinfo.yaml"), Images: []string{"podinfo:t1", "podinfo:t3"}, Archives: []string{in("images.tar")}}, "--image podinfo:t3 (docker.io/library/podinfo:t3) is in none of the archives: " + in("images.tar") + " holds docker.io/library/podinfo:t1, docker.io/library/podinfo:t2"},
		{"bad archive", Options{Manifest: in("podinfo.yaml"), Images: images, Archives: []string{in("podinfo.yaml")}}, "--archive " + in("podinfo.yaml") + ": is not a tar archive"},
		{"bad port", Options{Manifest: in("podinfo.yaml"), Images: images, Port: 70000}, "--port 70000 is not a port"},
		// The prestop-sleep manifest is named after the Deployment: a name
		// that is a path would write it outside the scenario's directory.
		{"a Deployment name that is a path", Options{Manifest: in("path.yaml"), Images: images}, `metadata.name "../../x" is not a Kubernetes name`},
	}
	for _, tc := range tests {
		tc.o.Out = in("out/" + strings.ReplaceAll(tc.name, " ", "-") + ".yaml")
		_, err := Init(tc.o)
		if !isInput(err, tc.want) {
			t.Errorf("%s: Init = %v; want an InputError with a fix saying %q", tc.name, err, tc.want)
		}
		if _, serr := os.Stat(filepath.Dir(tc.o.Out)); serr == nil {
			t.Errorf("%s: bad input wrote into %s", tc.name, filepath.Dir(tc.o.Out))
		}
	}
	if m, _ := filepath.Glob(filepath.Join(filepath.Dir(dir), "x-*")); len(m) > 0 {
		t.Errorf("a Deployment name that is a path wrote %v", m)
	}
}
