package rig

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/procfs"
)

// fakeProc writes files (path relative to the root: content) into a
// fresh directory and returns it as a procfs root.
func fakeProc(t *testing.T, files map[string]string) procfs.FS {
	t.Helper()
	root := t.TempDir()
	for name, content := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fs, err := procfs.NewFS(root)
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

func TestReadCPU(t *testing.T) {
	got, ok := readCPU(fakeProc(t, map[string]string{"stat": "cpu  100 5 50 800 20 3 7 2 9 9\ncpu0 100 5 50 800 20 3 7 2 9 9\nctxt 12\n"}))
	if !ok {
		t.Fatal("read failed")
	}
	// In seconds, at USER_HZ 100; guest fields (9 9) are not added again.
	want := cpuTimes{total: (100 + 5 + 50 + 800 + 20 + 3 + 7 + 2) / 100.0, idle: 8, iowait: 0.2, softirq: 0.07}
	for _, f := range []struct {
		name      string
		got, want float64
	}{{"total", got.total, want.total}, {"idle", got.idle, want.idle}, {"iowait", got.iowait, want.iowait}, {"softirq", got.softirq, want.softirq}} {
		if d := f.got - f.want; d > 1e-9 || d < -1e-9 {
			t.Errorf("%s = %v, want %v", f.name, f.got, f.want)
		}
	}
	for _, bad := range []string{"", "cpu0 1 2 3 4 5 6 7 8", "cpu 1 2 x 4 5 6 7 8"} {
		if _, ok := readCPU(fakeProc(t, map[string]string{"stat": bad + "\n"})); ok {
			t.Errorf("readCPU accepted %q", bad)
		}
	}
	if _, ok := readCPU(fakeProc(t, nil)); ok {
		t.Error("readCPU accepted a missing stat file")
	}
}

func TestReadPSI(t *testing.T) {
	proc := fakeProc(t, map[string]string{
		"pressure/cpu": "some avg10=1.00 avg60=0.50 avg300=0.10 total=2500000\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=7\n",
		"pressure/io":  "full avg10=0.00 avg60=0.00 avg300=0.00 total=3\n",
	})
	got, ok := readPSI(proc, "cpu")
	if !ok || got != 2500*time.Millisecond {
		t.Errorf("got %v %v, want 2.5s true", got, ok)
	}
	if _, ok := readPSI(proc, "io"); ok {
		t.Error("accepted a file without a some line")
	}
	if _, ok := readPSI(proc, "memory"); ok {
		t.Error("accepted a missing file")
	}
}

func TestCgroupFiles(t *testing.T) {
	root := t.TempDir()
	v1 := filepath.Join(root, "cpuacct/docker/abc")
	v2 := filepath.Join(root, "system.slice/docker-def.scope")
	for _, d := range []string{v1, v2} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(v1, "cpuacct.usage"), []byte("1500000000\n"), 0o644)
	os.WriteFile(filepath.Join(v2, "cpu.stat"), []byte("usage_usec 2000000\nuser_usec 1\n"), 0o644)

	for id, want := range map[string]time.Duration{"abc": 1500 * time.Millisecond, "def": 2 * time.Second} {
		p, err := CgroupCPUFile(root, id)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := readCgroupCPU(p)
		if !ok || got != want {
			t.Errorf("%s: %s gave %v %v, want %v", id, p, got, ok, want)
		}
	}
	if _, err := CgroupCPUFile(root, "nope"); err == nil {
		t.Error("found a file for a missing container")
	}
}

