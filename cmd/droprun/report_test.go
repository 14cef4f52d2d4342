package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/droprun/droprun/harness/analysis/analysistest"
)

// TestReportRefusesLinkedFolder: a `report` folder planted in a run
// directory as a link is never written through: the command fails, says
// why, and the folder the link points at stays empty.
func TestReportRefusesLinkedFolder(t *testing.T) {
	run := analysistest.Write(t, analysistest.Run{RunJSON: syntheticRunJSON})
	elsewhere := t.TempDir()
	if err := os.Symlink(elsewhere, filepath.Join(run, "report")); err != nil {
		t.Fatal(err)
	}
	_, errs, code := runCLI(t, "report", run)
	if code != 1 || !strings.Contains(errs, filepath.Join(run, "report")+" is a link") {
		t.Errorf("report through a planted link: exit %d, stderr %q; want 1 and the link named", code, errs)
	}
	if left, _ := os.ReadDir(elsewhere); len(left) > 0 {
		t.Errorf("report wrote %d entries through the link", len(left))
	}
	if _, errs, code := runCLI(t, "report", "--out", filepath.Join(t.TempDir(), "r"), run); code != 0 {
		t.Errorf("report --out a fresh folder: exit %d: %s", code, errs)
	}
}
