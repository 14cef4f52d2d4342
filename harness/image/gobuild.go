package image

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// GoBuildOptions says which Go program BuildGo installs and which images
// it makes of it.
type GoBuildOptions struct {
	// Package is a main package at a module version, as `go install`
	// takes it: github.com/stefanprodan/podinfo/cmd/podinfo@v6.9.2.
	// Required; the version may be any the module proxy knows (a tag, a
	// pseudo-version, latest).
	Package string
	// Tags are the images to make, e.g. podinfo:a and podinfo:b: one image
	// per tag, the same binary in each, with the tag in the
	// org.opencontainers.image.version label so each image has its own ID
	// and a rollout from one to the other changes the pod template.
	// At least one; never :latest (Kubernetes would try to pull it).
	Tags []string
	// Out is the docker-save archive to write (for app.custom.imageArchives).
	// Required.
	Out string
	// Log receives progress lines. Default io.Discard.
	Log io.Writer
}

// GoBuildResult describes the archive BuildGo wrote.
type GoBuildResult struct {
	Archive string
	// Size is the archive's size in bytes.
	Size int64
	// Binary is where the program is in every image; it is the entrypoint.
	Binary string
	// Images are the images in the archive, in the order of Tags. Only
	// Ref, Digest, ID and Platform are set.
	Images []BuiltImage
}

// BuildGo compiles a Go program from the module proxy with `go install
// PKG@VERSION` (static: CGO_ENABLED=0, -trimpath, no build ID, for
// linux on this machine's architecture) and writes one small image per tag
// into a docker-save archive, assembled with go-containerregistry: no
// Docker daemon, registry or base image. The image holds the binary at
// /usr/local/bin/<name> (its entrypoint, run as NonRootUID), /tmp and the
// root and nonroot users; the same package and tags give the same digests.
func BuildGo(ctx context.Context, o GoBuildOptions) (*GoBuildResult, error) {
	if o.Log == nil {
		o.Log = io.Discard
	}
	pkg, version, ok := strings.Cut(o.Package, "@")
	if !ok || pkg == "" || version == "" || strings.HasPrefix(pkg, ".") || filepath.IsAbs(pkg) {
		return nil, fmt.Errorf("%q is not PKG@VERSION: name a main package at a module version, e.g. github.com/stefanprodan/podinfo/cmd/podinfo@latest", o.Package)
	}
	if len(o.Tags) == 0 {
		return nil, errors.New("no image tags: give at least one, e.g. --tag podinfo:a --tag podinfo:b (two tags that differ make rollouts alternate)")
	}
	refs := make([]name.Tag, len(o.Tags))
	seen := map[string]bool{}
	for i, t := range o.Tags {
		tag, err := name.NewTag(t)
		if err == nil && !strings.Contains(t[strings.LastIndex(t, "/")+1:], ":") {
			err = errors.New("it has no tag")
		}
		if err != nil {
			return nil, fmt.Errorf("image tag %q: %w (write it as NAME:TAG, e.g. podinfo:a)", t, err)
		}
		if tag.TagStr() == "latest" {
			return nil, fmt.Errorf("image tag %q: Kubernetes pulls :latest images from a registry; choose another tag, e.g. %s:a", t, tag.RepositoryStr())
		}
		if seen[tag.Name()] {
			return nil, fmt.Errorf("image tag %q is given twice: each tag is one image", t)
		}
		seen[tag.Name()] = true
		refs[i] = tag
	}
	if o.Out == "" {
		return nil, errors.New("no archive path: give --out FILE.tar")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		return nil, fmt.Errorf("building %s needs the Go toolchain, and `go` is not on PATH: %w", o.Package, err)
	}

	work, err := os.MkdirTemp("", "droprun-gobuild-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	platform := "linux/" + runtime.GOARCH
	fmt.Fprintf(o.Log, "go install %s (%s)\n", o.Package, platform)
	start := time.Now()
	bin, err := goInstall(ctx, goBin, o.Package, work)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(o.Log, "built %s (%d MB) in %s\n", path.Base(pkg), len(data)>>20, time.Since(start).Round(100*time.Millisecond))

	res := &GoBuildResult{Archive: o.Out, Binary: "/usr/local/bin/" + path.Base(pkg)}
	images := map[name.Reference]v1.Image{}
	for _, tag := range refs {
		img, err := goImage(data, res.Binary, o.Package, tag.TagStr())
		if err != nil {
			return nil, fmt.Errorf("assembling %s: %w", tag, err)
		}
		digest, err := img.Digest()
		if err != nil {
			return nil, err
		}
		id, err := img.ConfigName()
		if err != nil {
			return nil, err
		}
		images[tag] = img
		res.Images = append(res.Images, BuiltImage{Ref: tag.String(), Digest: digest.String(), ID: id.String(), Platform: platform})
	}
	if dir := filepath.Dir(o.Out); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
	}
	if res.Size, err = writeArchive(ctx, o.Out, images); err != nil {
		return nil, err
	}
	return res, nil
}

