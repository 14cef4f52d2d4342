package scenario

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCustomVariantsOneDeployment: every custom variant's manifest must
// name the same Deployment, since droprun rolls that one from variant to
// variant and waits only for its old pods.
func TestCustomVariantsOneDeployment(t *testing.T) {
	other := strings.Replace(archiveDeployment, "{name: svc}", "{name: svc-v2}", 1)
	for _, tc := range []struct {
		name, second, want string // want "": valid
	}{
		{"same name", archiveDeployment, ""},
		{"another name", other, `variants[1].manifest: DIR/b.yaml names Deployment "svc-v2", but variants[0] (DIR/a.yaml) names "svc"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			files := map[string]string{
				"a.yaml": archiveDeployment,
				"b.yaml": tc.second,
				"s.yaml": "apiVersion: droprun/v1alpha1\nkind: Scenario\nmetadata: {name: custom}\n" +
					"app: {custom: {images: [svc:1, svc:2], container: app, port: 9898}}\n" +
					"variants:\n  - {name: one, manifest: a.yaml}\n  - {name: two, manifest: b.yaml}\n",
			}
			for n, body := range files {
				if err := os.WriteFile(filepath.Join(dir, n), []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			_, err := Load(filepath.Join(dir, "s.yaml"))
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Load: %v", err)
				}
				return
			}
			want := strings.ReplaceAll(tc.want, "DIR/", dir+string(filepath.Separator))
			if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "same metadata.name") {
				t.Errorf("Load = %v; want %s, and the fix to give them the same metadata.name", err, want)
			}
		})
	}
}
