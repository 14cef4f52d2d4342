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
	"time"

	"github.com/droprun/droprun/harness/nodeimage"
	"github.com/droprun/droprun/harness/rig"
	"github.com/droprun/droprun/harness/scenario"
)

// DefaultHostPort and DefaultNodes are the default kind cluster's first
// web host port (node k gets DefaultHostPort+2k) and node count: the
// scenario's defaults.
const (
	DefaultHostPort = scenario.DefaultHostPort
	DefaultNodes    = scenario.DefaultNodes
)

// minFreeBytes is the free space Doctor wants where images, clusters and
// the build cache live.
const minFreeBytes = 10 << 30

// DoctorOptions configure Doctor. The zero value checks the defaults.
type DoctorOptions struct {
	NodeImage    string // default nodeimage.Auto
	SourceDir    string // a droprun checkout, to check a cached node image's inputs against; default the source embedded in droprun
	HostPort     int    // default DefaultHostPort, on 127.0.0.1
	DaemonConfig string // default /etc/docker/daemon.json
	WrapperPath  string // default /usr/local/bin/droprun-runc
	CacheDir     string // default os.UserCacheDir()/droprun
	WeightMarker string // default rig.DefaultMarker
	CgroupRoot   string // default /sys/fs/cgroup
	Record       string // default DefaultRecord

	// GatewayHostPort defaults to HostPort+1 (the default layout) and
	// Nodes to DefaultNodes. Node k uses HostPort+2k and
	// GatewayHostPort+2k: Doctor checks each of those ports.
	GatewayHostPort, Nodes int
	// Cluster is the kind cluster a run reuses (default
	// scenario.DefaultClusterName): its nodes publishing the host ports
	// is no problem.
	Cluster string
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
	opts = opts.withDefaults()
	var r Report
	add := func(c Check) { r.Checks = append(r.Checks, c) }

	cli, cliErr := exec.LookPath("docker")
	add(dockerCLICheck(cli, cliErr))
	info, infoErr := DockerInfo(ctx)
	add(engineCheck(info, cliErr, infoErr))

	// Privileged containers need the runc wrapper where the bounding set
	// lacks CAP_SYS_RESOURCE, and it works only as dockerd's default
	// runtime. When the set cannot be read, the wrapper is checked anyway.
	needWrapper, bnd, capErr := needsRuncWrapper()
	wrapperDefault := info != nil && info.DefaultRuntime == WrapperRuntime
	add(capSysResourceCheck(needWrapper, bnd, capErr, wrapperDefault))
	add(runcWrapperCheck(ctx, opts, needWrapper || capErr != nil, wrapperDefault, info != nil))

	add(cgroupVersionCheck(info))
	// a CPU weight left lowered by a killed run
	add(cpuWeightCheck(opts.WeightMarker, opts.CgroupRoot))
	add(routeLocalnetCheck(ctx))
	add(hostChangesCheck(opts.Record))
	add(userlandProxyCheck(opts.DaemonConfig))
	// host ports, a web and a gateway one per node
	var publishers func(int) []publisher
	if info != nil {
		publishers = func(port int) []publisher { return dockerPublishers(ctx, port) }
	}
	add(hostPortsCheck(opts.HostPort, opts.GatewayHostPort, opts.Nodes, opts.Cluster, publishers))
	// kube-proxy modes the kernel supports
	add(kubeProxyModesCheck("/"))
	add(chooseNodeImageCheck(ctx, opts, info))
	add(diskCheck(dockerRootDir(info), opts.CacheDir))
	return r
}

