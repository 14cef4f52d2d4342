package engine

import (
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/droprun/droprun/harness/atomicfile"
)

// SetupOptions configure Setup. The zero value uses the standard paths.
type SetupOptions struct {
	// Out receives progress lines. Default: io.Discard.
	Out io.Writer
	// DaemonConfig is dockerd's configuration file.
	// Default: /etc/docker/daemon.json.
	DaemonConfig string
	// WrapperPath is where the runc wrapper is installed.
	// Default: /usr/local/bin/droprun-runc.
	WrapperPath string
	// LogPath receives dockerd's output when Setup starts it without
	// systemd. Default: /var/log/droprun-dockerd.log.
	LogPath string
	// Timeout bounds the wait for the engine to answer. Default: 60s.
	Timeout time.Duration
	// Record is where setup records each change it makes, before making
	// it, for Teardown. Default: DefaultRecord.
	Record string
}

func (o *SetupOptions) defaults() {
	if o.Out == nil {
		o.Out = io.Discard
	}
	if o.DaemonConfig == "" {
		o.DaemonConfig = "/etc/docker/daemon.json"
	}
	if o.WrapperPath == "" {
		o.WrapperPath = "/usr/local/bin/droprun-runc"
	}
	if o.LogPath == "" {
		o.LogPath = "/var/log/droprun-dockerd.log"
	}
	if o.Timeout == 0 {
		o.Timeout = 60 * time.Second
	}
	if o.Record == "" {
		o.Record = DefaultRecord
	}
}

const (
	routeLocalnetProc = "/proc/sys/net/ipv4/conf/all/route_localnet"
	sysctlFile        = "/etc/sysctl.d/99-droprun.conf"
	dockerPidFile     = "/var/run/docker.pid"
)

// Setup installs, configures and starts the docker engine on Debian, and
// checks it. Run again, it changes nothing and reports "engine ready".
// It needs root.
func Setup(ctx context.Context, opts SetupOptions) error {
	opts.defaults()
	out := opts.Out
	start := time.Now()
	if os.Geteuid() != 0 {
		return errors.New("engine setup needs root (it installs packages and configures dockerd): run it with sudo")
	}

	rec, err := ReadRecord(opts.Record)
	if err != nil {
		return err
	}
	// record saves rec before the change it describes.
	record := func() error {
		if err := rec.write(opts.Record); err != nil {
			return fmt.Errorf("recording the host change in %s before making it: %w", opts.Record, err)
		}
		return nil
	}

	// 1. Packages.
	if err := installPackages(ctx, out, func(pkgs []string) error {
		for _, p := range pkgs {
			if !slices.Contains(rec.Packages, p) {
				rec.Packages = append(rec.Packages, p)
			}
		}
		return record()
	}); err != nil {
		return err
	}

	// 2. The runc wrapper, only where CAP_SYS_RESOURCE is missing.
	needWrapper, bnd, err := needsRuncWrapper()
	if err != nil {
		return fmt.Errorf("read the capability bounding set: %w", err)
	}
	settings := daemonSettings{}
	if needWrapper {
		if err := installWrapper(ctx, out, opts.WrapperPath, bnd, func() error {
			rec.Wrapper = opts.WrapperPath
			return record()
		}); err != nil {
			return err
		}
		settings.wrapperPath = opts.WrapperPath
	}

	// 3. daemon.json, merged.
	changed, err := writeDaemonConfig(out, opts.DaemonConfig, settings, func(before FileBefore) error {
		if rec.DaemonConfig == nil {
			rec.DaemonConfig = &before
		}
		return record()
	})
	if err != nil {
		return err
	}

	// 4. route_localnet, guarded, now (never at boot, where the guard
	// would be missing).
	if err := enableRouteLocalnet(ctx, out, rec, record); err != nil {
		return err
	}

	// 5. dockerd running with this configuration.
	if err := applyDaemonConfig(ctx, out, opts.LogPath, changed); err != nil {
		return err
	}

	// 6. Wait for it and check it.
	info, err := waitEngineReady(ctx, opts, needWrapper)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "engine ready: docker %s, runtime %s, cgroup v%s (%s)\n",
		info.ServerVersion, info.DefaultRuntime, info.CgroupVersion, time.Since(start).Round(100*time.Millisecond))
	if info.CgroupVersion == "1" {
		fmt.Fprintln(out, "engine: note: cgroup v1 host: kubelet >= 1.35 needs failCgroupV1: false (droprun's node image sets it)")
	}
	return nil
}

