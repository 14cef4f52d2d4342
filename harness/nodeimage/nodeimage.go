package nodeimage

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
	"sort"
	"strings"
	"time"

	"github.com/droprun/droprun"
)

// Options configure Build. The zero value builds DefaultImage.
type Options struct {
	// Image is the reference to tag the result with. Default: DefaultImage,
	// or droprun/node:<Versions.Kubernetes> when that is set.
	Image string
	// Versions pins the components; empty fields take DefaultVersions.
	Versions Versions
	// CacheDir holds every artifact. Default: os.UserCacheDir()/droprun.
	CacheDir string
	// SourceDir is a checkout of droprun's source (the module
	// github.com/droprun/droprun) to build the pod network daemon apps/cni
	// from. Default: the source embedded in the droprun binary.
	SourceDir string
	// Force rebuilds the image even when one with the same inputs exists
	// (cached artifacts are still reused).
	Force bool
	// Out receives progress lines. Default: io.Discard.
	Out io.Writer
}

// Result describes a finished Build.
type Result struct {
	Image      string        // the reference of the image
	InputsHash string        // sha256 of every input; the image's label
	UpToDate   bool          // the image already existed with these inputs: nothing was done
	Images     []string      // images preloaded into the node's containerd
	Steps      []StepResult  // each step, in order
	Duration   time.Duration // the whole build
}

// StepResult is one step of a Build.
type StepResult struct {
	Name     string
	Cached   bool // its artifacts were in the cache
	Duration time.Duration
}

// LabelInputs is the image label that carries the hash of a build's inputs.
const LabelInputs = "io.droprun.node-image.inputs"

// labelKubernetes records the Kubernetes version of an image.
const labelKubernetes = "io.droprun.node-image.kubernetes"

//go:embed manifests/*.yaml
var manifestFS embed.FS

// Exists reports whether the docker image ref exists locally.
func Exists(ctx context.Context, ref string) (bool, error) {
	_, err := inspectLabel(ctx, ref, LabelInputs)
	if errors.Is(err, ErrNoImage) {
		return false, nil
	}
	return err == nil, err
}

// ErrNoImage means an image is not in the local engine.
var ErrNoImage = errors.New("no such image")

// inspectLabel returns the value of label on the local image ref.
func inspectLabel(ctx context.Context, ref, label string) (string, error) {
	if _, err := exec.LookPath("docker"); err != nil {
		return "", fmt.Errorf("no docker CLI: install it: droprun engine setup (Debian) or install Docker: %w", err)
	}
	cmd := exec.CommandContext(ctx, "docker", "image", "inspect", "--format",
		fmt.Sprintf(`{{index .Config.Labels %q}}`, label), ref)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		msg := stderr.String()
		if strings.Contains(strings.ToLower(msg), "no such image") {
			return "", ErrNoImage
		}
		if strings.Contains(msg, "Cannot connect") || strings.Contains(msg, "Is the docker daemon running") {
			return "", fmt.Errorf("docker engine not running (start it: droprun engine setup, or dockerd): %s", strings.TrimSpace(msg))
		}
		return "", fmt.Errorf("docker image inspect %s: %w: %s", ref, err, strings.TrimSpace(msg))
	}
	v := strings.TrimSpace(string(out))
	if v == "<no value>" {
		v = ""
	}
	return v, nil
}

// Build builds the node image unless one with the same inputs exists.
func Build(ctx context.Context, opts Options) (*Result, error) {
	start := time.Now()
	out := opts.Out
	if out == nil {
		out = io.Discard
	}
	v := opts.Versions.withDefaults()
	ref, err := opts.ref(v)
	if err != nil {
		return nil, err
	}
	root, err := opts.cacheRoot()
	if err != nil {
		return nil, err
	}
	c := cache{root: root}
	src, err := findSource(opts.SourceDir)
	if err != nil {
		return nil, err
	}
	cniHash, err := src.cniHash()
	if err != nil {
		return nil, err
	}
	inputs, err := inputsHash(v, cniHash)
	if err != nil {
		return nil, err
	}
	res := &Result{Image: ref, InputsHash: inputs}
	if _, err := exec.LookPath("docker"); err != nil {
		return nil, fmt.Errorf("no docker CLI: install it: droprun engine setup (Debian) or install Docker")
	}
	if !opts.Force {
		got, err := inspectLabel(ctx, ref, LabelInputs)
		switch {
		case err == nil && got == inputs:
			res.UpToDate = true
			res.Duration = time.Since(start)
			fmt.Fprintf(out, "node image %s is up to date (inputs %s)\n", ref, inputs[:19])
			return res, nil
		case err == nil:
			fmt.Fprintf(out, "node image %s exists but was built from other inputs: rebuilding\n", ref)
		case !errors.Is(err, ErrNoImage):
			return nil, err
		}
	}
	fmt.Fprintf(out, "building node image %s (Kubernetes %s) in %s\n", ref, v.Kubernetes, c.path())
	if err := ensureDebianPackages(ctx, out, "gcc", "libc6-dev", "libseccomp-dev", "pkg-config", "debootstrap"); err != nil {
		return nil, err
	}

	c.pruneTmp()
	p := &progress{out: out, total: 14}
	b := &builder{c: c, v: v, out: out, src: src, cniHash: cniHash, inputs: inputs, ref: ref}
	defer b.cleanup()
	for _, s := range b.steps() {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		fn := s.fn
		if err := p.step(s.name(), func() (bool, error) { return fn(ctx) }); err != nil {
			return nil, fmt.Errorf("node image build: %w", err)
		}
	}
	res.Steps = p.steps
	res.Images = b.preloaded
	res.Duration = time.Since(start)
	fmt.Fprintf(out, "node image %s built in %s\n", ref, roundDuration(res.Duration))
	return res, nil
}

