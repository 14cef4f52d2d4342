package scenario_test

import (
	"strings"
	"testing"

	"github.com/droprun/droprun/harness/scenario"
	"github.com/droprun/droprun/harness/testbed"
)

// TestCheckArchives: a custom app's archives are read whole and must hold
// its images; each problem names its field (testbed.Check, through
// image.CheckArchives).
func TestCheckArchives(t *testing.T) {
	tests := []struct {
		name, app string
		want      []string // in the one problem; none: valid
		extraTags []string // in svc.tar beside svc:1 and svc:2
	}{
		{"in the archive", `{images: [svc:1, "docker.io/library/svc:2"], imageArchives: [svc.tar], container: app, port: 9898}`, nil, nil},
		{"no archives", `{images: [elsewhere:1, elsewhere:2], container: app, port: 9898}`, nil, nil},
		{"image not in it", `{images: [svc:1, svc:3], imageArchives: [svc.tar], container: app, port: 9898}`,
			[]string{"app.custom.images[1]", `svc:3 (docker.io/library/svc:3) is in none of the archives`, "svc.tar holds docker.io/library/svc:1, docker.io/library/svc:2"}, nil},
		{"missing archive", `{images: [svc:1, svc:2], imageArchives: [svc.tar, gone.tar], container: app, port: 9898}`,
			[]string{"app.custom.imageArchives[1]", "gone.tar: does not exist", "fix: "}, nil},
		// Loaded whole into every node, an extra name could replace a
		// node's own image.
		{"an image beyond the app's", `{images: [svc:1, svc:2], imageArchives: [svc.tar], container: app, port: 9898}`,
			[]string{"app.custom.imageArchives[0]", "holds images app.custom.images does not name: registry.k8s.io/kube-proxy:v1.37.2", "could replace one of the node's own images"},
			[]string{"registry.k8s.io/kube-proxy:v1.37.2"}},
	}
	for _, tc := range tests {
		sc, err := scenario.Load(scenario.ArchiveScenario(t, tc.app, tc.extraTags...))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		in, err := testbed.Check(sc, nil)
		if tc.want == nil {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		se, ok := scenario.AsErrors(err)
		if !ok || len(se.List) != 1 || in != nil {
			t.Errorf("%s: %v, %v; want one problem and nothing checked", tc.name, err, in)
			continue
		}
		errs := se.List
		for _, w := range tc.want {
			if !strings.Contains(errs[0].String(), w) {
				t.Errorf("%s: %q does not say %q", tc.name, errs[0], w)
			}
		}
	}
}
