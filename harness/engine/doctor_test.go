package engine

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/droprun/droprun/harness/nodeimage"
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
	// While its run lives (this process wrote it), it is a run in progress.
	if c := cpuWeightCheck(marker, root); !c.OK || !strings.Contains(c.Detail, "still running") {
		t.Errorf("a live run's marker: %+v", c)
	}
	m, err := rig.ReadMarker(marker)
	if err != nil {
		t.Fatal(err)
	}
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	m.PID = dead.ProcessState.Pid()
	b, _ := json.Marshal(m)
	writeTestFile(t, marker, string(b))
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

// TestNodeImageCheck: doctor says which node image a new cluster would use
// and why; only an explicit image that is neither present nor pullable
// fails.
func TestNodeImageCheck(t *testing.T) {
	for _, tc := range []struct {
		name   string
		choice nodeimage.Choice
		err    error
		ok     bool
		want   []string
	}{
		{name: "cached", ok: true, want: []string{"droprun/node:v1.37.2 cached (auto)", "up to date"},
			choice: nodeimage.Choice{Image: "droprun/node:v1.37.2", Source: nodeimage.SourceCached, Auto: true, Present: true, Droprun: true, Reason: "droprun's node image is in the local engine, up to date"}},
		{name: "published", ok: true, want: []string{nodeimage.PublishedImage + " published (auto)", "will be pulled"},
			choice: nodeimage.Choice{Image: nodeimage.PublishedImage, Source: nodeimage.SourcePublished, Auto: true, Reason: "a registry serves kind's published node image: it will be pulled"}},
		{name: "offline build", ok: true, want: []string{"no registry reachable", "~15 min"},
			choice: nodeimage.Choice{Image: "droprun/node:v1.37.2", Source: nodeimage.SourceBuild, Auto: true, Reason: "no registry reachable (dial tcp: no such host): auto will build droprun's node image offline (~15 min on 2 cores the first time)"}},
		{name: "given, foreign", ok: true, want: []string{"example.com/node:v1 given", "its own CNI"},
			choice: nodeimage.Choice{Image: "example.com/node:v1", Source: nodeimage.SourceGiven, Present: true, Reason: "named in the settings, in the local engine"}},
		{name: "given, unpullable", err: errors.New("node image example.com/node:v1 is not in the local engine and cannot be pulled"),
			want: []string{"cannot be pulled"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := nodeImageCheck(tc.choice, tc.err)
			if c.OK != tc.ok || c.Name != "node image" {
				t.Errorf("%+v: want OK %v", c, tc.ok)
			}
			for _, w := range tc.want {
				if !strings.Contains(c.Detail, w) {
					t.Errorf("detail %q does not say %q", c.Detail, w)
				}
			}
			if !tc.ok && !strings.Contains(c.Fix, "auto") {
				t.Errorf("fix %q does not offer auto", c.Fix)
			}
		})
	}
}
