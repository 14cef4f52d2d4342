package rig

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"runtime/metrics"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/procfs"

	"github.com/droprun/droprun/harness/schedlat"
)

// Sample is the rig's state over one interval, ending at Time.
type Sample struct {
	// Time is when the sample was taken; Interval how long it covers.
	Time     time.Time     `json:"at"`
	Interval time.Duration `json:"intervalNs"`
	// HostBusy is the share of all the host's cores that were busy (not
	// idle, not waiting for I/O), 0..1. HostSoftirq is the part of it
	// spent in soft interrupts (the network stack), HostIOWait the share
	// idle while waiting for I/O.
	HostBusy    float64 `json:"hostBusy"`
	HostSoftirq float64 `json:"hostSoftirq"`
	HostIOWait  float64 `json:"hostIOWait"`
	// CPUPressure is the share of the interval in which at least one
	// runnable task waited for a core (/proc/pressure/cpu "some"); -1 when
	// the kernel does not report it. IOPressure is the same for I/O.
	CPUPressure float64 `json:"cpuPressure"`
	IOPressure  float64 `json:"ioPressure"`
	// ClientCPU is the cores this process used (1.0 = one core busy).
	ClientCPU float64 `json:"clientCPU"`
	// SchedMax is an upper bound on the longest a runnable goroutine of
	// this process waited to run during the interval (Go's
	// /sched/latencies:seconds histogram, highest non-empty bucket).
	SchedMax time.Duration `json:"schedMaxNs"`
	// Nodes are the cores each watched container used, by name.
	Nodes map[string]float64 `json:"nodesCPU,omitempty"`
	// NodesStarved is, by name, the share of the interval in which every
	// runnable task of the container waited for a core and none ran (its
	// cgroup's CPU pressure, "full"): the node as a whole got no CPU.
	NodesStarved map[string]float64 `json:"nodesStarved,omitempty"`
	// Client is the traffic client's state at the end of the interval,
	// when a ClientProbe is set.
	Client ClientState `json:"client"`
}

// ClientState is the traffic client's pacing state.
type ClientState struct {
	// Lag is how far behind schedule the latest request went out.
	Lag time.Duration `json:"lagNs"`
	// InFlight is the requests sent and not yet answered.
	InFlight uint64 `json:"inFlight"`
}

// Options configure a Sampler.
type Options struct {
	// Interval between samples. Default 250ms.
	Interval time.Duration
	// Cgroups maps a name (a kind node) to the cgroup file that counts its
	// CPU time: cpuacct.usage (cgroup v1, nanoseconds) or cpu.stat (cgroup
	// v2, usage_usec). See NodeCgroups.
	Cgroups map[string]string
	// Pressure maps a name (a kind node) to its cgroup's cpu.pressure
	// file (cgroup v2, or the unified hierarchy of a v1 host). See
	// CgroupPressureFile.
	Pressure map[string]string
	// Client, when set, is read at each sample.
	Client func() ClientState
	// Proc is the procfs root; default /proc (tests point it elsewhere).
	Proc string
}

// Sampler takes Samples. Create it with New.
type Sampler struct {
	o Options
	// proc reads o.Proc; procOK is false when it is not a directory, and
	// then no reading has host CPU times or pressures.
	proc   procfs.FS
	procOK bool
	prev   reading
}

// reading is the cumulative counters at one moment.
type reading struct {
	t             time.Time
	cpu           cpuTimes
	cpuOK         bool
	cpuSome       time.Duration
	ioSome        time.Duration
	psiOK         bool
	self          time.Duration
	nodes         map[string]time.Duration
	nodesFull     map[string]time.Duration
	sched         *metrics.Float64Histogram
	schedBucketsN []uint64
}

// cpuTimes are the host's aggregate CPU times from /proc/stat, in seconds.
type cpuTimes struct{ total, idle, iowait, softirq float64 }

// New returns a Sampler and takes its first reading.
func New(o Options) *Sampler {
	if o.Interval <= 0 {
		o.Interval = 250 * time.Millisecond
	}
	if o.Proc == "" {
		o.Proc = "/proc"
	}
	s := &Sampler{o: o}
	var err error
	s.proc, err = procfs.NewFS(o.Proc)
	s.procOK = err == nil
	s.prev = s.read()
	return s
}