// withDefaults fills in the zero fields of o with the defaults the
// DoctorOptions fields document.
func (o DoctorOptions) withDefaults() DoctorOptions {
	if o.NodeImage == "" {
		o.NodeImage = nodeimage.Auto
	}
	if o.HostPort == 0 {
		o.HostPort = DefaultHostPort
	}
	if o.GatewayHostPort == 0 {
		o.GatewayHostPort = o.HostPort + 1
	}
	if o.Nodes == 0 {
		o.Nodes = DefaultNodes
	}
	if o.Cluster == "" {
		o.Cluster = scenario.DefaultClusterName
	}
	if o.DaemonConfig == "" {
		o.DaemonConfig = "/etc/docker/daemon.json"
	}
	if o.WrapperPath == "" {
		o.WrapperPath = "/usr/local/bin/droprun-runc"
	}
	if o.CacheDir == "" {
		if d, err := os.UserCacheDir(); err == nil {
			o.CacheDir = filepath.Join(d, "droprun")
		}
	}
	if o.WeightMarker == "" {
		o.WeightMarker = rig.DefaultMarker
	}
	if o.Record == "" {
		o.Record = DefaultRecord
	}
	if o.CgroupRoot == "" {
		o.CgroupRoot = "/sys/fs/cgroup"
	}
	return o
}

// dockerCLICheck reports where the docker CLI is, from exec.LookPath.
func dockerCLICheck(cli string, err error) Check {
	if err != nil {
		return Check{Name: "docker CLI", Detail: "docker not on PATH", Fix: "install it: droprun engine setup (Debian) or install Docker"}
	}
	return Check{Name: "docker CLI", OK: true, Detail: cli}
}

// engineCheck reports whether dockerd answered docker info; there is
// nothing to ask without the CLI (cliErr).
func engineCheck(info *Info, cliErr, infoErr error) Check {
	switch {
	case cliErr != nil:
		return Check{Name: "engine running", Detail: "no docker CLI to ask", Fix: "install Docker first (see docker CLI)"}
	case infoErr != nil:
		return Check{Name: "engine running", Detail: "docker info: no answer",
			Fix: "start it: droprun engine setup (Debian), or systemctl start docker, or dockerd > /var/log/dockerd.log 2>&1 &"}
	default:
		return Check{Name: "engine running", OK: true, Detail: fmt.Sprintf("docker %s, default runtime %s, cgroup driver %s",
			info.ServerVersion, info.DefaultRuntime, info.CgroupDriver)}
	}
}

// capSysResourceCheck reports whether the bounding set bnd has
// CAP_SYS_RESOURCE; missing it is fine once the runc wrapper is dockerd's
// default runtime.
func capSysResourceCheck(needWrapper bool, bnd uint64, capErr error, wrapperDefault bool) Check {
	switch {
	case capErr != nil:
		return Check{Name: "CAP_SYS_RESOURCE", Detail: capErr.Error(), Fix: "cannot read /proc/self/status: run on Linux"}
	case !needWrapper:
		return Check{Name: "CAP_SYS_RESOURCE", OK: true, Detail: fmt.Sprintf("in the bounding set (CapBnd %016x)", bnd)}
	case wrapperDefault:
		return Check{Name: "CAP_SYS_RESOURCE", OK: true,
			Detail: fmt.Sprintf("missing from the bounding set (CapBnd %016x); the runc wrapper drops it from privileged containers", bnd)}
	default:
		return Check{Name: "CAP_SYS_RESOURCE",
			Detail: fmt.Sprintf("missing from the bounding set (CapBnd %016x): privileged containers (kind nodes) fail with \"unable to apply caps\" unless runc is wrapped", bnd),
			Fix:    "droprun engine setup installs the runc wrapper and makes it dockerd's default runtime"}
	}
}

