package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"

	"github.com/droprun/droprun/harness/nodeimage"
)

// DefaultHostPort is the host port droprun maps to NodePort 30080.
const DefaultHostPort = 30080

// minFreeBytes is the free space Doctor wants where images, clusters and
// the build cache live.
const minFreeBytes = 10 << 30

// DoctorOptions configure Doctor. The zero value checks the defaults.
type DoctorOptions struct {
	NodeImage    string // default nodeimage.DefaultImage
	HostPort     int    // default DefaultHostPort, on 127.0.0.1
	DaemonConfig string // default /etc/docker/daemon.json
	WrapperPath  string // default /usr/local/bin/droprun-runc
	CacheDir     string // default os.UserCacheDir()/droprun
}

// Check is one item of a Report.
type Check struct {
	Name   string
	OK     bool
	Detail string // what was found
	Fix    string // what to do when not OK
}

// Report is the outcome of Doctor.
type Report struct {
	Checks []Check
}

// OK reports whether every check passed.
func (r Report) OK() bool {
	for _, c := range r.Checks {
		if !c.OK {
			return false
		}
	}
	return true
}

// Failed returns the checks that did not pass.
func (r Report) Failed() []Check {
	var failed []Check
	for _, c := range r.Checks {
		if !c.OK {
			failed = append(failed, c)
		}
	}
	return failed
}

