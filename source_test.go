package droprun

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestSourceMatchesTree: the embedded source is the tree's non-test Go
// files of every package of this module the in-cluster main packages
// build from (as `go list -deps` finds them, so a new import fails here,
// not in an image build), plus go.mod and go.sum, byte for byte.
func TestSourceMatchesTree(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}",
		"./apps/bookshop", "./apps/bookshop/sleep", "./apps/cni", "./apps/closeprobe", "./apps/generator").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	want := []string{"go.mod", "go.sum"}
	const module = "github.com/droprun/droprun/"
	for _, pkg := range strings.Fields(string(out)) {
		dir, ok := strings.CutPrefix(pkg, module)
		if !ok {
			continue
		}
		files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
		for _, f := range files {
			if !strings.HasSuffix(f, "_test.go") {
				want = append(want, filepath.ToSlash(f))
			}
		}
	}
	var got []string
	err = fs.WalkDir(Source(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		got = append(got, p)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("embedded source\n %v\nwant\n %v", got, want)
	}
	for _, p := range got {
		disk, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		emb, err := fs.ReadFile(Source(), p)
		if err != nil || !bytes.Equal(disk, emb) {
			t.Errorf("%s: embedded copy differs from the tree (%v)", p, err)
		}
	}
	if _, err := Source().Open("apps/bookshop/tally_test.go"); err == nil {
		t.Error("a test file opens in Source")
	}
}

func TestScenarios(t *testing.T) {
	for _, p := range []string{"demo.yaml", "compare-all.yaml", "README.md", "examples/my-service-v1-shutdown.yaml"} {
		if _, err := fs.Stat(Scenarios(), p); err != nil {
			t.Errorf("shipped scenarios lack %s: %v", p, err)
		}
	}
	// The same files, by name: filepath.Glob and fs.Glob both sort.
	disk, err := filepath.Glob("scenarios/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range disk {
		disk[i] = filepath.Base(p)
	}
	emb, err := fs.Glob(Scenarios(), "*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(disk) == 0 || !slices.Equal(disk, emb) {
		t.Errorf("scenarios on disk %v, embedded %v", disk, emb)
	}
}

// TestSecurityDocNamesRealTests: every test docs/security.md names as
// holding a line exists (a func of that name in a _test.go file), so a
// renamed or deleted test cannot leave a line unheld in silence.
func TestSecurityDocNamesRealTests(t *testing.T) {
	doc, err := os.ReadFile("docs/security.md")
	if err != nil {
		t.Fatal(err)
	}
	named := regexp.MustCompile("`((?:Test|Fuzz)[A-Za-z0-9_]+)`").FindAllStringSubmatch(string(doc), -1)
	if len(named) < 10 {
		t.Fatalf("docs/security.md names %d tests; want every line held by one", len(named))
	}
	defined := map[string]bool{}
	err = filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, "_test.go") {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, m := range regexp.MustCompile(`(?m)^func ((?:Test|Fuzz)[A-Za-z0-9_]+)\(`).FindAllSubmatch(b, -1) {
			defined[string(m[1])] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range named {
		if !defined[m[1]] {
			t.Errorf("docs/security.md names %s, which no test file defines", m[1])
		}
	}
}
