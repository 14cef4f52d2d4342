package cluster

import (
	"os"
	"path/filepath"
	"testing"
)

func TestThawUnder(t *testing.T) {
	dir := t.TempDir()
	write := func(rel, state string) string {
		p := filepath.Join(dir, rel, "freezer.state")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(state+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	frozen := write("kubelet.slice/pod-a/cri-containerd-1.scope", "FROZEN")
	freezing := write("kubelet.slice/pod-b", "FREEZING")
	thawed := write("kubelet.slice", "THAWED")
	if n := thawUnder(dir); n != 2 {
		t.Errorf("thawed %d cgroups, want 2", n)
	}
	for _, p := range []string{frozen, freezing, thawed} {
		if b, _ := os.ReadFile(p); string(b) != "THAWED" && string(b) != "THAWED\n" {
			t.Errorf("%s reads %q after thawing", p, b)
		}
	}
	if n := thawUnder(filepath.Join(dir, "missing")); n != 0 {
		t.Errorf("a missing directory thawed %d", n)
	}
}