// runcWrapperCheck reports whether the runc wrapper, when wanted, is
// installed at opts.WrapperPath from this droprun's source and is dockerd's
// default runtime (engine says whether dockerd answered to tell).
func runcWrapperCheck(ctx context.Context, opts DoctorOptions, wanted, wrapperDefault, engine bool) Check {
	wrapperHash := ""
	if _, err := os.Stat(opts.WrapperPath); err == nil {
		wrapperHash = installedWrapperHash(ctx, opts.WrapperPath)
	}
	switch {
	case !wanted:
		return Check{Name: "runc wrapper", OK: true, Detail: "not needed here"}
	case wrapperHash == "":
		return Check{Name: "runc wrapper", Detail: opts.WrapperPath + " not installed",
			Fix: "droprun engine setup (builds it with the Go toolchain and registers it in " + opts.DaemonConfig + ")"}
	case !wrapperDefault:
		d := "installed, but not dockerd's default runtime"
		if !engine {
			d = "installed; engine not running to check the default runtime"
		}
		return Check{Name: "runc wrapper", Detail: d,
			Fix: fmt.Sprintf("set \"default-runtime\": %q and runtimes.%s.path in %s, then kill -HUP dockerd (droprun engine setup does it)", WrapperRuntime, WrapperRuntime, opts.DaemonConfig)}
	case wrapperHash != wrapperSourceHash():
		return Check{Name: "runc wrapper", Detail: "installed from an older droprun (source " + wrapperHash + ")",
			Fix: "droprun engine setup reinstalls it"}
	default:
		return Check{Name: "runc wrapper", OK: true, Detail: opts.WrapperPath + ", dockerd's default runtime"}
	}
}

// cgroupVersionCheck reports the cgroup version, which always passes:
// cgroup v1 only needs a kubelet setting droprun already patches in.
func cgroupVersionCheck(info *Info) Check {
	cg := cgroupVersion(info)
	detail := "v" + cg
	if cg == "1" {
		detail += ": kubelet >= 1.35 needs failCgroupV1: false (droprun's cluster config patches it in for every node image; droprun's own image also passes --fail-cgroupv1=false)"
	}
	return Check{Name: "cgroup version", OK: true, Detail: detail}
}

// routeLocalnetCheck wants net.ipv4.conf.all.route_localnet=1, without
// which 127.0.0.1:<port> does not reach a NodePort, and the localnet guard
// beside it, without which a neighbour could reach 127.0.0.1's ports.
func routeLocalnetCheck(ctx context.Context) Check {
	v, err := os.ReadFile(routeLocalnetProc)
	switch {
	case err != nil:
		return Check{Name: "route_localnet", Detail: err.Error(), Fix: "droprun engine setup (it sets route_localnet=1 with its guard)"}
	case strings.TrimSpace(string(v)) != "1":
		return Check{Name: "route_localnet", Detail: "net.ipv4.conf.all.route_localnet=0: 127.0.0.1:<port> does not reach a NodePort through docker's DNAT (droprun sets it at run time only, so it is 0 after a reboot)",
			Fix: "droprun engine setup (it sets route_localnet=1 with its guard)"}
	case !guardPresent(ctx):
		return Check{Name: "route_localnet", Detail: "net.ipv4.conf.all.route_localnet=1 without droprun's localnet guard: a neighbour on this network can reach what listens or is DNATed on 127.0.0.1",
			Fix: "droprun engine setup adds the guard (iptables -t raw -I " + strings.Join(guardRule, " ") + ")"}
	default:
		return Check{Name: "route_localnet", OK: true, Detail: "net.ipv4.conf.all.route_localnet=1, with the localnet guard (raw PREROUTING drops packets to 127.0.0.0/8 from any interface but lo)"}
	}
}

// hostChangesCheck lists what engine setup changed on this host, as its
// record says; informational (always OK).
func hostChangesCheck(path string) Check {
	rec, err := ReadRecord(path)
	if err != nil {
		return Check{Name: "host changes", Detail: err.Error(), Fix: "fix or remove " + path}
	}
	c := rec.Changes()
	if len(c) == 0 {
		return Check{Name: "host changes", OK: true, Detail: "none recorded by droprun engine setup"}
	}
	return Check{Name: "host changes", OK: true, Detail: "droprun engine setup " + strings.Join(c, "; ") + " (droprun engine teardown undoes them)"}
}

