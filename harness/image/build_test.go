package image

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// moduleDir returns a temporary directory holding an empty go.mod.
func moduleDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/m\n\ngo 1.26\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestResolveDefaults(t *testing.T) {
	mod := moduleDir(t)
	o, err := resolve(BuildOptions{ModuleDir: mod, OutDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"AppPackage", o.AppPackage, "./apps/bookshop"},
		{"SleepPackage", o.SleepPackage, "./apps/bookshop/sleep"},
		{"Versions", strings.Join(o.Versions, ","), "v1,v2"},
		{"Flavours", len(o.Flavours) == 2 && o.Flavours[0] == FlavourStandard && o.Flavours[1] == FlavourDistroless, true},
		{"Platform", o.Platform, "linux/" + runtime.GOARCH},
		{"Log", o.Log, io.Discard},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
}

func TestResolveKeepsCallerSlices(t *testing.T) {
	versions := []string{"v1"}
	o, err := resolve(BuildOptions{ModuleDir: moduleDir(t), OutDir: t.TempDir(), Versions: versions})
	if err != nil {
		t.Fatal(err)
	}
	o.Versions[0] = "changed"
	if versions[0] != "v1" {
		t.Errorf("resolve shares the caller's Versions slice")
	}
}

func TestResolveRejectsBadOptions(t *testing.T) {
	mod := moduleDir(t)
	out := t.TempDir()
	tests := []struct {
		name    string
		opts    BuildOptions
		wantErr string
	}{
		{name: "module dir without go.mod", opts: BuildOptions{ModuleDir: t.TempDir(), OutDir: out}, wantErr: "no go.mod"},
		{name: "missing out dir", opts: BuildOptions{ModuleDir: mod}, wantErr: "OutDir is required"},
		{name: "unknown platform", opts: BuildOptions{ModuleDir: mod, OutDir: out, Platform: "linux/riscv64"}, wantErr: "unknown platform"},
		{name: "platform without os", opts: BuildOptions{ModuleDir: mod, OutDir: out, Platform: "amd64"}, wantErr: "unknown platform"},
		{name: "unknown flavour", opts: BuildOptions{ModuleDir: mod, OutDir: out, Flavours: []Flavour{"alpine"}}, wantErr: `unknown flavour "alpine"`},
		{name: "duplicate flavour", opts: BuildOptions{ModuleDir: mod, OutDir: out, Flavours: []Flavour{FlavourDistroless, FlavourDistroless}}, wantErr: "listed twice"},
		{name: "empty version", opts: BuildOptions{ModuleDir: mod, OutDir: out, Versions: []string{"v1", ""}}, wantErr: "Versions[1] is empty"},
		{name: "version without v", opts: BuildOptions{ModuleDir: mod, OutDir: out, Versions: []string{"1.0"}}, wantErr: "does not match"},
		{name: "version latest", opts: BuildOptions{ModuleDir: mod, OutDir: out, Versions: []string{"latest"}}, wantErr: "does not match"},
		{name: "version with slash", opts: BuildOptions{ModuleDir: mod, OutDir: out, Versions: []string{"v1/x"}}, wantErr: "does not match"},
		{name: "version with space", opts: BuildOptions{ModuleDir: mod, OutDir: out, Versions: []string{"v1 -X main.x=y"}}, wantErr: "does not match"},
		{name: "version too long", opts: BuildOptions{ModuleDir: mod, OutDir: out, Versions: []string{"v" + strings.Repeat("1", 120)}}, wantErr: "longer than"},
		{name: "duplicate version", opts: BuildOptions{ModuleDir: mod, OutDir: out, Versions: []string{"v1", "v1"}}, wantErr: "listed twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := resolve(tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("resolve error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestBuildValidatesBeforeWork(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	_, err := Build(context.Background(), BuildOptions{ModuleDir: moduleDir(t), OutDir: out, Platform: "darwin/arm64"})
	if err == nil || !strings.Contains(err.Error(), "unknown platform") {
		t.Fatalf("Build error = %v, want unknown platform", err)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("Build created %s before failing validation (stat: %v)", out, err)
	}
}

func TestSourceDateEpoch(t *testing.T) {
	tests := []struct {
		name    string
		value   string
		want    int64
		wantErr bool
	}{
		{name: "unset", value: "", want: 0},
		{name: "set", value: "1700000000", want: 1700000000},
		{name: "not a number", value: "yesterday", wantErr: true},
		{name: "negative", value: "-5", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(SourceDateEpochEnv, tt.value)
			got, err := sourceDateEpoch()
			if (err != nil) != tt.wantErr {
				t.Fatalf("error = %v, wantErr %v", err, tt.wantErr)
			}
			if err == nil && got.Unix() != tt.want {
				t.Errorf("got %d, want %d", got.Unix(), tt.want)
			}
		})
	}
}

func TestFirstRealErrorPrefersTheCause(t *testing.T) {
	cause := io.ErrUnexpectedEOF
	errs := []error{nil, context.Canceled, cause, context.Canceled}
	if got := firstRealError(errs); got != cause {
		t.Errorf("firstRealError = %v, want %v", got, cause)
	}
	if got := firstRealError([]error{nil, context.Canceled}); got != context.Canceled {
		t.Errorf("firstRealError = %v, want context.Canceled", got)
	}
	if got := firstRealError([]error{nil}); got != nil {
		t.Errorf("firstRealError = %v, want nil", got)
	}
}

func TestWriteArchiveCancelledLeavesNothing(t *testing.T) {
	img, err := Assemble([]File{{Path: WebPath, Mode: 0o755, Data: bytes.Repeat([]byte("x"), 1<<20)}}, cfgV1)
	if err != nil {
		t.Fatal(err)
	}
	tag, _ := name.NewTag("bookshop:v1")
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = writeArchive(ctx, filepath.Join(dir, "a.tar"), map[name.Reference]v1.Image{tag: img})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("writeArchive error = %v, want context.Canceled", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("dir not empty after a cancelled write: %v", entries)
	}
}

func TestBuildWithoutGoSaysSo(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := Build(context.Background(), BuildOptions{OutDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "needs the Go toolchain") || !strings.Contains(err.Error(), "`go` is not on PATH") {
		t.Fatalf("Build error = %v, want one saying the Go toolchain is needed on PATH", err)
	}
}

func TestResolveDefaultsToEmbeddedSource(t *testing.T) {
	o, err := resolve(BuildOptions{OutDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if o.Source == nil {
		t.Fatal("Source is nil without ModuleDir, want the embedded bookshop source")
	}
	if _, err := fs.Stat(o.Source, "apps/bookshop/main.go"); err != nil {
		t.Errorf("embedded source: %v", err)
	}
}