// writeDaemonConfig merges settings into dockerd's configuration file at
// path and returns the keys it changed. Before it changes the file it
// hands what was there to record (and keeps a copy of an existing file in
// path.droprun-backup).
func writeDaemonConfig(out io.Writer, path string, settings daemonSettings, record func(FileBefore) error) ([]string, error) {
	existing, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	existed := err == nil
	merged, changed, err := mergeDaemonConfig(existing, settings)
	if err != nil {
		return nil, fmt.Errorf("%s: %w (fix the file by hand, then run setup again)", path, err)
	}
	if len(changed) == 0 {
		return nil, nil
	}
	if err := record(FileBefore{Path: path, Existed: existed, Content: string(existing)}); err != nil {
		return nil, err
	}
	if len(existing) > 0 {
		backup := path + ".droprun-backup"
		if _, err := os.Stat(backup); errors.Is(err, fs.ErrNotExist) {
			if err := os.WriteFile(backup, existing, 0o644); err != nil {
				return nil, err
			}
		}
	}
	if err := writeFileAtomic(path, merged, 0o644); err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "engine: %s: set %s\n", path, strings.Join(changed, ", "))
	return changed, nil
}

// applyDaemonConfig makes dockerd run with the configuration just written:
// it starts dockerd when it does not answer, else reloads it (SIGHUP) when
// every changed key allows that, else restarts it. Nothing changed, a
// running dockerd is left alone.
func applyDaemonConfig(ctx context.Context, out io.Writer, logPath string, changed []string) error {
	running := false
	if _, err := DockerInfo(ctx); err == nil {
		running = true
	}
	switch {
	case !running:
		return startDockerd(ctx, out, logPath)
	case len(changed) > 0 && reloadable(changed):
		fmt.Fprintln(out, "engine: reloading dockerd (SIGHUP) for the new runtime")
		return signalDockerd(syscall.SIGHUP)
	case len(changed) > 0:
		fmt.Fprintln(out, "engine: restarting dockerd for the new configuration (running containers stop)")
		return restartDockerd(ctx, out, logPath)
	}
	return nil
}

// waitEngineReady waits up to opts.Timeout for dockerd to answer docker
// info, and, where the runc wrapper is needed, to report it as its default
// runtime (a reload is applied asynchronously).
func waitEngineReady(ctx context.Context, opts SetupOptions, needWrapper bool) (*Info, error) {
	var info, last *Info
	err := waitUntil(ctx, opts.Timeout, 500*time.Millisecond, func(ctx context.Context) (bool, error) {
		i, err := DockerInfo(ctx)
		if err != nil {
			return false, nil
		}
		last = i
		if needWrapper && i.DefaultRuntime != WrapperRuntime {
			return false, nil // a reload is applied asynchronously
		}
		info = i
		return true, nil
	})
	switch {
	case err == nil:
		return info, nil
	case last == nil:
		return nil, fmt.Errorf("dockerd did not answer `docker info` (see %s): %w", opts.LogPath, err)
	default:
		return nil, fmt.Errorf("dockerd's default runtime is %q, not %q: check %s and %s", last.DefaultRuntime, WrapperRuntime, opts.DaemonConfig, opts.LogPath)
	}
}