// chooseNodeImageCheck asks the node image selector which image a cluster
// would use; that needs a running engine.
func chooseNodeImageCheck(ctx context.Context, opts DoctorOptions, info *Info) Check {
	if info == nil {
		return Check{Name: "node image", Detail: opts.NodeImage + ": engine not running to check", Fix: "start the engine first"}
	}
	sel := nodeimage.Selector{SourceDir: opts.SourceDir, ProbeTimeout: 5 * time.Second}
	ch, err := sel.Choose(ctx, opts.NodeImage)
	return nodeImageCheck(ch, err)
}

// dockerRootDir is where dockerd keeps images and containers, by docker
// info when it answered.
func dockerRootDir(info *Info) string {
	if info != nil && info.DockerRootDir != "" {
		return info.DockerRootDir
	}
	return "/var/lib/docker"
}

// nodeImageCheck says which node image a cluster would be created from
// and why: droprun's cached image, kind's published one (present or
// pullable), or the offline build (fine, but slow the first time); an
// explicit image that is neither present nor pullable fails.
func nodeImageCheck(ch nodeimage.Choice, err error) Check {
	c := Check{Name: "node image"}
	if err != nil {
		c.Detail = err.Error()
		c.Fix = "set cluster.kind.nodeImage: auto (or pass --node-image auto), or make the image present: docker pull it, or droprun node-image build"
		return c
	}
	c.OK = true
	if ch.Source == nodeimage.SourceBuild {
		c.Detail = ch.Reason // "no registry reachable (...): auto will build ... offline (~15 min ...)"
		return c
	}
	c.Detail = ch.String()
	if ch.Present && !ch.Droprun {
		c.Detail += "; not droprun's image (no " + nodeimage.LabelInputs + " label): its own CNI is used"
	}
	return c
}

