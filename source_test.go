package droprun

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestSourceMatchesTree: the embedded source is the tree's non-test Go
// files of each embedded package, plus go.mod and go.sum, byte for byte.
func TestSourceMatchesTree(t *testing.T) {
	want := []string{"go.mod", "go.sum"}
	for _, dir := range []string{"apps/bookshop", "apps/bookshop/sleep", "apps/cni", "apps/closeprobe", "apps/generator", "harness/generators", "harness/schedlat", "harness/traffic"} {
		files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
		for _, f := range files {
			if !strings.HasSuffix(f, "_test.go") {
				want = append(want, filepath.ToSlash(f))
			}
		}
	}
	var got []string
	err := fs.WalkDir(Source(), ".", func(p string, d fs.DirEntry, err error) error {
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
