package rig

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readInt(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

func TestDockerCPUv1(t *testing.T) {
	root := t.TempDir()
	f := filepath.Join(root, "cpu", "docker", "cpu.shares")
	writeFile(t, f, "1024\n")
	d, err := FindDockerCPU(root)
	if err != nil {
		t.Fatal(err)
	}
	if d.File != f || d.Old != 1024 {
		t.Fatalf("found %+v, want %s 1024", d, f)
	}
	if v, err := d.Set(DefaultClusterShares); err != nil || v != 256 {
		t.Fatalf("Set = %d, %v; want 256", v, err)
	}
	if got := readInt(t, f); got != "256" {
		t.Errorf("cpu.shares = %s after Set, want 256", got)
	}
	if err := d.Restore(); err != nil {
		t.Fatal(err)
	}
	if got := readInt(t, f); got != "1024" {
		t.Errorf("cpu.shares = %s after Restore, want 1024", got)
	}
}

func TestDockerCPUv2ScalesTheWeight(t *testing.T) {
	root := t.TempDir()
	f := filepath.Join(root, "docker", "cpu.weight")
	writeFile(t, f, "100\n")
	d, err := FindDockerCPU(root)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := d.Set(256); err != nil || v != 25 {
		t.Fatalf("Set(256) = %d, %v; want weight 25 (100 matches 1024)", v, err)
	}
	if got := readInt(t, f); got != "25" {
		t.Errorf("cpu.weight = %s, want 25", got)
	}
	if err := d.Restore(); err != nil || readInt(t, f) != "100" {
		t.Errorf("Restore: %v, cpu.weight %s", err, readInt(t, f))
	}
}

func TestDockerCPUNotFound(t *testing.T) {
	root := t.TempDir()
	// The systemd driver's layout: containers under system.slice.
	writeFile(t, filepath.Join(root, "cpu", "system.slice", "cpu.shares"), "1024")
	if _, err := FindDockerCPU(root); err == nil || !strings.Contains(err.Error(), "system.slice") {
		t.Errorf("err = %v, want one that names system.slice", err)
	}
	writeFile(t, filepath.Join(root, "cpu", "docker", "cpu.shares"), "lots")
	if _, err := FindDockerCPU(root); err == nil {
		t.Error("a cpu.shares that is not a number was accepted")
	}
}
