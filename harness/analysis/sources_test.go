package analysis_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/droprun/droprun/harness/analysis"
	"github.com/droprun/droprun/harness/analysis/analysistest"
	"github.com/droprun/droprun/harness/runfile"
	"github.com/droprun/droprun/harness/traffic"
)

// TestEveryResultsFile: a variant's requests are those of every results
// file its load sources wrote (results-VARIANT.bin from the host,
// results-VARIANT+ORIGIN.bin from another source), each failure with its
// origin; a file of another variant whose name merely starts alike is not
// one of them.
func TestEveryResultsFile(t *testing.T) {
	one := analyze(t, analysistest.Write(t, analysistest.Run{RunJSON: runJSON}), analysis.Options{})
	var origins = map[string]int{}
	dir := analysistest.Write(t, analysistest.Run{RunJSON: runJSON, Extra: func(dir string) {
		host := filepath.Join(dir, runfile.ResultsFile("alpha"))
		b, err := os.ReadFile(host)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{runfile.ResultsFileOf("alpha", "pod-0"), "results-alphabet.bin", "results-alpha+.bin"} {
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}})
	two := analyze(t, dir, analysis.Options{Failure: func(f analysis.Failure) error {
		if f.Variant == "alpha" {
			origins[f.Origin]++
		}
		return nil
	}})
	a1, a2 := rows(one)["alpha"], rows(two)["alpha"]
	if a2.WindowRequests != 2*a1.WindowRequests || a2.Drops != 2*a1.Drops || a2.Drops == 0 {
		t.Errorf("alpha from two sources: %d drops in %d requests, want twice one source's %d in %d",
			a2.Drops, a2.WindowRequests, a1.Drops, a1.WindowRequests)
	}
	if origins[traffic.HostOrigin] == 0 || origins[traffic.HostOrigin] != origins["pod-0"] || len(origins) != 2 {
		t.Errorf("failures by origin %v, want as many from %s as from pod-0 and no others", origins, traffic.HostOrigin)
	}
	if b1, b2 := rows(one)["beta"], rows(two)["beta"]; b1.WindowRequests != b2.WindowRequests {
		t.Errorf("beta: %d requests, want %d (no other file is beta's)", b2.WindowRequests, b1.WindowRequests)
	}
}
