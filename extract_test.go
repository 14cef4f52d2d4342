package droprun

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
)

// TestExtractSource: every file lands at its path with its content, and a
// source without go.mod is refused before anything is written.
func TestExtractSource(t *testing.T) {
	src := fstest.MapFS{
		"go.mod":          {Data: []byte("module example.com/m\n")},
		"app/main.go":     {Data: []byte("package main\n")},
		"app/sub/deep.go": {Data: []byte("package sub\n")},
	}
	dir := filepath.Join(t.TempDir(), "src")
	if err := ExtractSource(src, dir); err != nil {
		t.Fatal(err)
	}
	for name, f := range src {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || !bytes.Equal(b, f.Data) {
			t.Errorf("%s: %q, %v; want %q", name, b, err, f.Data)
		}
	}
	bad := filepath.Join(t.TempDir(), "x")
	if err := ExtractSource(fstest.MapFS{"main.go": {}}, bad); err == nil || !strings.Contains(err.Error(), "no go.mod") {
		t.Errorf("a source without go.mod: %v, want a no go.mod error", err)
	}
	if _, err := os.Stat(bad); !os.IsNotExist(err) {
		t.Errorf("a refused source still created %s (%v)", bad, err)
	}
}

// TestExtractSourceEmbedded: the embedded source extracts with the
// bookshop and the CNI daemon in it, the packages droprun builds.
func TestExtractSourceEmbedded(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "src")
	if err := ExtractSource(Source(), dir); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"go.mod", "go.sum", "apps/bookshop/main.go", "apps/cni/main.go"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("extracted source lacks %s: %v", f, err)
		}
	}
}

// TestSourceBuildEnv: with SourceBuildEnv, go loads an extracted source
// although the caller's environment asks for a vendor directory and a
// go.work above it names another module.
func TestSourceBuildEnv(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	parent := t.TempDir()
	if err := os.WriteFile(filepath.Join(parent, "go.work"), []byte("go 1.26\n\nuse ./elsewhere\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(parent, "src")
	if err := ExtractSource(Source(), dir); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOFLAGS", "-mod=vendor")
	cmd := exec.Command("go", "list", "./apps/cni")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), SourceBuildEnv()...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go list in the extracted source: %v\n%s", err, out)
	}
	if got := strings.TrimSpace(string(out)); got != "github.com/droprun/droprun/apps/cni" {
		t.Errorf("go list = %q, want github.com/droprun/droprun/apps/cni", got)
	}
}