// Print writes the report as a table, with the fix under each failed check.
func (r Report) Print(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CHECK\tSTATUS\tDETAIL")
	for _, c := range r.Checks {
		status := "ok"
		if !c.OK {
			status = "FAIL"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", c.Name, status, c.Detail)
		if !c.OK && c.Fix != "" {
			fmt.Fprintf(tw, "\t\tfix: %s\n", c.Fix)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if r.OK() {
		_, err := fmt.Fprintln(w, "all checks passed")
		return err
	}
	_, err := fmt.Fprintf(w, "%d of %d checks failed\n", len(r.Failed()), len(r.Checks))
	return err
}

// Doctor checks what droprun needs from this machine and says how to fix
// what is missing. It changes nothing.
func Doctor(ctx context.Context, opts DoctorOptions) Report {
	if opts.NodeImage == "" {
		opts.NodeImage = nodeimage.DefaultImage
	}
	if opts.HostPort == 0 {
		opts.HostPort = DefaultHostPort
	}
	if opts.DaemonConfig == "" {
		opts.DaemonConfig = "/etc/docker/daemon.json"
	}
	if opts.WrapperPath == "" {
		opts.WrapperPath = "/usr/local/bin/droprun-runc"
	}
	if opts.CacheDir == "" {
		if d, err := os.UserCacheDir(); err == nil {
			opts.CacheDir = filepath.Join(d, "droprun")
		}
	}
	var r Report
	add := func(c Check) { r.Checks = append(r.Checks, c) }

	// docker CLI
	cli, cliErr := exec.LookPath("docker")
	if cliErr != nil {
		add(Check{Name: "docker CLI", Detail: "docker not on PATH", Fix: "install it: droprun engine setup (Debian) or install Docker"})
	} else {
		add(Check{Name: "docker CLI", OK: true, Detail: cli})
	}

	// engine
	info, infoErr := DockerInfo(ctx)
	switch {
	case cliErr != nil:
		add(Check{Name: "engine running", Detail: "no docker CLI to ask", Fix: "install Docker first (see docker CLI)"})
	case infoErr != nil:
		add(Check{Name: "engine running", Detail: "docker info: no answer",
			Fix: "start it: droprun engine setup (Debian), or systemctl start docker, or dockerd > /var/log/dockerd.log 2>&1 &"})
	default:
		add(Check{Name: "engine running", OK: true, Detail: fmt.Sprintf("docker %s, default runtime %s, cgroup driver %s",
			info.ServerVersion, info.DefaultRuntime, info.CgroupDriver)})
	}

	// capabilities and the runc wrapper
	needWrapper, bnd, capErr := needsRuncWrapper()
	wrapperDefault := info != nil && info.DefaultRuntime == WrapperRuntime
	switch {
	case capErr != nil:
		add(Check{Name: "CAP_SYS_RESOURCE", Detail: capErr.Error(), Fix: "cannot read /proc/self/status: run on Linux"})
	case !needWrapper:
		add(Check{Name: "CAP_SYS_RESOURCE", OK: true, Detail: fmt.Sprintf("in the bounding set (CapBnd %016x)", bnd)})
	case wrapperDefault:
		add(Check{Name: "CAP_SYS_RESOURCE", OK: true,
			Detail: fmt.Sprintf("missing from the bounding set (CapBnd %016x); the runc wrapper drops it from privileged containers", bnd)})
	default:
		add(Check{Name: "CAP_SYS_RESOURCE",
			Detail: fmt.Sprintf("missing from the bounding set (CapBnd %016x): privileged containers (kind nodes) fail with \"unable to apply caps\" unless runc is wrapped", bnd),
			Fix:    "droprun engine setup installs the runc wrapper and makes it dockerd's default runtime"})
	}
	wrapperHash := ""
	if _, err := os.Stat(opts.WrapperPath); err == nil {
		wrapperHash = installedWrapperHash(ctx, opts.WrapperPath)
	}
	switch {
	case !needWrapper && capErr == nil:
		add(Check{Name: "runc wrapper", OK: true, Detail: "not needed here"})
	case wrapperHash == "":
		add(Check{Name: "runc wrapper", Detail: opts.WrapperPath + " not installed",
			Fix: "droprun engine setup (builds it with the Go toolchain and registers it in " + opts.DaemonConfig + ")"})
	case !wrapperDefault:
		d := "installed, but not dockerd's default runtime"
		if info == nil {
			d = "installed; engine not running to check the default runtime"
		}
		add(Check{Name: "runc wrapper", Detail: d,
			Fix: fmt.Sprintf("set \"default-runtime\": %q and runtimes.%s.path in %s, then kill -HUP dockerd (droprun engine setup does it)", WrapperRuntime, WrapperRuntime, opts.DaemonConfig)})
	case wrapperHash != wrapperSourceHash():
		add(Check{Name: "runc wrapper", Detail: "installed from an older droprun (source " + wrapperHash + ")",
			Fix: "droprun engine setup reinstalls it"})
	default:
		add(Check{Name: "runc wrapper", OK: true, Detail: opts.WrapperPath + ", dockerd's default runtime"})
	}

	// cgroup version
	cg := cgroupVersion(info)
	detail := "v" + cg
	if cg == "1" {
		detail += ": kubelet >= 1.35 needs failCgroupV1: false (droprun's node image passes --fail-cgroupv1=false; kindest/node needs a KubeletConfiguration patch)"
	}
	add(Check{Name: "cgroup version", OK: true, Detail: detail})

	// route_localnet
	if v, err := os.ReadFile(routeLocalnetProc); err != nil {
		add(Check{Name: "route_localnet", Detail: err.Error(), Fix: "sysctl -w net.ipv4.conf.all.route_localnet=1"})
	} else if strings.TrimSpace(string(v)) != "1" {
		add(Check{Name: "route_localnet", Detail: "net.ipv4.conf.all.route_localnet=0: 127.0.0.1:<port> does not reach a NodePort through docker's DNAT",
			Fix: "sysctl -w net.ipv4.conf.all.route_localnet=1 (droprun engine setup sets it and persists it in " + sysctlFile + ")"})
	} else {
		add(Check{Name: "route_localnet", OK: true, Detail: "net.ipv4.conf.all.route_localnet=1"})
	}

	// userland-proxy
	add(userlandProxyCheck(opts.DaemonConfig))

	// host port
	add(hostPortCheck(ctx, opts.HostPort, info != nil))

	// node image
	switch {
	case info == nil:
		add(Check{Name: "node image", Detail: opts.NodeImage + ": engine not running to check", Fix: "start the engine first"})
	default:
		if err := exec.CommandContext(ctx, "docker", "image", "inspect", "--format", "{{.Id}}", opts.NodeImage).Run(); err != nil {
			add(Check{Name: "node image", Detail: opts.NodeImage + " not present",
				Fix: "droprun node-image build (offline, from the Go module proxy and Debian; ~15 min cold), or docker pull it where a registry is reachable"})
		} else {
			add(Check{Name: "node image", OK: true, Detail: opts.NodeImage})
		}
	}

	// free disk
	dockerRoot := "/var/lib/docker"
	if info != nil && info.DockerRootDir != "" {
		dockerRoot = info.DockerRootDir
	}
	add(diskCheck(dockerRoot, opts.CacheDir))
	return r
}

// cgroupVersion from docker info, else from the cgroup filesystem.
func cgroupVersion(info *Info) string {
	if info != nil && info.CgroupVersion != "" {
		return info.CgroupVersion
	}
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		return "2"
	}
	return "1"
}

func userlandProxyCheck(daemonConfig string) Check {
	c := Check{Name: "userland-proxy",
		Fix: fmt.Sprintf("set \"userland-proxy\": false in %s and restart dockerd (droprun engine setup does it): the proxy costs ~20%% of a core at 1,000 req/s and turns resets into EOFs", daemonConfig)}
	// A flag on dockerd's command line wins over the file.
	if pid, err := dockerdPid(); err == nil {
		if cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline"); err == nil {
			args := strings.Split(string(cmdline), "\x00")
			for _, a := range args {
				if a == "--userland-proxy=false" {
					c.OK, c.Detail = true, "dockerd --userland-proxy=false"
					return c
				}
			}
		}
	}
	content, err := os.ReadFile(daemonConfig)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		c.Detail = err.Error()
		return c
	}
	off, err := userlandProxyDisabled(content)
	switch {
	case err != nil:
		c.Detail = daemonConfig + ": " + err.Error()
	case off:
		c.OK, c.Detail = true, "disabled in "+daemonConfig
	default:
		c.Detail = "enabled (dockerd's default): host port traffic goes through docker-proxy"
	}
	return c
}