// installPackages installs docker.io (with runc and containerd) and
// iptables from Debian when dockerd or runc is missing, after handing the
// packages to record.
func installPackages(ctx context.Context, out io.Writer, record func([]string) error) error {
	var missing []string
	for _, bin := range []string{"dockerd", "runc", "iptables"} {
		if _, err := exec.LookPath(bin); err != nil {
			missing = append(missing, bin)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	if _, err := os.Stat("/etc/debian_version"); err != nil {
		return fmt.Errorf("%s missing and this is not Debian: install Docker (engine, runc, iptables) with your distribution's packages, then run setup again", strings.Join(missing, ", "))
	}
	fmt.Fprintf(out, "engine: %s missing: apt-get install docker.io iptables\n", strings.Join(missing, ", "))
	if err := record([]string{"docker.io", "iptables"}); err != nil {
		return err
	}
	// Keep the package's maintainer scripts from starting dockerd before
	// it is configured (Debian's policy-rc.d convention); Setup starts it.
	const policy = "/usr/sbin/policy-rc.d"
	if _, err := os.Stat(policy); errors.Is(err, fs.ErrNotExist) {
		if err := os.WriteFile(policy, []byte("#!/bin/sh\n# droprun engine setup: no service starts during the install\nexit 101\n"), 0o755); err == nil {
			defer os.Remove(policy)
		}
	}
	env := append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	args := []string{"install", "-y", "--no-install-recommends", "docker.io", "iptables"}
	if _, err := run(ctx, env, "apt-get", args...); err != nil {
		fmt.Fprintln(out, "engine: apt-get install failed; updating the package lists and retrying")
		if _, err := run(ctx, env, "apt-get", "update"); err != nil {
			return fmt.Errorf("apt-get update: %w", err)
		}
		if _, err := run(ctx, env, "apt-get", args...); err != nil {
			return fmt.Errorf("apt-get install docker.io: %w", err)
		}
	}
	for _, bin := range []string{"dockerd", "runc"} {
		if _, err := exec.LookPath(bin); err != nil {
			return fmt.Errorf("%s still missing after installing docker.io", bin)
		}
	}
	return nil
}

// The runc wrapper's source, built by installWrapper.
//
//go:embed runcwrap/main.go runcwrap/wrap.go
var wrapperSource embed.FS

// wrapperSourceHash identifies the embedded wrapper source.
func wrapperSourceHash() string {
	h := sha256.New()
	names := []string{"runcwrap/main.go", "runcwrap/wrap.go"}
	sort.Strings(names)
	for _, n := range names {
		b, _ := wrapperSource.ReadFile(n)
		fmt.Fprintf(h, "%s %d\n", n, len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// installedWrapperHash asks an installed wrapper for its source hash.
func installedWrapperHash(ctx context.Context, path string) string {
	cmd := exec.CommandContext(ctx, path)
	cmd.Env = append(os.Environ(), "DROPRUN_RUNCWRAP_INFO=1")
	out, _ := cmd.Output()
	for _, f := range strings.Fields(string(out)) {
		if v, ok := strings.CutPrefix(f, "source="); ok {
			return v
		}
	}
	return ""
}

// installWrapper builds the runc wrapper from its embedded source with the
// local Go toolchain and installs it at path, unless the same version is
// there already.
func installWrapper(ctx context.Context, out io.Writer, path string, bnd uint64, record func() error) error {
	want := wrapperSourceHash()
	if installedWrapperHash(ctx, path) == want {
		return nil
	}
	fmt.Fprintf(out, "engine: CapBnd %016x lacks CAP_SYS_RESOURCE: privileged containers need the runc wrapper\n", bnd)
	goBin, err := exec.LookPath("go")
	if err != nil {
		return fmt.Errorf("building the runc wrapper needs the Go toolchain (go on PATH): %w", err)
	}
	realRunc := ""
	for _, c := range []string{"/usr/sbin/runc", "/usr/bin/runc", "/usr/local/sbin/runc"} {
		if fi, err := os.Stat(c); err == nil && fi.Mode().IsRegular() {
			realRunc = c
			break
		}
	}
	if realRunc == "" {
		return errors.New("no runc found in /usr/sbin, /usr/bin or /usr/local/sbin: install runc (Debian: apt-get install runc)")
	}
	dir, err := os.MkdirTemp("", "droprun-runcwrap-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	for _, n := range []string{"main.go", "wrap.go"} {
		b, err := wrapperSource.ReadFile("runcwrap/" + n)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, n), b, 0o644); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module droprun.local/runcwrap\n\ngo 1.22\n"), 0o644); err != nil {
		return err
	}
	bin := filepath.Join(dir, "droprun-runc")
	cmd := exec.CommandContext(ctx, goBin, "build", "-trimpath", "-o", bin,
		"-ldflags", "-s -w -X main.sourceHash="+want+" -X main.defaultRealRunc="+realRunc, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOWORK=off", "GOFLAGS=-mod=mod")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build the runc wrapper: %w: %s", err, b)
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		return err
	}
	if err := record(); err != nil {
		return err
	}
	if err := writeFileAtomic(path, data, 0o755); err != nil {
		return err
	}
	fmt.Fprintf(out, "engine: installed the runc wrapper %s (runs %s without the capabilities the host lacks)\n", path, realRunc)
	return nil
}

// enableRouteLocalnet sets net.ipv4.conf.all.route_localnet=1, after the
// localnet guard is in place, recording each change first. Only now: a
// boot-time sysctl file an earlier droprun wrote is removed, since at boot
// the guard would be missing.
func enableRouteLocalnet(ctx context.Context, out io.Writer, rec *HostRecord, record func() error) error {
	cur, err := os.ReadFile(routeLocalnetProc)
	if err != nil {
		return fmt.Errorf("read route_localnet: %w", err)
	}
	if !guardPresent(ctx) {
		rec.LocalnetGuard = true
		if err := record(); err != nil {
			return err
		}
		if err := addGuard(ctx); err != nil {
			return fmt.Errorf("adding the localnet guard (route_localnet needs it): %w", err)
		}
		fmt.Fprintln(out, "engine: iptables -t raw: drop packets to 127.0.0.0/8 from any interface but lo (the localnet guard)")
	}
	if v := strings.TrimSpace(string(cur)); v != "1" {
		if rec.RouteLocalnet == "" {
			rec.RouteLocalnet = v
		}
		if err := record(); err != nil {
			return err
		}
		if err := os.WriteFile(routeLocalnetProc, []byte("1\n"), 0o644); err != nil {
			return fmt.Errorf("sysctl -w net.ipv4.conf.all.route_localnet=1: %w", err)
		}
		fmt.Fprintln(out, "engine: sysctl net.ipv4.conf.all.route_localnet=1")
	}
	if old, err := os.ReadFile(sysctlFile); err == nil {
		if rec.SysctlFile == nil {
			rec.SysctlFile = &FileBefore{Path: sysctlFile, Existed: true, Content: string(old)}
		}
		if err := record(); err != nil {
			return err
		}
		if err := os.Remove(sysctlFile); err != nil {
			return err
		}
		fmt.Fprintf(out, "engine: removed %s (route_localnet is set with its guard, never at boot without it)\n", sysctlFile)
	}
	return nil
}

// hasSystemd reports whether systemd is the init system here.
func hasSystemd() bool {
	_, err := os.Stat("/run/systemd/system")
	return err == nil
}

// startDockerd starts the engine: through systemd where it runs, else as a
// detached background process (its own session, so it outlives the caller)
// logging to logPath.
func startDockerd(ctx context.Context, out io.Writer, logPath string) error {
	if hasSystemd() {
		fmt.Fprintln(out, "engine: systemctl enable --now docker")
		_, err := run(ctx, nil, "systemctl", "enable", "--now", "docker")
		return err
	}
	dockerd, err := exec.LookPath("dockerd")
	if err != nil {
		return fmt.Errorf("no dockerd: %w", err)
	}
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		return err
	}
	defer devnull.Close()
	// Not CommandContext: dockerd must outlive this call.
	cmd := exec.Command(dockerd)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = devnull, logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start dockerd: %w", err)
	}
	fmt.Fprintf(out, "engine: started dockerd (pid %d, log %s)\n", cmd.Process.Pid, logPath)
	return cmd.Process.Release()
}

