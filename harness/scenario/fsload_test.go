package scenario

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/droprun/droprun"
)

const fsManifest = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: m}\nspec:\n  selector: {matchLabels: {app: m}}\n  template:\n    metadata: {labels: {app: m}}\n    spec: {containers: [{name: app, image: m:1}]}\n"

// customScenario is a custom-app scenario naming manifest and archive.
func customScenario(manifest, archive string) string {
	return "apiVersion: droprun/v1alpha1\nkind: Scenario\nmetadata: {name: fs}\n" +
		"app: {custom: {images: [m:1, m:2], container: app, imageArchives: [" + archive + "]}}\n" +
		"variants: [{name: mine, manifest: " + manifest + "}]\n"
}

// TestLoadFS: a scenario in an fs.FS reads its manifest from the FS,
// relative to its own folder (render_test.go renders it from there), while an
// image archive stays a path on disk relative to the working directory.
func TestLoadFS(t *testing.T) {
	fsys := fstest.MapFS{
		"sub/s.yaml":       {Data: []byte(customScenario("m/dep.yaml", "images.tar"))},
		"sub/m/dep.yaml":   {Data: []byte(fsManifest)},
		"elsewhere/x.yaml": {Data: []byte("not read")},
	}
	// A working directory without the manifest: nothing may come from disk.
	t.Chdir(t.TempDir())
	s, err := LoadFS(fsys, "sub/s.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Variants[0].Manifest; got != "sub/m/dep.yaml" {
		t.Errorf("manifest = %q, want sub/m/dep.yaml", got)
	}
	if got := s.App.Custom.ImageArchives[0]; got != "images.tar" {
		t.Errorf("imageArchives[0] = %q, want images.tar (relative to the working directory)", got)
	}
}

func TestLoadFSProblems(t *testing.T) {
	tests := []struct {
		name, manifest, want string
	}{
		{"missing manifest", "nope.yaml", "variants[0].manifest: open sub/nope.yaml: file does not exist"},
		{"above the root", "../../x.yaml", `variants[0].manifest: "../../x.yaml" is outside the files the scenario was read from`},
		{"absolute", "/etc/x.yaml", `"/etc/x.yaml" is outside the files`},
		{"home", "~/x.yaml", `"~/x.yaml" is outside the files`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fsys := fstest.MapFS{"sub/s.yaml": {Data: []byte(customScenario(tt.manifest, "a.tar"))}}
			_, err := LoadFS(fsys, "sub/s.yaml")
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "sub/s.yaml: ") {
				t.Errorf("LoadFS error = %v, want one naming sub/s.yaml and containing %q", err, tt.want)
			}
		})
	}
	if _, err := LoadFS(fstest.MapFS{}, "missing.yaml"); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("a missing scenario: %v", err)
	}
	if _, err := LoadFS(fstest.MapFS{}, "../up.yaml"); err == nil || !strings.Contains(err.Error(), "not a valid path") {
		t.Errorf("an invalid name: %v", err)
	}
}

// TestShippedScenariosFromEmbed: every scenario embedded in droprun loads
// from the embedded FS, custom-app's example manifest included, whatever
// the working directory.
func TestShippedScenariosFromEmbed(t *testing.T) {
	t.Chdir(t.TempDir())
	names, err := fs.Glob(droprun.Scenarios(), "*.yaml")
	if err != nil || len(names) < 7 {
		t.Fatalf("embedded scenarios %v (%v), want at least 7", names, err)
	}
	for _, n := range names {
		if _, err := LoadFS(droprun.Scenarios(), n); err != nil {
			t.Errorf("%v", err)
		}
	}
}

// TestLoadPathsRelativeToFile: on disk, a scenario's files resolve against
// its folder, not the working directory; output stays relative to the
// working directory.
func TestLoadPathsRelativeToFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "dep.yaml"), []byte(fsManifest), 0o644); err != nil {
		t.Fatal(err)
	}
	body := customScenario("dep.yaml", "images.tar") + "output: out\n"
	if err := os.WriteFile(filepath.Join(dir, "s.yaml"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	kube := "apiVersion: droprun/v1alpha1\nkind: Scenario\nmetadata: {name: k}\ncluster: {existing: {kubeconfig: kube/config}}\nvariants: [{variant: no-prestop}]\n"
	if err := os.WriteFile(filepath.Join(dir, "k.yaml"), []byte(kube), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	s, err := Load(filepath.Join(dir, "s.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := s.Variants[0].Manifest, filepath.Join(dir, "dep.yaml"); got != want {
		t.Errorf("manifest = %s, want %s", got, want)
	}
	if got, want := s.App.Custom.ImageArchives[0], filepath.Join(dir, "images.tar"); got != want {
		t.Errorf("imageArchives[0] = %s, want %s", got, want)
	}
	if s.Output != "out" {
		t.Errorf("output = %s, want out (relative to the working directory)", s.Output)
	}
	k, err := Load(filepath.Join(dir, "k.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := k.Cluster.Existing.Kubeconfig, filepath.Join(dir, "kube/config"); got != want {
		t.Errorf("kubeconfig = %s, want %s", got, want)
	}
}