// LacksCapSysResource reports whether this process's capability bounding
// set lacks CAP_SYS_RESOURCE (the runc wrapper's reason): then nothing in a
// kind node may lower oom_score_adj, and a node image without droprun's
// containerd setting needs restrict_oom_score_adj patched in.
func LacksCapSysResource() (bool, error) {
	need, _, err := needsRuncWrapper()
	return need, err
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

// cpuWeightCheck reports a docker CPU weight that a run killed before its
// restore left lowered (its marker is still there), with the command that
// puts it back. Like every check it changes nothing; the next run restores
// it by itself (rig.RestoreLeftover).
func cpuWeightCheck(marker, cgroupRoot string) Check {
	c := Check{Name: "docker CPU weight"}
	m, err := rig.ReadMarker(marker)
	if err != nil {
		var me *rig.MarkerError
		c.Detail = err.Error()
		if errors.As(err, &me) {
			c.Detail, c.Fix = fmt.Sprintf("marker %s: %v", me.Path, me.Err), me.Fix()
		}
		return c
	}
	if m != nil && m.Running() {
		c.OK = true
		c.Detail = fmt.Sprintf("%s lowered to %d by droprun pid %d at %s, which is still running (a run in progress; it restores %d when it ends)",
			m.File, m.Set, m.PID, m.Time.Format("2006-01-02 15:04:05Z07:00"), m.Original)
		return c
	}
	if m != nil {
		now := "now unreadable"
		if b, err := os.ReadFile(m.File); err == nil {
			now = "now " + strings.TrimSpace(string(b))
		}
		c.Detail = fmt.Sprintf("%s left lowered to %d by droprun pid %d at %s, which was killed before restoring it (%s; original %d)",
			m.File, m.Set, m.PID, m.Time.Format("2006-01-02 15:04:05Z07:00"), now, m.Original)
		c.Fix = fmt.Sprintf("echo %d > %s && rm %s (the next droprun run also does it before it starts)", m.Original, m.File, marker)
		return c
	}
	c.OK = true
	d, err := rig.FindDockerCPU(cgroupRoot)
	switch {
	case err != nil:
		c.Detail = "no leftover from an interrupted run; " + err.Error()
	case d.Old != d.Default():
		c.Detail = fmt.Sprintf("no leftover from an interrupted run; %s is %d, not docker's default %d (set by hand, or by a droprun older than its marker: echo %d > %s restores the default)",
			d.File, d.Old, d.Default(), d.Default(), d.File)
	default:
		c.Detail = fmt.Sprintf("no leftover from an interrupted run; %s is docker's default %d", d.File, d.Old)
	}
	return c
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

// hostPortsCheck checks every host port a kind cluster of nodes nodes maps:
// node k uses web+2k (web NodePort) and gateway+2k (gateway NodePort). A
// port the nodes of kind cluster reuse publish is the cluster a run will
// reuse, not a problem; one published by another container, or that
// another program listens on, is. publishers lists the containers that
// publish a port (nil without an engine).
func hostPortsCheck(web, gateway, nodes int, reuse string, publishers func(int) []publisher) Check {
	var webs, gws []string
	var ports []int
	for k := range nodes {
		webs = append(webs, strconv.Itoa(web+2*k))
		gws = append(gws, strconv.Itoa(gateway+2*k))
		ports = append(ports, web+2*k, gateway+2*k)
	}
	c := Check{Name: "host ports"}
	layout := fmt.Sprintf("127.0.0.1:%s (web) and %s (gateway), one pair per node of %d", strings.Join(webs, ","), strings.Join(gws, ","), nodes)
	var problems []string
	var published, held, reused []int
	for _, p := range ports {
		var pubs []publisher
		if publishers != nil {
			pubs = publishers(p)
		}
		var names []string
		ours := len(pubs) > 0
		for _, pub := range pubs {
			names = append(names, pub.container)
			ours = ours && pub.cluster == reuse
		}
		switch {
		case ours:
			reused = append(reused, p)
		case len(pubs) > 0:
			problems = append(problems, fmt.Sprintf("%d published by container %s", p, strings.Join(names, ", ")))
			published = append(published, p)
		default:
			if err := listenable(p); err != nil {
				problems = append(problems, fmt.Sprintf("%d in use (%v)", p, err))
				held = append(held, p)
			}
		}
	}
	if len(problems) == 0 {
		c.OK, c.Detail = true, layout+": free"
		if len(reused) > 0 {
			c.Detail = fmt.Sprintf("%s: %d published by kind cluster %s, which a run reuses (droprun cluster down frees them), the rest free", layout, len(reused), reuse)
		}
		return c
	}
	c.Detail = fmt.Sprintf("%s: %d of %d taken: %s", layout, len(problems), len(ports), strings.Join(problems, "; "))
	var fixes []string
	if len(published) > 0 {
		fixes = append(fixes, "delete the cluster that publishes them (droprun cluster down, or kind delete cluster)")
	}
	if len(held) > 0 {
		fixes = append(fixes, fmt.Sprintf("stop what listens on %s (ss -ltnp 'sport = :%d' shows the owner)", joinInts(held), held[0]))
	}
	fixes = append(fixes, "or choose other host ports (cluster.kind.hostPort/gatewayHostPort in the scenario, --host-port here): node k uses hostPort+2k and gatewayHostPort+2k")
	c.Fix = strings.Join(fixes, ", ")
	return c
}

// publisher is a container that publishes a host port, and the kind
// cluster it is a node of ("" for none).
type publisher struct{ container, cluster string }

// dockerPublishers lists the containers that publish 127.0.0.1:port (with
// the userland proxy off, docker's DNAT holds a published port without
// listening on it).
func dockerPublishers(ctx context.Context, port int) []publisher {
	out, err := exec.CommandContext(ctx, "docker", "ps", "--filter", "publish="+strconv.Itoa(port), "--format", `{{.Names}}	{{.Label "io.x-k8s.kind.cluster"}}`).Output()
	if err != nil {
		return nil
	}
	var pubs []publisher
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if name, cluster, _ := strings.Cut(line, "\t"); name != "" {
			pubs = append(pubs, publisher{name, cluster})
		}
	}
	return pubs
}

// listenable is nil when 127.0.0.1:port can be listened on, else why not.
func listenable(port int) error {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return err
	}
	return l.Close()
}

func joinInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ", ")
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