// TestDiff checks the shares computed between two readings.
func TestDiff(t *testing.T) {
	t0 := time.Unix(1000, 0)
	prev := reading{
		t: t0, cpuOK: true, psiOK: true,
		cpu:     cpuTimes{total: 1000, idle: 500, iowait: 100, softirq: 10},
		cpuSome: time.Second, ioSome: 0, self: time.Second,
		nodes: map[string]time.Duration{"w1": 0, "gone": 0},
	}
	cur := reading{
		t: t0.Add(time.Second), cpuOK: true, psiOK: true,
		// 200 jiffies: 50 idle, 10 iowait, 20 softirq.
		cpu:     cpuTimes{total: 1200, idle: 550, iowait: 110, softirq: 30},
		cpuSome: 1250 * time.Millisecond, ioSome: 100 * time.Millisecond, self: 1500 * time.Millisecond,
		nodes: map[string]time.Duration{"w1": 700 * time.Millisecond, "new": time.Second},
	}
	s := diff(prev, cur, func() ClientState { return ClientState{Lag: time.Second, InFlight: 7} })
	check := func(name string, got, want float64) {
		t.Helper()
		if d := got - want; d > 1e-9 || d < -1e-9 {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	check("HostBusy", s.HostBusy, 1-60.0/200)
	check("HostSoftirq", s.HostSoftirq, 0.1)
	check("HostIOWait", s.HostIOWait, 0.05)
	check("CPUPressure", s.CPUPressure, 0.25)
	check("IOPressure", s.IOPressure, 0.1)
	check("ClientCPU", s.ClientCPU, 0.5)
	check("w1", s.Nodes["w1"], 0.7)
	if _, ok := s.Nodes["new"]; ok {
		t.Error("a node without a previous reading got a value")
	}
	if s.Client.InFlight != 7 || s.Client.Lag != time.Second {
		t.Errorf("client = %+v", s.Client)
	}

	// Without PSI the pressures are -1.
	prev.psiOK = false
	s = diff(prev, cur, nil)
	if s.CPUPressure != -1 {
		t.Errorf("without PSI: %v", s.CPUPressure)
	}
}

// TestSamplerFromProc reads a fake procfs and sees the busy share change.
func TestSamplerFromProc(t *testing.T) {
	proc := t.TempDir()
	os.MkdirAll(filepath.Join(proc, "pressure"), 0o755)
	write := func(stat, cpuTotal string) {
		os.WriteFile(filepath.Join(proc, "stat"), []byte(stat+"\ncpu0 0 0 0 0 0 0 0 0\n"), 0o644)
		os.WriteFile(filepath.Join(proc, "pressure/cpu"), []byte("some avg10=0 avg60=0 avg300=0 total="+cpuTotal+"\n"), 0o644)
		os.WriteFile(filepath.Join(proc, "pressure/io"), []byte("some avg10=0 avg60=0 avg300=0 total=0\n"), 0o644)
	}
	write("cpu 100 0 100 800 0 0 0 0", "0")
	s := New(Options{Proc: proc})
	write("cpu 200 0 200 800 0 0 0 0", "1000")
	got := s.Next()
	if got.HostBusy != 1 {
		t.Errorf("HostBusy = %v, want 1 (no idle jiffies passed)", got.HostBusy)
	}
	if got.CPUPressure <= 0 {
		t.Errorf("CPUPressure = %v, want > 0", got.CPUPressure)
	}
	if got.Interval <= 0 {
		t.Errorf("Interval = %v", got.Interval)
	}
}

// TestNodesStarved finds a container's cpu.pressure where a cgroup v2 host
// and a v1 host with the unified hierarchy keep it, and turns two
// readings of its "full" total into the share of the interval the node got
// no CPU.
func TestNodesStarved(t *testing.T) {
	root := t.TempDir()
	const psi = "some avg10=9.00 avg60=1.00 avg300=0.10 total=%d\nfull avg10=8.00 avg60=1.00 avg300=0.10 total=%d\n"
	dirs := map[string]string{"v2": "system.slice/docker-v2.scope", "hybrid": "unified/docker/hybrid"}
	for _, d := range dirs {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(id string, some, full int) {
		if err := os.WriteFile(filepath.Join(root, dirs[id], "cpu.pressure"), fmt.Appendf(nil, psi, some, full), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	o := Options{Proc: t.TempDir(), Pressure: map[string]string{}}
	for id := range dirs {
		write(id, 0, 1_000_000)
		p, err := CgroupPressureFile(root, id)
		if err != nil {
			t.Fatal(err)
		}
		o.Pressure[id] = p
	}
	if _, err := CgroupPressureFile(root, "nope"); err == nil {
		t.Error("found a pressure file for a missing container")
	}
	s := New(o)
	t0 := s.prev.t
	write("v2", 5_000_000, 1_000_000+200_000) // 0.2 s without CPU
	write("hybrid", 9_000_000, 999_999)       // went back: no value
	got := s.Next()
	wall := got.Time.Sub(t0)
	if want := min(0.2/wall.Seconds(), 1); math.Abs(got.NodesStarved["v2"]-want) > 1e-9 {
		t.Errorf("v2 starved %v of %v, want %v", got.NodesStarved["v2"], wall, min(want, 1))
	}
	if v, ok := got.NodesStarved["hybrid"]; ok {
		t.Errorf("a counter that went back gave %v", v)
	}
	for _, bad := range []string{"", "some avg10=0 total=5\n", "full avg10=0 total=x\n"} {
		p := filepath.Join(t.TempDir(), "cpu.pressure")
		os.WriteFile(p, []byte(bad), 0o644)
		if _, ok := readCgroupFull(p); ok {
			t.Errorf("readCgroupFull accepted %q", bad)
		}
	}
}
