package scenario_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/droprun/droprun/harness/scenario"
	"github.com/droprun/droprun/harness/testbed/render"
	"github.com/droprun/droprun/harness/variant"
)

// loadText writes a scenario (and a custom app's manifest beside it as
// dep.yaml) to a temporary folder and loads it.
func loadText(t *testing.T, text string) (*scenario.Scenario, error) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "dep.yaml"), []byte(scenario.FsManifest), 0o644); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(p, []byte("apiVersion: droprun/v1alpha1\nkind: Scenario\nmetadata: {name: svc}\n"+text), 0o644); err != nil {
		t.Fatal(err)
	}
	return scenario.Load(p)
}

// renderedService renders variant 0 at v1 and returns its Service as
// `droprun render` prints it, read back as a Service; nil when droprun
// renders none.
func renderedService(t *testing.T, s *scenario.Scenario) *corev1.Service {
	t.Helper()
	objs, err := render.Render(s, 0, 0, true, "")
	if err != nil {
		t.Fatal(err)
	}
	if objs.Service == nil {
		return nil
	}
	y, err := render.YAML(objs.Service)
	if err != nil {
		t.Fatal(err)
	}
	var svc corev1.Service
	if err := yaml.UnmarshalStrict(y, &svc); err != nil {
		t.Fatal(err)
	}
	return &svc
}

// TestServiceType: droprun's web Service is NodePort unless the scenario
// asks for LoadBalancer, which keeps the node port kind's host ports reach.
func TestServiceType(t *testing.T) {
	for _, tc := range []struct{ app, want string }{
		{"", "NodePort"},
		{"app: {service: {type: LoadBalancer}}\n", "LoadBalancer"},
		{"app: {service: {type: LoadBalancer}, custom: {images: [m:1, m:2], container: app}}\nvariants: [{name: mine, manifest: dep.yaml}]\n", "LoadBalancer"},
	} {
		text := tc.app
		if !strings.Contains(text, "variants:") {
			text += "variants: [{variant: no-prestop}]\n"
		}
		s, err := loadText(t, text)
		if err != nil {
			t.Fatalf("%q: %v", tc.app, err)
		}
		if s.App.Service == nil || s.App.Service.Type != tc.want {
			t.Errorf("%q: defaulted app.service = %+v, want type %s", tc.app, s.App.Service, tc.want)
		}
		svc := renderedService(t, s)
		if svc == nil || string(svc.Spec.Type) != tc.want || svc.Spec.Ports[0].NodePort != variant.WebNodePort {
			t.Errorf("%q: rendered Service %+v, want type %s on node port %d", tc.app, svc, tc.want, variant.WebNodePort)
		}
	}
}

// TestCustomService: naming the user's own Service or Ingress means droprun
// renders no Service, and needs an existing cluster's URL to send to.
func TestCustomService(t *testing.T) {
	const custom = "app: {custom: {images: [m:1, m:2], container: app, service: shop}}\nvariants: [{name: mine, manifest: dep.yaml}]\n"
	s, err := loadText(t, custom+"cluster: {existing: {kubeconfig: /k, url: \"https://shop.example.com\"}}\n")
	if err != nil {
		t.Fatal(err)
	}
	if s.App.Service != nil {
		t.Errorf("app.service defaulted to %+v beside the user's own Service", s.App.Service)
	}
	if svc := renderedService(t, s); svc != nil {
		t.Errorf("rendered a Service %+v for app.custom.service", svc)
	}
	objs, _ := render.Render(s, 0, 0, true, "")
	if l := objs.List(); len(l) != 1 {
		t.Errorf("List() has %d objects, want the Deployment alone", len(l))
	}

	for _, tc := range []struct{ text, want string }{
		{custom, "app.custom.service: needs cluster.existing.url"},
		{custom + "cluster: {existing: {kubeconfig: /k}}\n", "app.custom.service: needs cluster.existing.url"},
		{strings.Replace(custom, "service: shop", "service: Shop_1", 1) + "cluster: {existing: {kubeconfig: /k, url: \"http://10.0.0.5\"}}\n", `app.custom.service: "Shop_1" is not a Service or Ingress name`},
		{strings.Replace(custom, "app: {", "app: {service: {type: NodePort}, ", 1) + "cluster: {existing: {kubeconfig: /k, url: \"http://10.0.0.5\"}}\n", "app.service: is set but app.custom.service names your own Service or Ingress"},
		{custom + "cluster: {existing: {kubeconfig: /k, url: \"http://10.0.0.5\"}}\ntraffic: {target: gateway}\n", "traffic.target: is gateway but app.custom.service brings your own Service"},
		{"app: {service: {type: ClusterIP}}\nvariants: [{variant: no-prestop}]\n", `app.service.type: "ClusterIP" is not a Service type droprun creates (fix: use NodePort (the default) or LoadBalancer)`},
		{"app: {service: {tpye: LoadBalancer}}\nvariants: [{variant: no-prestop}]\n", "app.service.tpye: unknown field"},
	} {
		if _, err := loadText(t, tc.text); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err = %v, want %q", tc.text, err, tc.want)
		}
	}
}
