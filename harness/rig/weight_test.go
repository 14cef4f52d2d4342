package rig

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
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

// A run killed after SetMarked leaves the marker; the next run's
// RestoreLeftover puts the original back and removes it, and its own
// SetMarked/RestoreMarked leave neither a marker nor a changed weight.
func TestKilledRunIsRestoredFromTheMarker(t *testing.T) {
	root := t.TempDir()
	f := filepath.Join(root, "cpu", "docker", "cpu.shares")
	marker := filepath.Join(root, "run", "droprun", "cpu-weight.json")
	writeFile(t, f, "1024\n")

	// The killed run: it lowered the weight and never restored it.
	d, err := FindDockerCPU(root)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := d.SetMarked(DefaultClusterShares, marker); err != nil || v != 256 {
		t.Fatalf("SetMarked = %d, %v; want 256", v, err)
	}
	m, err := ReadMarker(marker)
	if err != nil || m == nil || m.File != f || m.Original != 1024 || m.Set != 256 || m.PID != os.Getpid() {
		t.Fatalf("marker = %+v, %v; want %s 1024→256 by this pid", m, err, f)
	}
	if entries, _ := os.ReadDir(filepath.Dir(marker)); len(entries) != 1 {
		t.Errorf("marker directory holds %d entries, want the marker alone (no temporary file)", len(entries))
	}

	// While this process, which wrote the marker, lives, it is a run in
	// progress; the killed run is simulated by a PID that has exited.
	if _, err := RestoreLeftover(marker); !errors.Is(err, ErrRunInProgress) {
		t.Fatalf("RestoreLeftover of a live run's marker = %v, want ErrRunInProgress", err)
	}
	m.PID = deadPID(t)
	b, _ := json.Marshal(m)
	writeFile(t, marker, string(b))

	// The next run.
	l, err := RestoreLeftover(marker)
	if err != nil {
		t.Fatal(err)
	}
	if !l.Found || l.Gone || l.Current != 256 || l.Original != 1024 {
		t.Errorf("leftover = %+v, want found, current 256, original 1024", l)
	}
	if !strings.Contains(l.String(), "restored its original 1024 (it was 256)") {
		t.Errorf("leftover says %q", l)
	}
	if got := readInt(t, f); got != "1024" {
		t.Errorf("cpu.shares = %s after RestoreLeftover, want 1024", got)
	}
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Errorf("marker still there after RestoreLeftover (%v)", err)
	}
	d, err = FindDockerCPU(root)
	if err != nil || d.Old != 1024 {
		t.Fatalf("FindDockerCPU after the restore = %+v, %v; want Old 1024", d, err)
	}
	if _, err := d.SetMarked(DefaultClusterShares, marker); err != nil {
		t.Fatal(err)
	}
	if err := d.RestoreMarked(marker, 256); err != nil {
		t.Fatal(err)
	}
	if got := readInt(t, f); got != "1024" {
		t.Errorf("cpu.shares = %s after RestoreMarked, want 1024", got)
	}
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Errorf("marker still there after RestoreMarked (%v)", err)
	}

	// Nothing left: nothing done.
	if l, err := RestoreLeftover(marker); err != nil || l.Found {
		t.Errorf("RestoreLeftover without a marker = %+v, %v; want not found, nil", l, err)
	}
}

// The marker's original goes back only over the value the run set: a
// file holding anything else was changed since (by someone, or a later
// run with another setting) and is left alone, and the marker cleared.
func TestLeftoverChangedSinceIsLeftAlone(t *testing.T) {
	root := t.TempDir()
	f := filepath.Join(root, "docker", "cpu.weight")
	marker := filepath.Join(root, "marker.json")
	writeFile(t, f, "40\n") // neither the original nor what the run set
	pid := deadPID(t)
	writeFile(t, marker, fmt.Sprintf(`{"file":%q,"original":90,"set":25,"pid":%d,"time":"2026-12-01T10:00:00Z"}`, f, pid))
	l, err := RestoreLeftover(marker)
	if err != nil {
		t.Fatal(err)
	}
	if !l.Changed || l.Current != 40 || l.Original != 90 || l.Set != 25 || l.PID != pid {
		t.Errorf("leftover = %+v, want changed from 25 to 40", l)
	}
	if got := readInt(t, f); got != "40" {
		t.Errorf("cpu.weight = %s, want 40 left alone", got)
	}
	if s := l.String(); !strings.Contains(s, fmt.Sprintf("pid %d", pid)) || !strings.Contains(s, "is 40 now: changed since, so left alone") {
		t.Errorf("leftover says %q", s)
	}
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Errorf("marker still there (%v)", err)
	}
	// The live run's own restore leaves a changed value alone too.
	writeFile(t, f, "90\n")
	d, err := FindDockerCPU(root)
	if err != nil {
		t.Fatal(err)
	}
	v, err := d.SetMarked(DefaultClusterShares, marker)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, f, "77\n")
	if err := d.RestoreMarked(marker, v); !errors.Is(err, ErrWeightChanged) {
		t.Errorf("RestoreMarked over a changed value = %v, want ErrWeightChanged", err)
	}
	if got := readInt(t, f); got != "77" {
		t.Errorf("cpu.weight = %s, want 77 left alone", got)
	}
}