// dockerdPid reads dockerd's pid file and checks the process is alive.
func dockerdPid() (int, error) {
	b, err := os.ReadFile(dockerPidFile)
	if err != nil {
		return 0, fmt.Errorf("find dockerd: %w", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, fmt.Errorf("%s: %w", dockerPidFile, err)
	}
	if err := syscall.Kill(pid, 0); err != nil {
		return 0, fmt.Errorf("dockerd pid %d: %w", pid, err)
	}
	return pid, nil
}

func signalDockerd(sig syscall.Signal) error {
	pid, err := dockerdPid()
	if err != nil {
		return err
	}
	return syscall.Kill(pid, sig)
}

// restartDockerd restarts the engine so it reads its configuration again.
func restartDockerd(ctx context.Context, out io.Writer, logPath string) error {
	if hasSystemd() {
		_, err := run(ctx, nil, "systemctl", "restart", "docker")
		return err
	}
	pid, err := dockerdPid()
	if err != nil {
		return err
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		return err
	}
	if err := waitUntil(ctx, 60*time.Second, 200*time.Millisecond, func(context.Context) (bool, error) {
		return syscall.Kill(pid, 0) != nil, nil
	}); err != nil {
		return fmt.Errorf("dockerd (pid %d) did not stop: %w", pid, err)
	}
	return startDockerd(ctx, out, logPath)
}

// run runs a command and returns its combined output; the error carries it.
func run(ctx context.Context, env []string, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	if env != nil {
		cmd.Env = env
	}
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if err := cmd.Run(); err != nil {
		o := strings.TrimSpace(buf.String())
		if len(o) > 3000 {
			o = "..." + o[len(o)-3000:]
		}
		return buf.String(), fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, o)
	}
	return buf.String(), nil
}

// writeFileAtomic replaces path with data, created with perm, through a
// temporary file (atomicfile).
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	return atomicfile.WriteFunc(path, perm, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}
