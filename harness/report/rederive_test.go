package report

import (
	"bytes"
	"encoding/json"
	"flag"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/droprun/droprun/harness/advise"
	"github.com/droprun/droprun/harness/analysis"
	"github.com/droprun/droprun/harness/analysis/analysistest"
	"github.com/droprun/droprun/harness/runfile"
)

var updateExamples = flag.Bool("update-examples", false, "write each shipped example's summary.json, report.md and advise.txt from its raw data")

// examplesDir holds the shipped example runs.
const examplesDir = "../../results/examples"

// exampleBudget is the most one shipped example run may take in the
// repository, raw data packed: the largest, compare-all from three
// generator pods (8 rows, 3 rollouts each at 1000 req/s, about 470,000
// requests), takes 11.1 MiB; a run of the demo's size (500 req/s, two
// rows) about 2.
const exampleBudget = 12 << 20

// TestShippedExamplesRecorded: every shipped example names in its
// run.json the droprun that recorded it, a commit with no local change
// (make build and the integration tests stamp it: git describe, a bare
// commit or TAG-N-gCOMMIT), never "dev", empty or "-dirty"; where git can
// tell (a clone with its history), the commit is in it.
func TestShippedExamplesRecorded(t *testing.T) {
	commit := regexp.MustCompile(`^(?:v\S*-[0-9]+-g)?([0-9a-f]{7,40})$`)
	// With the repository's whole history the commit must be in it; a
	// shallow clone, or none, cannot tell.
	out, err := exec.Command("git", "rev-parse", "--is-shallow-repository").Output()
	history := err == nil && strings.TrimSpace(string(out)) == "false"
	n := 0
	err = filepath.WalkDir(examplesDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != runfile.RunFile {
			return err
		}
		n++
		info, err := analysis.ReadRunInfo(filepath.Dir(p))
		if err != nil {
			return err
		}
		v := info.Cluster.DroprunVer
		m := commit.FindStringSubmatch(v)
		switch {
		case m == nil:
			t.Errorf("%s: recorded by droprun %q; want a commit with no local change", p, v)
		case history && exec.Command("git", "cat-file", "-e", m[1]+"^{commit}").Run() != nil:
			t.Errorf("%s: recorded by droprun %s, which is not a commit of this repository", p, v)
		}
		return nil
	})
	if err != nil || n == 0 {
		t.Fatalf("%d run.json files read: %v", n, err)
	}
}

// TestShippedExamplesRederive re-analyses every shipped example that
// holds its raw data (plain or packed) and compares the result with the
// summary.json it ships, and its report.md and advise.txt where it has
// them (and holds it within exampleBudget): a change
// in the analysis that moves a shipped number fails here. Regenerate
// them, and review the diff, with
//
//	go test ./harness/report -run TestShippedExamplesRederive -update-examples
//
// Every example ships its raw data: one without fails here.
func TestShippedExamplesRederive(t *testing.T) {
	var raw, summaryOnly []string
	err := filepath.WalkDir(examplesDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != runfile.SummaryFile {
			return err
		}
		dir := filepath.Dir(p)
		name, _ := filepath.Rel(examplesDir, dir)
		if runfile.Exists(dir, runfile.EventsFile) {
			raw = append(raw, name)
		} else {
			summaryOnly = append(summaryOnly, name)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(summaryOnly) > 0 {
		t.Errorf("examples without raw data %v: every shipped example holds its raw data (droprun pack DIR), so that its numbers can be derived again", summaryOnly)
	}
	if len(raw) == 0 {
		t.Fatal("no shipped example holds its raw data")
	}
	for _, name := range raw {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(examplesDir, name)
			if size := dirSize(t, dir); size > exampleBudget {
				t.Errorf("%s takes %.1f MiB, over the %d MiB an example may take: pack it (droprun pack) or measure fewer requests", dir, float64(size)/(1<<20), exampleBudget>>20)
			}
			a, err := analysis.Analyze(dir, analysis.Options{})
			if err != nil {
				t.Fatal(err)
			}
			got, err := json.MarshalIndent(a.Summary, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			var md bytes.Buffer
			if err := Markdown(&md, a.Summary); err != nil {
				t.Fatal(err)
			}
			files := map[string][]byte{runfile.SummaryFile: got}
			if runfile.Exists(dir, "report.md") {
				files["report.md"] = md.Bytes()
			}
			if runfile.Exists(dir, "advise.txt") {
				// As `droprun advise results/examples/NAME` prints it
				// from the repository's root.
				adv, err := advise.Advise([]advise.Run{{Dir: path.Join("results/examples", filepath.ToSlash(name)), Summary: a.Summary}}, advise.Options{})
				if err != nil {
					t.Fatal(err)
				}
				var b bytes.Buffer
				if err := adv.WriteText(&b); err != nil {
					t.Fatal(err)
				}
				files["advise.txt"] = b.Bytes()
			}
			for file, want := range files {
				p := filepath.Join(dir, file)
				if *updateExamples {
					if err := os.WriteFile(p, want, 0o644); err != nil {
						t.Fatal(err)
					}
					continue
				}
				shipped, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(shipped, want) {
					t.Errorf("%s re-derived from its raw data differs from the one shipped (first difference at line %d): a change moved a shipped number; if it is meant, regenerate with -update-examples and review the diff",
						p, firstDiffLine(shipped, want))
				}
			}
		})
	}
}

// firstDiffLine is the 1-based line where a and b first differ.
func firstDiffLine(a, b []byte) int {
	al, bl := bytes.Split(a, []byte("\n")), bytes.Split(b, []byte("\n"))
	for i := range min(len(al), len(bl)) {
		if !bytes.Equal(al[i], bl[i]) {
			return i + 1
		}
	}
	return min(len(al), len(bl)) + 1
}

// TestPackedRunReadsTheSame: a run's summary is the same analysed from its
// raw files and from their packed forms (droprun pack).
func TestPackedRunReadsTheSame(t *testing.T) {
	dir := analysistest.Write(t, analysistest.Run{})
	plain, err := analysis.Analyze(dir, analysis.Options{})
	if err != nil {
		t.Fatal(err)
	}
	names, err := runfile.RawFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(names, runfile.EventsFile) || !slices.ContainsFunc(names, func(n string) bool { return filepath.Ext(n) == ".bin" }) {
		t.Fatalf("raw files %v: want events and results among them", names)
	}
	if _, _, err := runfile.Pack(dir, names); err != nil {
		t.Fatal(err)
	}
	if left, err := runfile.RawFiles(dir); err != nil || len(left) != 0 {
		t.Fatalf("raw files left unpacked: %v, %v", left, err)
	}
	packed, err := analysis.Analyze(dir, analysis.Options{})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(plain.Summary)
	b, _ := json.Marshal(packed.Summary)
	if !bytes.Equal(a, b) || plain.Summary.Variants[0].Requests == 0 {
		t.Errorf("the summary of the packed run differs from the plain run's, or is empty:\n%s\n%s", a, b)
	}
}

// dirSize is the bytes of every file under dir.
func dirSize(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		n += fi.Size()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}
