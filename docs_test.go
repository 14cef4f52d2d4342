package droprun

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// goPackages returns every folder under harness/, apps/ and internal/ that
// holds a non-test Go file, slash-separated.
func goPackages(t *testing.T) []string {
	t.Helper()
	seen := map[string]bool{}
	var pkgs []string
	for _, root := range []string{"harness", "apps", "internal"} {
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && d.Name() == "testdata" {
				return filepath.SkipDir
			}
			dir := filepath.ToSlash(filepath.Dir(p))
			if !d.IsDir() && strings.HasSuffix(p, ".go") && !strings.HasSuffix(p, "_test.go") && !seen[dir] {
				seen[dir] = true
				pkgs = append(pkgs, dir)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return pkgs
}

// readmeLayout returns the names the README's layout block gives each
// folder: a line names its first path ("harness/run") and, after a comma,
// more folders beside it ("harness/timeline, appmetrics, frontlog"); a
// ".../name" in its text names a folder inside the first one.
func readmeLayout(t *testing.T) map[string]bool {
	t.Helper()
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "## Layout")
	block := strings.SplitN(rest, "```", 3)
	if !ok || len(block) < 3 {
		t.Fatal("README.md has no layout block under ## Layout")
	}
	named := map[string]bool{}
	inner := regexp.MustCompile(`\.\.\./([a-z]+)`)
	for _, line := range strings.Split(block[1], "\n") {
		names, text, _ := strings.Cut(line, "  ")
		parts := strings.Split(names, ",")
		first := strings.TrimSuffix(strings.TrimSpace(parts[0]), "/")
		named[first] = true
		parent := first[:strings.LastIndex(first, "/")+1]
		for _, p := range parts[1:] {
			named[parent+strings.TrimSuffix(strings.TrimSpace(p), "/")] = true
		}
		for _, m := range inner.FindAllStringSubmatch(text, -1) {
			named[first+"/"+m[1]] = true
		}
	}
	return named
}

// TestLayoutNamesEveryPackage: every package under harness/, apps/ and
// internal/ is in the README's layout and named in ARCHITECTURE.md, so a
// newcomer finds each in both.
func TestLayoutNamesEveryPackage(t *testing.T) {
	arch, err := os.ReadFile("ARCHITECTURE.md")
	if err != nil {
		t.Fatal(err)
	}
	layout := readmeLayout(t)
	pkgs := goPackages(t)
	if len(pkgs) < 30 {
		t.Fatalf("found %d packages; the walk is wrong", len(pkgs))
	}
	for _, p := range pkgs {
		if !layout[p] {
			t.Errorf("%s is missing from the README's layout", p)
		}
		if !regexp.MustCompile(regexp.QuoteMeta(p) + `\b`).Match(arch) {
			t.Errorf("%s is not named in ARCHITECTURE.md", p)
		}
	}
}
