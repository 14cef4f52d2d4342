package nodeimage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// cache is the on-disk artifact cache: <root>/nodeimage/...
type cache struct{ root string }

// defaultCacheDir is os.UserCacheDir()/droprun ($XDG_CACHE_HOME/droprun or
// ~/.cache/droprun).
func defaultCacheDir() (string, error) {
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("find the user cache directory (set XDG_CACHE_HOME or Options.CacheDir): %w", err)
	}
	return filepath.Join(d, "droprun"), nil
}

func (c cache) path(elem ...string) string {
	return filepath.Join(append([]string{c.root, "nodeimage"}, elem...)...)
}

// binDir is where the binaries of one component at one version live.
func (c cache) binDir(component, version string) string {
	return c.path("bin", component+"-"+version)
}

// tmpDir makes a fresh scratch directory inside the cache (same filesystem
// as the artifacts, so a rename into place is atomic).
func (c cache) tmpDir(prefix string) (string, error) {
	base := c.path("tmp")
	if err := os.MkdirAll(base, 0o755); err != nil {
		return "", err
	}
	return os.MkdirTemp(base, prefix+"-")
}

// pruneTmp removes scratch directories that interrupted builds left behind
// (older than a day, so that a build running concurrently keeps its own).
func (c cache) pruneTmp() {
	entries, err := os.ReadDir(c.path("tmp"))
	if err != nil {
		return
	}
	for _, e := range entries {
		if fi, err := e.Info(); err == nil && time.Since(fi.ModTime()) > 24*time.Hour {
			os.RemoveAll(c.path("tmp", e.Name()))
		}
	}
}

// exists reports whether every named file exists in dir.
func exists(dir string, names ...string) bool {
	for _, n := range names {
		if _, err := os.Stat(filepath.Join(dir, n)); err != nil {
			return false
		}
	}
	return true
}

// moveInto renames each named file from src into dst (creating dst).
func moveInto(src, dst string, names ...string) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	for _, n := range names {
		if err := os.Rename(filepath.Join(src, n), filepath.Join(dst, n)); err != nil {
			return err
		}
	}
	return nil
}

// progress prints numbered step lines with their durations.
type progress struct {
	out   io.Writer
	total int
	n     int
	steps []StepResult
}

// step runs fn as the next numbered step. fn reports whether it found its
// artifacts in the cache.
func (p *progress) step(name string, fn func() (cached bool, err error)) error {
	p.n++
	fmt.Fprintf(p.out, "[%d/%d] %s ...\n", p.n, p.total, name)
	start := time.Now()
	cached, err := fn()
	d := time.Since(start)
	if err != nil {
		fmt.Fprintf(p.out, "[%d/%d] %s: failed after %s\n", p.n, p.total, name, roundDuration(d))
		return fmt.Errorf("%s: %w", name, err)
	}
	p.steps = append(p.steps, StepResult{Name: name, Cached: cached, Duration: d})
	if cached {
		fmt.Fprintf(p.out, "[%d/%d] %s: cached\n", p.n, p.total, name)
	} else {
		fmt.Fprintf(p.out, "[%d/%d] %s: built in %s\n", p.n, p.total, name, roundDuration(d))
	}
	return nil
}

func roundDuration(d time.Duration) time.Duration {
	if d > 10*time.Second {
		return d.Round(time.Second)
	}
	return d.Round(100 * time.Millisecond)
}

// runCmd runs a command, streaming nothing; on failure the error carries the
// command line and the tail of its combined output.
func runCmd(ctx context.Context, dir string, env []string, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	if env != nil {
		cmd.Env = env
	}
	var buf bytes.Buffer
	cmd.Stdout = &buf
	cmd.Stderr = &buf
	err := cmd.Run()
	if err != nil {
		return buf.String(), &cmdError{cmd: name + " " + strings.Join(args, " "), out: buf.String(), err: err}
	}
	return buf.String(), nil
}

// cmdError is a failed command with the tail of what it printed.
type cmdError struct {
	cmd string
	out string
	err error
}

func (e *cmdError) Error() string {
	out := strings.TrimSpace(e.out)
	const max = 4000
	if len(out) > max {
		out = "..." + out[len(out)-max:]
	}
	if out == "" {
		return fmt.Sprintf("%s: %v", e.cmd, e.err)
	}
	return fmt.Sprintf("%s: %v\n%s", e.cmd, e.err, out)
}

func (e *cmdError) Unwrap() error { return e.err }

// ensureDebianPackages installs the Debian packages that are missing (build
// tools such as debootstrap, gcc, libseccomp-dev).
func ensureDebianPackages(ctx context.Context, out io.Writer, pkgs ...string) error {
	var missing []string
	for _, p := range pkgs {
		st, err := exec.CommandContext(ctx, "dpkg-query", "-W", "-f=${Status}", p).Output()
		if err != nil || !strings.Contains(string(st), "install ok installed") {
			missing = append(missing, p)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	if _, err := os.Stat("/etc/debian_version"); err != nil {
		return fmt.Errorf("the node image build needs %s; this is not Debian: install them by hand", strings.Join(missing, ", "))
	}
	fmt.Fprintf(out, "      installing Debian packages: %s\n", strings.Join(missing, " "))
	env := append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	args := append([]string{"install", "-y", "--no-install-recommends"}, missing...)
	if _, err := runCmd(ctx, "", env, "apt-get", args...); err != nil {
		// A stale package list is the usual cause: update once and retry.
		if _, uerr := runCmd(ctx, "", env, "apt-get", "update"); uerr != nil {
			return errors.Join(err, uerr)
		}
		if _, err := runCmd(ctx, "", env, "apt-get", args...); err != nil {
			return fmt.Errorf("install %s: %w", strings.Join(missing, " "), err)
		}
	}
	return nil
}
