package image

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/droprun/droprun"
)

// BuildCloseProbe compiles the listener-close prober (apps/closeprobe),
// static, for linux/goarch, from the source embedded in droprun, and
// returns the binary: harness/closeprobe installs it in a node. It needs
// the Go toolchain, as the bookshop images do; it builds from the
// standard library alone, in seconds.
func BuildCloseProbe(ctx context.Context, goarch string) ([]byte, error) {
	return compileEmbedded(ctx, "./apps/closeprobe", "the listener-close prober", goarch)
}

// compileEmbedded compiles the main package pkg (what names it for
// messages) of the source embedded in droprun, static, for linux/goarch,
// and returns the binary.
func compileEmbedded(ctx context.Context, pkg, what, goarch string) ([]byte, error) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return nil, fmt.Errorf("building %s needs the Go toolchain, and `go` is not on PATH (install Go %s or later): %w", what, minGo, err)
	}
	work, err := os.MkdirTemp("", "droprun-build-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	dir := filepath.Join(work, "src")
	if err := droprun.ExtractSource(droprun.Source(), dir); err != nil {
		return nil, err
	}
	out := filepath.Join(work, filepath.Base(pkg))
	if err := goBuild(ctx, goBin, dir, droprun.SourceBuildEnv(), pkg, "", "linux", goarch, out); err != nil {
		return nil, err
	}
	return os.ReadFile(out)
}
