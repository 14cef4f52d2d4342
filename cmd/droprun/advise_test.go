package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/droprun/droprun/harness/analysis/analysistest"
)

// TestAdvise: usage errors and bad directories exit 2 with a message that
// names the problem; a run without route data is undecided (exit 3).
func TestAdvise(t *testing.T) {
	run := analysistest.Write(t, analysistest.Run{RunJSON: syntheticRunJSON})
	missing := filepath.Join(t.TempDir(), "missing")
	tests := []struct {
		name     string
		args     []string
		code     int
		out, err string
	}{
		{name: "no args", args: []string{"advise"}, code: 2, err: "advise: requires at least 1 arg(s), only received 0\nusage: droprun advise RUN_DIR... [flags]"},
		{name: "missing dir", args: []string{"advise", missing}, code: 2, err: "droprun: run directory: stat " + missing + ": no such file or directory"},
		{name: "not a run", args: []string{"advise", t.TempDir()}, code: 2, err: "is not a droprun run directory"},
		{name: "one good, one missing", args: []string{"advise", run, missing}, code: 2, err: missing},
		{name: "quantile out of range", args: []string{"advise", "--quantile", "1", run}, code: 2, err: "--quantile 1: must be between 0 and 1"},
		{name: "confidence out of range", args: []string{"advise", "--confidence", "0", run}, code: 2, err: "--confidence 0: must be between 0 and 1"},
		{name: "no route data", args: []string{"advise", run}, code: 3, out: "undecided: no (pod, node) route data in " + run + ": run the scenario again"},
		{name: "no route data, json", args: []string{"advise", "--json", run}, code: 3, out: `"verdict":"undecided"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, errs, code := runCLI(t, tc.args...)
			if code != tc.code {
				t.Errorf("droprun %s: exit %d, want %d\nstdout: %s\nstderr: %s", strings.Join(tc.args, " "), code, tc.code, out, errs)
			}
			if !strings.Contains(out, tc.out) {
				t.Errorf("stdout %q lacks %q", out, tc.out)
			}
			if !strings.Contains(errs, tc.err) {
				t.Errorf("stderr %q lacks %q", errs, tc.err)
			}
		})
	}
}
