package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
)

// TeardownOptions configure Teardown. The zero value uses the standard
// paths.
type TeardownOptions struct {
	// Out receives a line per change undone. Default: io.Discard.
	Out io.Writer
	// Record is setup's record of its changes. Default: DefaultRecord.
	Record string
	// LogPath receives dockerd's output when Teardown restarts it
	// without systemd. Default: /var/log/droprun-dockerd.log.
	LogPath string
	// RemovePackages removes the packages setup installed (apt-get
	// remove); without it they stay, and the record keeps them.
	RemovePackages bool
}

// Teardown undoes every change engine setup recorded, newest first, so the
// host's settings are as they were before droprun: route_localnet back to
// its value, then the localnet guard removed (never route_localnet=1
// without it), a sysctl file put back, dockerd's configuration restored
// and dockerd restarted on it, the runc wrapper removed, and with
// RemovePackages the packages setup installed. It refuses while kind
// nodes run: dockerd restarts, and without the wrapper they could not
// start again. It needs root.
func Teardown(ctx context.Context, o TeardownOptions) error {
	o.defaults()
	if os.Geteuid() != 0 {
		return errors.New("engine teardown needs root (it restores dockerd's configuration and sysctls): run it with sudo")
	}
	rec, err := ReadRecord(o.Record)
	if err != nil {
		return err
	}
	if len(rec.Changes()) == 0 {
		fmt.Fprintf(o.Out, "engine: nothing to undo (%s records no change)\n", o.Record)
		return nil
	}
	if err := refuseWhileKindRuns(ctx); err != nil {
		return err
	}
	t := &teardown{o: o, rec: rec}
	if err := t.sysctls(ctx); err != nil {
		return err
	}
	if err := t.dockerd(ctx); err != nil {
		return err
	}
	if len(rec.Packages) > 0 && !o.RemovePackages {
		fmt.Fprintf(o.Out, "engine: kept the packages setup installed (%s): droprun engine teardown --remove-packages removes them\n", strings.Join(rec.Packages, ", "))
		return rec.write(o.Record)
	}
	if len(rec.Packages) > 0 {
		env := append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		if _, err := run(ctx, env, "apt-get", append([]string{"remove", "-y"}, rec.Packages...)...); err != nil {
			return err
		}
		fmt.Fprintf(o.Out, "engine: apt-get remove %s\n", strings.Join(rec.Packages, " "))
	}
	if err := os.Remove(o.Record); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	fmt.Fprintln(o.Out, "engine: every change droprun engine setup made is undone")
	return nil
}

func (o *TeardownOptions) defaults() {
	if o.Out == nil {
		o.Out = io.Discard
	}
	if o.Record == "" {
		o.Record = DefaultRecord
	}
	if o.LogPath == "" {
		o.LogPath = "/var/log/droprun-dockerd.log"
	}
}

// refuseWhileKindRuns refuses a teardown while kind node containers run:
// it restarts dockerd without droprun's runc wrapper, and they could not
// start again.
func refuseWhileKindRuns(ctx context.Context) error {
	if _, err := DockerInfo(ctx); err != nil {
		return nil // no engine answering: no node running on it
	}
	ids, err := run(ctx, nil, "docker", "ps", "-q", "--filter", "label=io.x-k8s.kind.cluster")
	if err != nil {
		return fmt.Errorf("listing kind node containers: %w", err)
	}
	if n := len(strings.Fields(ids)); n > 0 {
		return fmt.Errorf("%d kind node container(s) are running: delete their clusters first (droprun cluster down; kind get clusters lists them): teardown restarts dockerd without droprun's runc wrapper", n)
	}
	return nil
}

// teardown undoes a host record's changes one by one.
type teardown struct {
	o   TeardownOptions
	rec *HostRecord
}

// undone clears a change from the record once it is undone, and saves
// the record, so a teardown that stops halfway resumes where it was.
func (t *teardown) undone(clear func()) error {
	clear()
	return t.rec.write(t.o.Record)
}

// sysctls puts route_localnet back, then removes the localnet guard
// (never route_localnet=1 without it), then puts the sysctl file back.
func (t *teardown) sysctls(ctx context.Context) error {
	rec, out := t.rec, t.o.Out
	if rec.RouteLocalnet != "" {
		if err := os.WriteFile(routeLocalnetProc, []byte(rec.RouteLocalnet+"\n"), 0o644); err != nil {
			return fmt.Errorf("restoring route_localnet=%s: %w", rec.RouteLocalnet, err)
		}
		fmt.Fprintf(out, "engine: sysctl net.ipv4.conf.all.route_localnet=%s (as before setup)\n", rec.RouteLocalnet)
		if err := t.undone(func() { rec.RouteLocalnet = "" }); err != nil {
			return err
		}
	}
	if rec.LocalnetGuard {
		if guardPresent(ctx) {
			if err := removeGuard(ctx); err != nil {
				return err
			}
			fmt.Fprintln(out, "engine: removed the localnet guard from iptables' raw table")
		}
		if err := t.undone(func() { rec.LocalnetGuard = false }); err != nil {
			return err
		}
	}
	if f := rec.SysctlFile; f != nil {
		if err := restoreFile(*f); err != nil {
			return err
		}
		fmt.Fprintf(out, "engine: put back %s\n", f.Path)
		return t.undone(func() { rec.SysctlFile = nil })
	}
	return nil
}

// dockerd puts dockerd's configuration back and restarts it on it, then
// removes the runc wrapper.
func (t *teardown) dockerd(ctx context.Context) error {
	rec, out := t.rec, t.o.Out
	if f := rec.DaemonConfig; f != nil {
		if err := restoreFile(*f); err != nil {
			return err
		}
		_ = os.Remove(f.Path + ".droprun-backup")
		what := "put back"
		if !f.Existed {
			what = "removed"
		}
		fmt.Fprintf(out, "engine: %s %s\n", what, f.Path)
		if _, err := DockerInfo(ctx); err == nil {
			fmt.Fprintln(out, "engine: restarting dockerd on its own configuration")
			if err := restartDockerd(ctx, out, t.o.LogPath); err != nil {
				return fmt.Errorf("restarting dockerd: %w", err)
			}
		}
		if err := t.undone(func() { rec.DaemonConfig = nil }); err != nil {
			return err
		}
	}
	if rec.Wrapper != "" {
		if err := os.Remove(rec.Wrapper); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		fmt.Fprintf(out, "engine: removed %s\n", rec.Wrapper)
		return t.undone(func() { rec.Wrapper = "" })
	}
	return nil
}

// restoreFile puts f back as it was: its content, or no file.
func restoreFile(f FileBefore) error {
	if !f.Existed {
		if err := os.Remove(f.Path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	return writeFileAtomic(f.Path, []byte(f.Content), 0o644)
}
