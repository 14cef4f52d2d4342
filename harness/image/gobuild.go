package image

import (
	"bytes"
	"context"
	"encoding/json"
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
)

// GoBuildOptions says which Go program BuildGo installs and which images
// it makes of it.
type GoBuildOptions struct {
	// Package is a main package at a module version, as `go install`
	// takes it: github.com/stefanprodan/podinfo/cmd/podinfo@v1.8.1-0.20250910200901-e86405a8674e.
	// Required; the version may be any the module proxy knows (a tag, a
	// pseudo-version, latest) and go install accepts: a v2+ tag of a
	// module without /vN in its path is refused.
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
	// Binary is where the program is in every image; it is the entrypoint,
	// named as go install named it (…/bar/v2 gives bar).
	Binary string
	// Images are the images in the archive, in the order of Tags. Only
	// Ref, Digest, ID and Platform are set.
	Images []BuiltImage
}

// BuildGo compiles a Go program from the module proxy with `go install
// PKG@VERSION` (static: CGO_ENABLED=0, -trimpath, no build ID, for
// linux on this machine's architecture) and writes one small image per tag
// into a docker-save archive, assembled by Assemble: no Docker daemon,
// registry or base image. The image holds the binary at
// /usr/local/bin/<name> (its entrypoint, run as NonRootUID) on Assemble's
// root filesystem; the same package and tags give the same digests, with
// timestamps from SOURCE_DATE_EPOCH as for Build.
func BuildGo(ctx context.Context, o GoBuildOptions) (*GoBuildResult, error) {
	if o.Log == nil {
		o.Log = io.Discard
	}
	pkg, version, ok := strings.Cut(o.Package, "@")
	if !ok || pkg == "" || version == "" || strings.HasPrefix(pkg, ".") || filepath.IsAbs(pkg) {
		return nil, fmt.Errorf("%q is not PKG@VERSION: name a main package at a module version, e.g. github.com/stefanprodan/podinfo/cmd/podinfo@v1.8.1-0.20250910200901-e86405a8674e", o.Package)
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
	created, err := sourceDateEpoch()
	if err != nil {
		return nil, err
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
	bin, err := goInstall(ctx, goBin, o.Package, runtime.GOARCH, work)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(o.Log, "built %s (%d MB) in %s\n", filepath.Base(bin), len(data)>>20, time.Since(start).Round(100*time.Millisecond))

	res := &GoBuildResult{Archive: o.Out, Binary: "/usr/local/bin/" + filepath.Base(bin)}
	images := map[name.Reference]v1.Image{}
	for _, tag := range refs {
		img, err := goImage(data, res.Binary, o.Package, tag.TagStr(), platform, created)
		if err != nil {
			return nil, fmt.Errorf("assembling %s: %w", tag, err)
		}
		built, err := describe(img, tag.String(), "", platform)
		if err != nil {
			return nil, err
		}
		images[tag] = img
		res.Images = append(res.Images, built)
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

// CachedGo returns a docker-save archive of o.Package's images (o.Tags),
// built by BuildGo into dir (default: droprun/fronts in the user's cache
// directory) the first time and kept: meant for a tagged release, whose
// source never changes. o.Out is ignored; the archive is named after the
// first tag. A build cut short leaves no archive behind.
func CachedGo(ctx context.Context, o GoBuildOptions, dir string) (string, error) {
	if len(o.Tags) == 0 {
		return "", errors.New("no image tags")
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	if dir == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			return "", err
		}
		dir = filepath.Join(cache, "droprun", "fronts")
	}
	file := filepath.Join(dir, strings.NewReplacer("/", "_", ":", "_").Replace(o.Tags[0])+".tar")
	if fi, err := os.Stat(file); err == nil && fi.Mode().IsRegular() {
		fmt.Fprintf(o.Log, "using %s (cached; delete it to rebuild)\n", file)
		return file, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	o.Out = fmt.Sprintf("%s.%d.partial", file, os.Getpid())
	defer os.Remove(o.Out)
	if _, err := BuildGo(ctx, o); err != nil {
		return "", err
	}
	if err := os.Rename(o.Out, file); err != nil {
		return "", err
	}
	return file, nil
}

// goInstall runs `go install pkgAtVersion` for linux/goarch and returns
// the binary it produced. It installs into a GOPATH of its own under work
// with GOBIN unset, because go install refuses to cross-compile (droprun
// on macOS, say) while GOBIN is set; the module and build caches stay the
// user's. The caller's go.work, GOFLAGS and current module do not apply:
// the program is built as its own module says.
func goInstall(ctx context.Context, goBin, pkgAtVersion, goarch, work string) (string, error) {
	gopath := filepath.Join(work, "gopath")
	env, err := installEnv(ctx, goBin, work, gopath)
	if err != nil {
		return "", err
	}
	env = append(env, "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+goarch, "GOFLAGS=", "GOWORK=off")
	cmd := exec.CommandContext(ctx, goBin, "install", "-trimpath", "-ldflags=-s -w -buildid=", pkgAtVersion)
	cmd.Dir = work
	cmd.Env = env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return "", fmt.Errorf("go install %s: %w", pkgAtVersion, ctx.Err())
		}
		if !strings.Contains(strings.Join(strings.Fields(out.String()), " "), replaceRefusal) { // go wraps the message
			return "", fmt.Errorf("go install %s: %w\n%s\n(the package must be a main package of a module the Go module proxy serves, at a version it has)",
				pkgAtVersion, err, strings.TrimSpace(out.String()))
		}
		// A module with replace directives (Traefik's, say) builds only
		// as the main module: in a copy of its own source.
		return buildInModule(ctx, goBin, env, pkgAtVersion, work)
	}
	// go install writes $GOPATH/bin/NAME, or $GOPATH/bin/linux_ARCH/NAME
	// when it cross-compiles.
	bin := filepath.Join(gopath, "bin")
	if cross := filepath.Join(bin, "linux_"+goarch); isDir(cross) {
		bin = cross
	}
	entries, err := os.ReadDir(bin)
	var files []string
	for _, e := range entries {
		if e.Type().IsRegular() {
			files = append(files, e.Name())
		}
	}
	if err != nil || len(files) != 1 {
		return "", fmt.Errorf("go install %s left no single binary in %s (found %q, %v)", pkgAtVersion, bin, files, err)
	}
	return filepath.Join(bin, files[0]), nil
}

// replaceRefusal is how go install refuses a package whose module's go.mod
// has replace directives (cmd/go: "The go.mod file for the module providing
// named packages contains one or more replace directives").
const replaceRefusal = "contains one or more replace directives"

// buildInModule builds pkgAtVersion the way its module's own maintainers
// do: it downloads the module that holds the package from the module proxy
// (go mod download, trying the package path and each parent), copies its
// source under work, and runs go build there, so the module's go.mod,
// replace directives included, is the main module's. The binary is named
// as go install would name it.
func buildInModule(ctx context.Context, goBin string, env []string, pkgAtVersion, work string) (string, error) {
	pkg, version, _ := strings.Cut(pkgAtVersion, "@")
	var mod struct{ Path, Dir, Error string }
	var tried []string
	for cand := pkg; ; cand = path.Dir(cand) {
		cmd := exec.CommandContext(ctx, goBin, "mod", "download", "-json", cand+"@"+version)
		cmd.Dir, cmd.Env = work, env
		out, _ := cmd.Output() // a failure is reported in the JSON's Error
		mod.Path, mod.Dir, mod.Error = "", "", ""
		if json.Unmarshal(out, &mod) == nil && mod.Error == "" && mod.Dir != "" {
			mod.Path = cand
			break
		}
		if ctx.Err() != nil {
			return "", fmt.Errorf("go mod download %s@%s: %w", cand, version, ctx.Err())
		}
		tried = append(tried, cand)
		if !strings.Contains(cand, "/") {
			break
		}
	}
	if mod.Path == "" {
		return "", fmt.Errorf("go install %s: its module has replace directives, and no module holding it could be downloaded at %s (tried %s)", pkgAtVersion, version, strings.Join(tried, ", "))
	}
	src := filepath.Join(work, "src")
	if err := os.CopyFS(src, os.DirFS(mod.Dir)); err != nil {
		return "", fmt.Errorf("copying %s@%s's source: %w", mod.Path, version, err)
	}
	rel := "." + strings.TrimPrefix(pkg, mod.Path)
	bin := filepath.Join(work, "bin", goInstallName(pkg))
	cmd := exec.CommandContext(ctx, goBin, "build", "-trimpath", "-ldflags=-s -w -buildid=", "-o", bin, rel)
	// -mod=mod: a go.sum the module left incomplete is filled in (and
	// checked against the checksum database) rather than refused.
	cmd.Dir, cmd.Env = src, append(env, "GOFLAGS=-mod=mod")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return "", fmt.Errorf("go build %s in %s@%s: %w", rel, mod.Path, version, ctx.Err())
		}
		return "", fmt.Errorf("go build %s in %s@%s (its module has replace directives, so droprun builds it in a copy of its source): %w\n%s",
			rel, mod.Path, version, err, strings.TrimSpace(out.String()))
	}
	return bin, nil
}

// goInstallName is the name go install gives a main package's binary: its
// last path element, or the one before a major-version suffix (…/bar/v2
// gives bar).
func goInstallName(pkg string) string {
	base := path.Base(pkg)
	if len(base) > 1 && base[0] == 'v' && strings.Trim(base[1:], "0123456789") == "" {
		if parent := path.Base(path.Dir(pkg)); parent != "." && parent != "/" {
			return parent
		}
	}
	return base
}

// installEnv is the caller's environment for goInstall with GOPATH set to
// gopath, GOBIN unset, and GOMODCACHE and GOCACHE set to the caller's own
// (which GOPATH would otherwise move). A GOBIN set with `go env -w` is
// dropped from a copy of the go env file, written under work.
func installEnv(ctx context.Context, goBin, work, gopath string) ([]string, error) {
	// Without GOBIN in the environment, a GOBIN go env reports comes from
	// the go env file.
	var base, env []string
	for _, kv := range os.Environ() {
		switch k, _, _ := strings.Cut(kv, "="); k {
		case "GOBIN": // in neither
		case "GOPATH", "GOMODCACHE", "GOCACHE", "GOENV": // set below
			base = append(base, kv)
		default:
			base = append(base, kv)
			env = append(env, kv)
		}
	}
	cmd := exec.CommandContext(ctx, goBin, "env", "-json", "GOMODCACHE", "GOCACHE", "GOENV", "GOBIN")
	cmd.Dir = work
	cmd.Env = base
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go env: %w\n%s", err, strings.TrimSpace(stderr.String()))
	}
	var ge struct{ GOMODCACHE, GOCACHE, GOENV, GOBIN string }
	if err := json.Unmarshal(out, &ge); err != nil {
		return nil, fmt.Errorf("go env -json: %w", err)
	}
	if ge.GOMODCACHE == "" || ge.GOCACHE == "" || ge.GOCACHE == "off" {
		return nil, fmt.Errorf("go env reports GOMODCACHE=%q GOCACHE=%q: building needs both (unset GOCACHE=off)", ge.GOMODCACHE, ge.GOCACHE)
	}
	env = append(env, "GOPATH="+gopath, "GOMODCACHE="+ge.GOMODCACHE, "GOCACHE="+ge.GOCACHE)
	goenv := ge.GOENV
	if ge.GOBIN != "" && ge.GOENV != "" && ge.GOENV != "off" {
		b, err := os.ReadFile(ge.GOENV)
		if err != nil {
			return nil, fmt.Errorf("go env reports GOBIN=%s from %s, which droprun cannot read to drop it: %w", ge.GOBIN, ge.GOENV, err)
		}
		var kept []string
		for _, line := range strings.Split(string(b), "\n") {
			if k, _, _ := strings.Cut(line, "="); strings.TrimSpace(k) != "GOBIN" {
				kept = append(kept, line)
			}
		}
		goenv = filepath.Join(work, "goenv")
		if err := os.WriteFile(goenv, []byte(strings.Join(kept, "\n")), 0o644); err != nil {
			return nil, err
		}
	}
	if goenv != "" {
		env = append(env, "GOENV="+goenv)
	}
	return env, nil
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// goImage is one image of a Go binary: bin at binPath as the entrypoint
// on Assemble's root filesystem, labelled with its name, the source
// package and version (the image's tag). It declares no port: the
// program's is unknown.
func goImage(bin []byte, binPath, source, version, platform string, created time.Time) (v1.Image, error) {
	return Assemble([]File{{Path: binPath, Mode: 0o755, Data: bin}}, ImageConfig{
		Platform:     platform,
		Version:      version,
		Created:      created,
		Entrypoint:   []string{binPath},
		ExposedPorts: []string{},
		Labels: map[string]string{
			"org.opencontainers.image.title":  path.Base(binPath),
			"org.opencontainers.image.source": source,
		},
	})
}
