package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestScenariosNameForms: `droprun scenarios` accepts the names every other
// command accepts for a shipped scenario (NAME, NAME.yaml,
// scenarios/NAME.yaml), and README prints the embedded format.
func TestScenariosNameForms(t *testing.T) {
	want, err := os.ReadFile("../../scenarios/demo.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, arg := range []string{"demo", "demo.yaml", "scenarios/demo.yaml"} {
		out, errOut, code := runCLI(t, "scenarios", arg)
		if code != 0 || out != string(want) {
			t.Errorf("droprun scenarios %s: exit %d, stdout is not scenarios/demo.yaml (stderr %q):\n%s", arg, code, errOut, out)
		}
	}
	readme, err := os.ReadFile("../../scenarios/README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, arg := range []string{"README", "README.md"} {
		out, errOut, code := runCLI(t, "scenarios", arg)
		if code != 0 || out != string(readme) {
			t.Errorf("droprun scenarios %s: exit %d, stdout is not scenarios/README.md (stderr %q)", arg, code, errOut)
		}
	}
}

// TestScenariosExport: --export writes a shipped scenario with the
// manifests it names, the copy validates from disk, and a second export
// into the same directory overwrites nothing.
func TestScenariosExport(t *testing.T) {
	files := []string{"custom-app.yaml", "examples/my-service-v1-shutdown.yaml"}
	want := map[string]string{}
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join("../../scenarios", f))
		if err != nil {
			t.Fatal(err)
		}
		want[f] = string(b)
	}
	t.Chdir(t.TempDir())
	out, errOut, code := runCLI(t, "scenarios", "custom-app", "--export", "mine")
	if code != 0 {
		t.Fatalf("--export: exit %d\n%s%s", code, out, errOut)
	}
	for _, f := range files {
		got, err := os.ReadFile(filepath.Join("mine", f))
		if err != nil {
			t.Errorf("--export did not write %s: %v", f, err)
			continue
		}
		if string(got) != want[f] {
			t.Errorf("mine/%s differs from scenarios/%s", f, f)
		}
		if !strings.Contains(out, filepath.Join("mine", f)+"\n") {
			t.Errorf("--export output does not list %s:\n%s", f, out)
		}
	}
	out, errOut, code = runCLI(t, "validate", "mine/custom-app.yaml")
	if code != 0 || !strings.Contains(out, "ok  mine/custom-app.yaml") {
		t.Errorf("validate the exported copy: exit %d\n%s%s", code, out, errOut)
	}
	_, errOut, code = runCLI(t, "scenarios", "custom-app", "--export", "mine")
	if code != 2 || !strings.Contains(errOut, filepath.Join("mine", "custom-app.yaml")+" exists; droprun overwrites nothing") {
		t.Errorf("a second --export: exit %d, want 2 naming the existing file:\n%s", code, errOut)
	}
}

// TestScenariosExportFollowsNoLink: a symlink planted under the export
// directory, pointing out of it, is not written through: the export fails
// and nothing lands where the link points.
func TestScenariosExportFollowsNoLink(t *testing.T) {
	t.Chdir(t.TempDir())
	if err := os.MkdirAll("mine", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir("elsewhere", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../elsewhere", filepath.Join("mine", "examples")); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := runCLI(t, "scenarios", "custom-app", "--export", "mine")
	if code == 0 {
		t.Errorf("--export through a planted link: exit 0, want a failure")
	}
	if !strings.Contains(errOut, "follows no link out of the directory") && !strings.Contains(errOut, "escapes") {
		t.Errorf("--export through a planted link: stderr does not say why:\n%s", errOut)
	}
	if got, _ := os.ReadDir("elsewhere"); len(got) != 0 {
		t.Errorf("--export wrote %d file(s) through the link into elsewhere/", len(got))
	}
}
