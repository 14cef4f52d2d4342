package rig

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// DefaultClusterShares is the CPU weight droprun gives docker's containers
// (the kind nodes) during a run, in cgroup v1 cpu.shares units, where a
// nice-0 thread weighs 1024 and so does docker's cgroup by default.
//
// Why: the client runs beside the cluster on the same cores. When a
// rollout starts a pod, its node takes a whole core for 1–3 s (kubelet,
// containerd, runc, the API server, kube-proxy's rule syncs). At equal
// weight the client's thread then got as little as 0.1–0.3 cores, its
// answered requests waited seconds to be read, and they counted as
// timeouts the pods never caused. Measured on a 2-core machine with
// compare-all at 1000 req/s: 1–2 of 3 rollouts of a good variant short of
// CPU at 1024; none at 256. The weight only matters when both want the
// CPU: an idle client leaves the cluster every core.
const DefaultClusterShares = 256

// DockerCPU is the CPU weight of the cgroup docker puts its containers in.
// Its siblings are the host's own processes, the client among them.
type DockerCPU struct {
	// File is the weight file: cpu.shares (cgroup v1) or cpu.weight (v2).
	File string
	// Old is the file's value when found, in its own units.
	Old int
}

// FindDockerCPU finds the weight file of docker's parent cgroup under root
// (normally /sys/fs/cgroup), for docker's cgroupfs driver. Under the
// systemd driver the parent is system.slice, shared with every service:
// FindDockerCPU does not touch that and returns an error saying so.
func FindDockerCPU(root string) (DockerCPU, error) {
	for _, f := range []string{
		root + "/cpu/docker/cpu.shares",
		root + "/cpu,cpuacct/docker/cpu.shares",
		root + "/docker/cpu.weight",
	} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		v, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			return DockerCPU{}, fmt.Errorf("reading %s: %w", f, err)
		}
		return DockerCPU{File: f, Old: v}, nil
	}
	return DockerCPU{}, errors.New("no docker cgroup with a CPU weight under " + root +
		" (docker's systemd cgroup driver puts containers in system.slice, which droprun leaves alone)")
}

// Units converts shares, in cgroup v1 units, to the file's: as is for
// cpu.shares, scaled for cpu.weight (whose default 100 matches 1024).
func (d DockerCPU) Units(shares int) int {
	if strings.HasSuffix(d.File, "cpu.weight") {
		return max(1, min(10000, shares*100/1024))
	}
	return shares
}

// Set writes shares, in cgroup v1 units, to the file (see Units). It
// returns the value written.
func (d DockerCPU) Set(shares int) (int, error) {
	v := d.Units(shares)
	if err := os.WriteFile(d.File, []byte(strconv.Itoa(v)), 0o644); err != nil {
		return 0, fmt.Errorf("setting the docker containers' CPU weight: %w", err)
	}
	return v, nil
}

// Default is docker's own value for the file: 1024 for cpu.shares, 100 for
// cpu.weight.
func (d DockerCPU) Default() int {
	if strings.HasSuffix(d.File, "cpu.weight") {
		return 100
	}
	return 1024
}

// Restore writes the value found back.
func (d DockerCPU) Restore() error {
	if err := os.WriteFile(d.File, []byte(strconv.Itoa(d.Old)), 0o644); err != nil {
		return fmt.Errorf("restoring the docker containers' CPU weight %d in %s: %w", d.Old, d.File, err)
	}
	return nil
}