// goInstall runs `go install pkgAtVersion` for linux on this machine's
// architecture into a directory under work and returns the binary's path.
// The caller's go.work, GOFLAGS and current module do not apply: the
// program is built as its own module says.
func goInstall(ctx context.Context, goBin, pkgAtVersion, work string) (string, error) {
	gobin := filepath.Join(work, "bin")
	cmd := exec.CommandContext(ctx, goBin, "install", "-trimpath", "-ldflags=-s -w -buildid=", pkgAtVersion)
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "GOBIN="+gobin, "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH, "GOFLAGS=", "GOWORK=off")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return "", fmt.Errorf("go install %s: %w", pkgAtVersion, ctx.Err())
		}
		return "", fmt.Errorf("go install %s: %w\n%s\n(the package must be a main package of a module the Go module proxy serves, at a version it has)",
			pkgAtVersion, err, strings.TrimSpace(out.String()))
	}
	entries, err := os.ReadDir(gobin)
	if err != nil || len(entries) != 1 || entries[0].IsDir() {
		return "", fmt.Errorf("go install %s left no single binary in %s (%d entries, %v)", pkgAtVersion, gobin, len(entries), err)
	}
	return filepath.Join(gobin, entries[0].Name()), nil
}

// goImage is one image of a Go binary: bin at binPath as the entrypoint,
// labelled with the source package and version (the image's tag).
func goImage(bin []byte, binPath, source, version string) (v1.Image, error) {
	epoch := time.Unix(0, 0).UTC()
	var layer bytes.Buffer
	tw := tar.NewWriter(&layer)
	// Parents first, sorted, every entry owned by root and stamped with
	// the epoch, so the layer is the same byte for byte every time.
	dirs := []string{"etc/", "tmp/", "usr/", "usr/local/", "usr/local/bin/"}
	for _, d := range dirs {
		mode := int64(0o755)
		if d == "tmp/" {
			mode = 0o1777
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d, Mode: mode, ModTime: epoch, Format: tar.FormatPAX}); err != nil {
			return nil, err
		}
	}
	for _, f := range []File{{Path: "/etc/group", Mode: 0o644, Data: []byte(group)}, {Path: "/etc/passwd", Mode: 0o644, Data: []byte(passwd)}, {Path: binPath, Mode: 0o755, Data: bin}} {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: strings.TrimPrefix(f.Path, "/"), Mode: f.Mode, Size: int64(len(f.Data)), ModTime: epoch, Format: tar.FormatPAX}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.Data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layer.Bytes())), nil
	}, tarball.WithCompressedCaching)
	if err != nil {
		return nil, err
	}
	base, err := mutate.ConfigFile(empty.Image, &v1.ConfigFile{
		OS: "linux", Architecture: runtime.GOARCH, RootFS: v1.RootFS{Type: "layers"},
		Config: v1.Config{
			Entrypoint: []string{binPath},
			User:       fmt.Sprintf("%d:%d", NonRootUID, NonRootUID),
			Env:        []string{"PATH=" + PathEnv},
			WorkingDir: "/",
			Labels: map[string]string{
				"org.opencontainers.image.title":   path.Base(binPath),
				"org.opencontainers.image.version": version,
				"org.opencontainers.image.source":  source,
			},
		},
	})
	if err != nil {
		return nil, err
	}
	img, err := mutate.Append(base, mutate.Addendum{Layer: l, History: v1.History{
		Created: v1.Time{Time: epoch}, CreatedBy: "droprun image build-go", Comment: "go install " + source,
	}})
	if err != nil {
		return nil, err
	}
	return mutate.CreatedAt(img, v1.Time{Time: epoch})
}