// A marker whose weight file is gone (docker's cgroup recreated) is
// cleared without writing anything.
func TestLeftoverWhoseFileIsGone(t *testing.T) {
	root := t.TempDir()
	f := filepath.Join(root, "cpu", "docker", "cpu.shares")
	marker := filepath.Join(root, "marker.json")
	writeFile(t, marker, `{"file":"`+f+`","original":1024,"set":256}`)
	l, err := RestoreLeftover(marker)
	if err != nil || !l.Found || !l.Gone {
		t.Fatalf("RestoreLeftover = %+v, %v; want found and gone", l, err)
	}
	if _, err := os.Stat(f); !os.IsNotExist(err) {
		t.Errorf("RestoreLeftover created %s (%v)", f, err)
	}
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Errorf("marker still there (%v)", err)
	}
}

// A corrupt marker, or one naming a file that is no CPU weight, is an error
// that names the marker and says how to fix it; nothing is written and the
// marker stays for the user to look at.
func TestCorruptMarker(t *testing.T) {
	root := t.TempDir()
	f := filepath.Join(root, "cpu", "docker", "cpu.shares")
	writeFile(t, f, "256\n")
	for name, body := range map[string]string{
		"truncated":    `{"file":"` + f + `","orig`,
		"not a cgroup": `{"file":"` + filepath.Join(root, "etc", "passwd") + `","original":1024}`,
		"relative":     `{"file":"cpu/docker/cpu.shares","original":1024}`,
		"out of range": `{"file":"` + f + `","original":0}`,
	} {
		t.Run(name, func(t *testing.T) {
			marker := filepath.Join(t.TempDir(), "cpu-weight.json")
			writeFile(t, marker, body)
			l, err := RestoreLeftover(marker)
			var me *MarkerError
			if !errors.As(err, &me) || me.Path != marker {
				t.Fatalf("RestoreLeftover = %+v, %v; want a *MarkerError for %s", l, err, marker)
			}
			if msg := err.Error(); !strings.Contains(msg, marker) || !strings.Contains(msg, "rm "+marker) || !strings.Contains(msg, "echo 1024 >") {
				t.Errorf("error %q does not name the marker and the fix", msg)
			}
			if got := readInt(t, f); got != "256" {
				t.Errorf("cpu.shares = %s, want it untouched", got)
			}
			if _, err := os.Stat(marker); err != nil {
				t.Errorf("corrupt marker removed: %v", err)
			}
		})
	}
}

// SetMarked leaves the weight alone when it cannot record it first.
func TestSetMarkedWithoutAMarkerChangesNothing(t *testing.T) {
	root := t.TempDir()
	f := filepath.Join(root, "cpu", "docker", "cpu.shares")
	writeFile(t, f, "1024\n")
	blocker := filepath.Join(root, "file")
	writeFile(t, blocker, "")
	d, err := FindDockerCPU(root)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.SetMarked(256, filepath.Join(blocker, "cpu-weight.json")); err == nil {
		t.Fatal("SetMarked under a regular file succeeded")
	}
	if got := readInt(t, f); got != "1024" {
		t.Errorf("cpu.shares = %s, want 1024 untouched", got)
	}
}

// deadPID returns the PID of a process that has exited.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skipf("cannot start a child process: %v", err)
	}
	return cmd.ProcessState.Pid()
}

// A marker whose run is alive is in use, not a leftover: RestoreLeftover
// leaves it and the weight alone. A PID that started after the marker was
// written (reused) or that has exited does not count as the run.
func TestMarkerOfARunningRun(t *testing.T) {
	root := t.TempDir()
	f := filepath.Join(root, "docker", "cpu.shares")
	marker := filepath.Join(root, "marker.json")
	writeFile(t, f, "256\n")
	now := time.Now().UTC().Format(time.RFC3339)
	writeFile(t, marker, fmt.Sprintf(`{"file":%q,"original":1024,"set":256,"pid":%d,"time":%q}`, f, os.Getpid(), now))
	_, err := RestoreLeftover(marker)
	if !errors.Is(err, ErrRunInProgress) || !strings.Contains(err.Error(), fmt.Sprintf("pid %d", os.Getpid())) {
		t.Fatalf("RestoreLeftover with a live run = %v, want ErrRunInProgress naming the pid", err)
	}
	if got := readInt(t, f); got != "256" {
		t.Errorf("cpu.shares = %s: a live run's weight was touched", got)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Errorf("a live run's marker was removed: %v", err)
	}
	cases := []struct {
		m    Marker
		want bool
	}{
		{Marker{PID: os.Getpid(), Time: time.Now()}, true},
		{Marker{PID: os.Getpid(), Time: time.Unix(0, 0)}, false}, // this process started after: a reused PID
		{Marker{PID: deadPID(t), Time: time.Now()}, false},
		{Marker{PID: 0, Time: time.Now()}, false},
	}
	for _, c := range cases {
		if got := c.m.Running(); got != c.want {
			t.Errorf("%+v.Running() = %v, want %v", c.m, got, c.want)
		}
	}
}