// hostPortCheck tries to listen on 127.0.0.1:port, and asks docker whether a
// container publishes it (with the userland proxy off, docker's DNAT holds
// a published port without listening on it).
func hostPortCheck(ctx context.Context, port int, engine bool) Check {
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	c := Check{Name: "host port " + addr}
	if engine {
		out, err := exec.CommandContext(ctx, "docker", "ps", "--filter", "publish="+strconv.Itoa(port), "--format", "{{.Names}}").Output()
		if err == nil && strings.TrimSpace(string(out)) != "" {
			names := strings.Join(strings.Fields(string(out)), ", ")
			c.Detail = "published by container " + names
			c.Fix = "delete the cluster that holds it (droprun cluster down, or kind delete cluster) or choose another host port"
			return c
		}
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		c.Detail = "in use: " + err.Error()
		c.Fix = fmt.Sprintf("free it (ss -ltnp 'sport = :%d' shows the owner) or choose another host port", port)
		return c
	}
	l.Close()
	c.OK, c.Detail = true, "free"
	return c
}

// diskCheck wants minFreeBytes free where docker keeps images and
// containers and where the node image build caches its artifacts.
func diskCheck(paths ...string) Check {
	c := Check{Name: "free disk", OK: true}
	var parts []string
	seen := map[uint64]bool{}
	for _, p := range paths {
		if p == "" {
			continue
		}
		dir := existingParent(p)
		var st syscall.Statfs_t
		if err := syscall.Statfs(dir, &st); err != nil {
			parts = append(parts, fmt.Sprintf("%s: %v", p, err))
			continue
		}
		fsid := uint64(st.Fsid.X__val[0])<<32 | uint64(uint32(st.Fsid.X__val[1]))
		free := st.Bavail * uint64(st.Bsize)
		if seen[fsid] && fsid != 0 {
			continue
		}
		seen[fsid] = true
		parts = append(parts, fmt.Sprintf("%s: %.1f GiB free", p, float64(free)/(1<<30)))
		if free < minFreeBytes {
			c.OK = false
		}
	}
	c.Detail = strings.Join(parts, "; ")
	if !c.OK {
		c.Fix = fmt.Sprintf("free at least %d GiB (docker system prune; delete old clusters; go clean -cache)", minFreeBytes>>30)
	}
	return c
}

// existingParent returns p or its nearest existing parent directory.
func existingParent(p string) string {
	for {
		if _, err := os.Stat(p); err == nil {
			return p
		}
		parent := filepath.Dir(p)
		if parent == p {
			return p
		}
		p = parent
	}
}
