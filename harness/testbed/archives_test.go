package testbed

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/droprun/droprun/harness/scenario"
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
func archiveScenario(t *testing.T, app string) string {
	t.Helper()
	dir := t.TempDir()
	refs := map[name.Reference]v1.Image{}
	for _, s := range []string{"svc:1", "svc:2"} {
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

func TestCheckArchives(t *testing.T) {
	tests := []struct {
		name, app string
		want      []string // in the one problem; none: valid
	}{
		{"in the archive", `{images: [svc:1, "docker.io/library/svc:2"], imageArchives: [svc.tar], container: app, port: 9898}`, nil},
		{"no archives", `{images: [elsewhere:1, elsewhere:2], container: app, port: 9898}`, nil},
		{"image not in it", `{images: [svc:1, svc:3], imageArchives: [svc.tar], container: app, port: 9898}`,
			[]string{"app.custom.images[1]", `svc:3 (docker.io/library/svc:3) is in none of the archives`, "svc.tar holds docker.io/library/svc:1, docker.io/library/svc:2"}},
		{"missing archive", `{images: [svc:1, svc:2], imageArchives: [svc.tar, gone.tar], container: app, port: 9898}`,
			[]string{"app.custom.imageArchives[1]", "gone.tar: does not exist", "fix: "}},
	}
	for _, tc := range tests {
		sc, err := scenario.Load(archiveScenario(t, tc.app))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		archives, errs := checkArchives(sc)
		if tc.want == nil {
			if len(errs) > 0 {
				t.Errorf("%s: %v", tc.name, errs)
			}
			continue
		}
		if len(errs) != 1 || archives != nil {
			t.Errorf("%s: %d problems %v, archives %v; want one problem and no archives", tc.name, len(errs), errs, archives)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(errs[0].String(), w) {
				t.Errorf("%s: %q does not say %q", tc.name, errs[0], w)
			}
		}
	}
}