// Run takes a sample every Interval and passes it to fn until ctx ends.
// A tick that comes less than half an interval after the last sample (the
// ticker catching up after the process was starved) is skipped, so every
// sample spans at least half an interval.
func (s *Sampler) Run(ctx context.Context, fn func(Sample)) {
	t := time.NewTicker(s.o.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			if now.Sub(s.prev.t) < s.o.Interval/2 {
				continue
			}
			fn(s.Next())
		}
	}
}

// Next takes a reading and returns the sample since the previous one.
func (s *Sampler) Next() Sample {
	cur := s.read()
	prev := s.prev
	s.prev = cur
	return diff(prev, cur, s.o.Client)
}

func diff(prev, cur reading, client func() ClientState) Sample {
	wall := cur.t.Sub(prev.t)
	out := Sample{Time: cur.t, Interval: wall, CPUPressure: -1, IOPressure: -1}
	if wall <= 0 {
		return out
	}
	if prev.cpuOK && cur.cpuOK {
		if total := cur.cpu.total - prev.cpu.total; total > 0 {
			idle := (cur.cpu.idle - prev.cpu.idle) + (cur.cpu.iowait - prev.cpu.iowait)
			out.HostBusy = clamp01(1 - idle/total)
			out.HostSoftirq = clamp01((cur.cpu.softirq - prev.cpu.softirq) / total)
			out.HostIOWait = clamp01((cur.cpu.iowait - prev.cpu.iowait) / total)
		}
	}
	if prev.psiOK && cur.psiOK {
		out.CPUPressure = clamp01(float64(cur.cpuSome-prev.cpuSome) / float64(wall))
		out.IOPressure = clamp01(float64(cur.ioSome-prev.ioSome) / float64(wall))
	}
	out.ClientCPU = float64(cur.self-prev.self) / float64(wall)
	out.Nodes = perWall(prev.nodes, cur.nodes, wall)
	out.NodesStarved = perWall(prev.nodesFull, cur.nodesFull, wall)
	for name, v := range out.NodesStarved {
		out.NodesStarved[name] = clamp01(v)
	}
	out.SchedMax = schedlat.MaxSince(prev.schedBucketsN, cur.sched)
	if client != nil {
		out.Client = client()
	}
	return out
}

// perWall returns, by name, how much each cumulative time in cur grew
// since prev, per second of wall; nil when none did. A name missing from
// prev, or whose counter went back, has no value.
func perWall(prev, cur map[string]time.Duration, wall time.Duration) map[string]float64 {
	var out map[string]float64
	for name, v := range cur {
		if p, ok := prev[name]; ok && v >= p {
			if out == nil {
				out = map[string]float64{}
			}
			out[name] = float64(v-p) / float64(wall)
		}
	}
	return out
}

func clamp01(x float64) float64 { return math.Max(0, math.Min(1, x)) }

func (s *Sampler) read() reading {
	var r reading
	if s.procOK {
		r.cpu, r.cpuOK = readCPU(s.proc)
		cpuSome, ok1 := readPSI(s.proc, "cpu")
		ioSome, ok2 := readPSI(s.proc, "io")
		r.cpuSome, r.ioSome, r.psiOK = cpuSome, ioSome, ok1 && ok2
	}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		r.self = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	r.nodes = readEach(s.o.Cgroups, readCgroupCPU)
	r.nodesFull = readEach(s.o.Pressure, readCgroupFull)
	if h := schedlat.Read(); h != nil {
		r.sched = h
		r.schedBucketsN = append([]uint64(nil), h.Counts...)
	}
	// Stamped after the counters are read: a stall before this point
	// lengthens the interval the counters cover, not the next one.
	r.t = time.Now()
	return r
}

// readEach reads every file of paths (name → file) with read, by name;
// nil when none could be read.
func readEach(paths map[string]string, read func(string) (time.Duration, bool)) map[string]time.Duration {
	var out map[string]time.Duration
	for name, path := range paths {
		if v, ok := read(path); ok {
			if out == nil {
				out = map[string]time.Duration{}
			}
			out[name] = v
		}
	}
	return out
}

