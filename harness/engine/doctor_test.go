package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/droprun/droprun/harness/rig"
)

func writeTestFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestCPUWeightCheck(t *testing.T) {
	root := t.TempDir()
	shares := filepath.Join(root, "cpu", "docker", "cpu.shares")
	marker := filepath.Join(root, "run", "cpu-weight.json")

	writeTestFile(t, shares, "1024\n")
	if c := cpuWeightCheck(marker, root); !c.OK || !strings.Contains(c.Detail, "default 1024") {
		t.Errorf("no marker, default weight: %+v", c)
	}

	// A killed run's marker: reported with the exact command, nothing changed.
	d, err := rig.FindDockerCPU(root)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.SetMarked(rig.DefaultClusterShares, marker); err != nil {
		t.Fatal(err)
	}
	c := cpuWeightCheck(marker, root)
	if c.OK || !strings.Contains(c.Detail, "now 256") || !strings.Contains(c.Detail, "original 1024") {
		t.Errorf("leftover: %+v", c)
	}
	if want := "echo 1024 > " + shares + " && rm " + marker; !strings.HasPrefix(c.Fix, want) {
		t.Errorf("fix %q, want it to start with %q", c.Fix, want)
	}
	if b, _ := os.ReadFile(shares); strings.TrimSpace(string(b)) != "256" {
		t.Errorf("doctor changed cpu.shares to %s", b)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Errorf("doctor removed the marker: %v", err)
	}

	// A corrupt marker: its path and the manual fix.
	writeTestFile(t, marker, "{")
	if c := cpuWeightCheck(marker, root); c.OK || !strings.Contains(c.Detail, marker) || !strings.Contains(c.Fix, "rm "+marker) {
		t.Errorf("corrupt marker: %+v", c)
	}

	// No marker, but a lowered weight: not droprun's to restore, only said.
	os.Remove(marker)
	if c := cpuWeightCheck(marker, root); !c.OK || !strings.Contains(c.Detail, "not docker's default 1024") {
		t.Errorf("no marker, lowered weight: %+v", c)
	}
}