// ref is the image to build: Options.Image, or droprun/node:<Kubernetes
// version>, with an explicit tag other than latest.
func (o Options) ref(v Versions) (string, error) {
	ref := o.Image
	if ref == "" {
		ref = "droprun/node:" + v.Kubernetes
	}
	if strings.HasSuffix(ref, ":latest") || !strings.Contains(lastPathElem(ref), ":") {
		return "", fmt.Errorf("image %q: give an explicit tag other than latest (kind would try to pull it)", ref)
	}
	return ref, nil
}

// cacheRoot is Options.CacheDir, or the user's cache directory's.
func (o Options) cacheRoot() (string, error) {
	if o.CacheDir != "" {
		return o.CacheDir, nil
	}
	return defaultCacheDir()
}

// buildStep is one step of a build: its name for the progress lines, and
// what it does (reporting whether its cache served it).
type buildStep struct {
	name func() string
	fn   func(context.Context) (bool, error)
}

// steps are the build's steps, in order; the progress counts 14.
func (b *builder) steps() []buildStep {
	v, cniHash, ref := b.v, b.cniHash, b.ref
	return []buildStep{
		{func() string { return "kubernetes binaries " + v.Kubernetes }, b.kubernetes},
		{func() string { return "containerd " + v.Containerd }, b.component("containerd")},
		{func() string { return "runc " + v.Runc }, b.component("runc")},
		{func() string { return "crictl " + v.Crictl }, b.component("crictl")},
		{func() string { return "CNI plugins " + v.CNIPlugins }, b.component("cni-plugins")},
		{func() string { return "etcd " + b.v.Etcd }, b.component("etcd")},
		{func() string { return "CoreDNS " + b.v.CoreDNS }, b.component("coredns")},
		{func() string { return "local-path-provisioner " + v.LocalPathProvisioner }, b.component("local-path-provisioner")},
		{func() string { return "pod network daemon (apps/cni) " + cniHash[:12] }, b.cni},
		{func() string { return "pause " + imageTag(b.images.Pause) }, b.pause},
		{func() string { return "Debian " + v.DebianSuite + " root filesystem" }, b.rootfs},
		{func() string { return "node root filesystem (kind " + KindVersion + " base)" }, b.nodeRootfs},
		{func() string { return "images for the node's containerd" }, b.buildImages},
		{func() string { return "node image " + ref }, b.assemble},
	}
}

// builder carries the state of one Build between its steps.
type builder struct {
	c       cache
	v       Versions
	out     io.Writer
	src     source // droprun's source, for apps/cni
	cniHash string
	inputs  string
	ref     string

	bins      map[string]string // component => directory of its binaries
	images    kubeImages        // what kubeadm asks for
	rootfsTar string
	stage     string // scratch directory of the node root filesystem
	imageDir  string // image tarballs to preload
	preloaded []string
	cleanups  []func()
}

func (b *builder) cleanup() {
	for i := len(b.cleanups) - 1; i >= 0; i-- {
		b.cleanups[i]()
	}
}

func (b *builder) setBin(component, dir string) {
	if b.bins == nil {
		b.bins = map[string]string{}
	}
	b.bins[component] = dir
}

func (b *builder) kubernetes(ctx context.Context) (bool, error) {
	dir, cached, err := buildKubernetes(ctx, b.c, b.v, b.out)
	if err != nil {
		return false, err
	}
	b.setBin("kubernetes", dir)
	// The images kubeadm will ask for decide the etcd, CoreDNS and pause
	// versions (unless pinned).
	list, err := runCmd(ctx, "", nil, filepath.Join(dir, "kubeadm"), "config", "images", "list",
		"--kubernetes-version", b.v.Kubernetes)
	if err != nil {
		return false, err
	}
	if b.images, err = parseKubeadmImages(list); err != nil {
		return false, err
	}
	if b.v.Etcd == "" {
		b.v.Etcd = etcdModuleVersion(imageTag(b.images.Etcd))
	}
	if b.v.CoreDNS == "" {
		b.v.CoreDNS = imageTag(b.images.CoreDNS)
	}
	return cached, nil
}