// readCPU reads the host's aggregate CPU times (the "cpu" line of
// /proc/stat). The total leaves out guest and guest_nice, which the kernel
// already counts in user and nice.
func readCPU(proc procfs.FS) (cpuTimes, bool) {
	st, err := proc.Stat()
	if err != nil || st.CPUTotal == (procfs.CPUStat{}) { // no "cpu" line
		return cpuTimes{}, false
	}
	c := st.CPUTotal
	return cpuTimes{
		total:   c.User + c.Nice + c.System + c.Idle + c.Iowait + c.IRQ + c.SoftIRQ + c.Steal,
		idle:    c.Idle,
		iowait:  c.Iowait,
		softirq: c.SoftIRQ,
	}, true
}

// readPSI returns the cumulative "some" stall time of a resource's
// pressure file, /proc/pressure/cpu or /proc/pressure/io.
func readPSI(proc procfs.FS, resource string) (time.Duration, bool) {
	psi, err := proc.PSIStatsForResource(resource)
	if err != nil || psi.Some == nil {
		return 0, false
	}
	return time.Duration(psi.Some.Total) * time.Microsecond, true
}

// readCgroupCPU reads a cgroup's cumulative CPU time from cpuacct.usage
// (v1, nanoseconds) or cpu.stat (v2, usage_usec).
func readCgroupCPU(path string) (time.Duration, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	if strings.HasSuffix(path, "cpu.stat") {
		for line := range bytes.Lines(b) {
			if v, ok := strings.CutPrefix(strings.TrimSpace(string(line)), "usage_usec "); ok {
				us, err := strconv.ParseUint(v, 10, 64)
				return time.Duration(us) * time.Microsecond, err == nil
			}
		}
		return 0, false
	}
	ns, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	return time.Duration(ns), err == nil
}

// readCgroupFull reads the cumulative "full" stall time of a cgroup's
// cpu.pressure file ("full avg10=… avg60=… avg300=… total=<µs>").
func readCgroupFull(path string) (time.Duration, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	for line := range bytes.Lines(b) {
		f := strings.Fields(string(line))
		if len(f) == 0 || f[0] != "full" {
			continue
		}
		for _, kv := range f[1:] {
			if v, ok := strings.CutPrefix(kv, "total="); ok {
				us, err := strconv.ParseUint(v, 10, 64)
				return time.Duration(us) * time.Microsecond, err == nil
			}
		}
	}
	return 0, false
}

// CgroupPressureFile finds a docker container's cpu.pressure file, given
// its full ID: on cgroup v2, or on a v1 host that also mounts the unified
// hierarchy (where the kernel keeps pressure for every cgroup).
func CgroupPressureFile(root, id string) (string, error) {
	candidates := []string{
		root + "/system.slice/docker-" + id + ".scope/cpu.pressure",
		root + "/docker/" + id + "/cpu.pressure",
		root + "/unified/system.slice/docker-" + id + ".scope/cpu.pressure",
		root + "/unified/docker/" + id + "/cpu.pressure",
	}
	for _, c := range candidates {
		if _, err := os.Stat(c); err == nil {
			return c, nil
		}
	}
	return "", fmt.Errorf("no CPU pressure file for container %.12s under %s (a cgroup v1 host without the unified hierarchy, or a kernel without PSI)", id, root)
}

// CgroupCPUFile finds the file counting a docker container's CPU time,
// given its full ID, under the usual cgroup v1 and v2 layouts.
func CgroupCPUFile(root, id string) (string, error) {
	candidates := []string{
		root + "/cpuacct/docker/" + id + "/cpuacct.usage",
		root + "/cpu,cpuacct/docker/" + id + "/cpuacct.usage",
		root + "/cpuacct/system.slice/docker-" + id + ".scope/cpuacct.usage",
		root + "/system.slice/docker-" + id + ".scope/cpu.stat",
		root + "/docker/" + id + "/cpu.stat",
	}
	for _, c := range candidates {
		if _, err := os.Stat(c); err == nil {
			return c, nil
		}
	}
	return "", fmt.Errorf("no CPU accounting file for container %.12s under %s", id, root)
}
