package scenario

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

const archiveDeployment = `apiVersion: apps/v1
kind: Deployment
metadata: {name: svc}
spec:
  selector: {matchLabels: {app: svc}}
  template:
    metadata: {labels: {app: svc}}
    spec:
      containers:
        - {name: app, image: svc:1, ports: [{containerPort: 9898}]}
        - {name: sidecar, image: proxy:1}
`

// archiveScenario writes a custom-app scenario, its Deployment and a
// docker-save archive holding svc:1 and svc:2 into a folder and returns
// the scenario's path. app is the app.custom mapping.
func archiveScenario(t *testing.T, app string, extraTags ...string) string {
	t.Helper()
	dir := t.TempDir()
	refs := map[name.Reference]v1.Image{}
	for _, s := range append([]string{"svc:1", "svc:2"}, extraTags...) {
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
	if err := tarball.MultiRefWriteToFile(filepath.Join(dir, "svc.tar"), refs); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"deploy.yaml": archiveDeployment,
		"s.yaml":      "apiVersion: droprun/v1alpha1\nkind: Scenario\nmetadata: {name: custom}\napp: {custom: " + app + "}\nvariants:\n  - {name: mine, manifest: deploy.yaml}\n",
	}
	for n, body := range files {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "s.yaml")
}

func TestCustomContainerChecked(t *testing.T) {
	tests := []struct {
		name, app, want string
	}{
		{"wrong container", `{images: [svc:1, svc:2], container: web, port: 9898}`, `deploy.yaml has no container named "web"; its containers: "app", "sidecar"`},
		{"wrong port", `{images: [svc:1, svc:2], container: app}`, `declares container "app" with port(s) 9898, not app.custom.port 8080`},
	}
	for _, tc := range tests {
		_, err := Load(archiveScenario(t, tc.app))
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "variants[0].manifest") {
			t.Errorf("%s: Load = %v; want variants[0].manifest: ... %s", tc.name, err, tc.want)
		}
	}
	// A sidecar without ports is fine as the container named.
	if _, err := Load(archiveScenario(t, `{images: [svc:1, svc:2], container: sidecar}`)); err != nil {
		t.Errorf("container without ports: %v", err)
	}
}

func TestDeploymentAlone(t *testing.T) {
	p := filepath.Join(t.TempDir(), "d.yaml")
	if err := os.WriteFile(p, []byte(archiveDeployment+"---\napiVersion: v1\nkind: Service\nmetadata: {name: svc}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadDeployment(p); err == nil || !strings.Contains(err.Error(), "holds more than one YAML document") {
		t.Errorf("ReadDeployment of a Deployment and a Service = %v; want more than one document", err)
	}
}