func (b *builder) component(name string) func(context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) {
		for _, gb := range componentBuilds(b.v) {
			if gb.component != name {
				continue
			}
			dir, cached, err := gb.run(ctx, b.c, b.out)
			if err != nil {
				return false, err
			}
			b.setBin(name, dir)
			return cached, nil
		}
		return false, fmt.Errorf("unknown component %q", name)
	}
}

func (b *builder) cni(ctx context.Context) (bool, error) {
	dir := b.c.binDir("droprun-cni", b.cniHash[:16])
	b.setBin("droprun-cni", dir)
	if exists(dir, "droprun-cni") {
		return true, nil
	}
	tmp, err := b.c.tmpDir("droprun-cni")
	if err != nil {
		return false, err
	}
	defer os.RemoveAll(tmp)
	mod, err := b.src.moduleDir(tmp)
	if err != nil {
		return false, err
	}
	// The same environment as harness/image's build of the embedded source.
	if _, err := runCmd(ctx, mod, goEnv(append(droprun.SourceBuildEnv(), "CGO_ENABLED=0")), "go", "build", "-trimpath",
		"-ldflags=-s -w", "-o", filepath.Join(tmp, "droprun-cni"), "./apps/cni"); err != nil {
		return false, err
	}
	return false, moveInto(tmp, dir, "droprun-cni")
}

func (b *builder) pause(ctx context.Context) (bool, error) {
	dir, cached, err := buildPause(ctx, b.c, b.v.Kubernetes, imageTag(b.images.Pause))
	if err != nil {
		return false, err
	}
	b.setBin("pause", dir)
	return cached, nil
}

func (b *builder) rootfs(ctx context.Context) (bool, error) {
	tarPath, cached, err := buildRootfs(ctx, b.c, b.v.DebianSuite, b.out)
	b.rootfsTar = tarPath
	return cached, err
}

// source is droprun's own source for the pod network daemon: the checkout
// at Options.SourceDir when one is given, else the copy embedded in the
// droprun binary (droprun.Source), so an installed droprun builds the same
// daemon without a checkout.
type source struct {
	fsys fs.FS  // the module's files: go.mod, go.sum, apps/cni/...
	dir  string // the checkout on disk; "" for the embedded copy
}

// findSource returns the checkout at dir, or the embedded source when dir
// is empty.
func findSource(dir string) (source, error) {
	if dir == "" {
		return source{fsys: droprun.Source()}, nil
	}
	b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil || !strings.Contains(string(b), "module github.com/droprun/droprun\n") {
		return source{}, fmt.Errorf("source dir %s: no go.mod of github.com/droprun/droprun", dir)
	}
	return source{fsys: os.DirFS(dir), dir: dir}, nil
}

// cniHash hashes the pod network daemon's source (apps/cni).
func (s source) cniHash() (string, error) {
	h, err := hashDir(s.fsys, "apps/cni")
	if err != nil {
		return "", fmt.Errorf("read the pod network daemon's source: %w", err)
	}
	return h, nil
}

// moduleDir returns a directory holding the module to run go build in:
// the checkout, or the embedded source copied under tmp.
func (s source) moduleDir(tmp string) (string, error) {
	if s.dir != "" {
		return s.dir, nil
	}
	dst := filepath.Join(tmp, "src")
	if err := droprun.ExtractSource(s.fsys, dst); err != nil {
		return "", err
	}
	return dst, nil
}

// hashDir hashes the names and contents of the non-test Go files and
// go.mod-free sources in dir.
func hashDir(fsys fs.FS, dir string) (string, error) {
	h := sha256.New()
	var names []string
	err := fs.WalkDir(fsys, dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || strings.HasSuffix(p, "_test.go") || !strings.HasSuffix(p, ".go") {
			return nil
		}
		names = append(names, p)
		return nil
	})
	if err != nil {
		return "", err
	}
	if len(names) == 0 {
		return "", fmt.Errorf("no Go files in %s", dir)
	}
	sort.Strings(names)
	for _, n := range names {
		data, err := fs.ReadFile(fsys, n)
		if err != nil {
			return "", err
		}
		rel := strings.TrimPrefix(n, dir+"/")
		fmt.Fprintf(h, "%s %d\n", rel, len(data))
		h.Write(data)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// inputsHash covers everything that decides the image's content: the
// recipe, every version, the Debian package list, kind's version, the
// embedded manifests and the pod network daemon's source.
func inputsHash(v Versions, cniHash string) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "recipe %s\nkind %s\n", recipeVersion, KindVersion)
	fmt.Fprintf(h, "versions %+v\n", v)
	fmt.Fprintf(h, "packages %s\n", strings.Join(rootfsPackages, ","))
	fmt.Fprintf(h, "cni %s\n", cniHash)
	entries, err := fs.ReadDir(manifestFS, "manifests")
	if err != nil {
		return "", err
	}
	for _, e := range entries {
		data, err := fs.ReadFile(manifestFS, "manifests/"+e.Name())
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "manifest %s %d\n", e.Name(), len(data))
		h.Write(data)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}
