package image

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/droprun/droprun"
	"github.com/droprun/droprun/harness/atomicfile"
)

// BuildOptions says what Build compiles and where it writes the archive.
// Zero values take the documented defaults.
type BuildOptions struct {
	// ModuleDir is the root of a Go module (the directory holding go.mod)
	// that contains AppPackage and SleepPackage: a droprun checkout with
	// edited bookshop source, or a test's own module. Default: Source.
	ModuleDir string
	// Source is the module Build extracts into a temporary directory and
	// compiles when ModuleDir is empty. Default droprun.Source(),
	// the bookshop source embedded in this binary, so an installed droprun
	// builds its images from any directory.
	Source fs.FS
	// AppPackage is the app's main package, relative to ModuleDir.
	// Default "./apps/bookshop". It should declare `var version string`,
	// which Build sets with -X main.version=<version>.
	AppPackage string
	// SleepPackage is the `sleep SECONDS` main package, relative to
	// ModuleDir. Default "./apps/bookshop/sleep". Built only when a
	// FlavourStandard image is requested.
	SleepPackage string
	// Versions are the app versions to build, each matching
	// ^v[0-9A-Za-z.-]+$. Default v1 and v2.
	Versions []string
	// Flavours are the image flavours to assemble for every version.
	// Default FlavourStandard and FlavourDistroless.
	Flavours []Flavour
	// Platform is "linux/amd64" or "linux/arm64". Default linux/ plus the
	// architecture droprun itself runs on (runtime.GOARCH).
	Platform string
	// OutDir receives the archive bookshop-<os>-<arch>.tar; it is created
	// if missing. Required.
	OutDir string
	// Log receives one progress line per step. Default io.Discard.
	Log io.Writer
}

// BuildResult describes the archive Build wrote.
type BuildResult struct {
	// Archive is the path of the docker-save tarball holding every image.
	Archive string
	// Images lists the images in the archive, by version then flavour in
	// the order of BuildOptions.
	Images []BuiltImage
}

// BuiltImage is one image in the archive.
type BuiltImage struct {
	// Ref is the image's tag, as returned by Ref (for example bookshop:v1).
	Ref string
	// Digest is the manifest digest computed by go-containerregistry
	// (sha256:...). containerd writes its own manifest when it imports a
	// docker-save archive, so the digest Kubernetes reports may differ;
	// compare ID instead.
	Digest string
	// ID is the image ID: the digest of the image config (sha256:...). It
	// survives `ctr images import` unchanged and is what `crictl images`
	// shows.
	ID string
	// Version is the app version stamped into the binary and the label.
	Version string
	// Flavour is the image flavour.
	Flavour Flavour
	// Platform is the image's os/arch, such as linux/amd64.
	Platform string
}

// SourceDateEpochEnv names the environment variable that, when set to a
// Unix time in seconds, replaces the Unix epoch as the timestamp of every
// image Build assembles.
const SourceDateEpochEnv = "SOURCE_DATE_EPOCH"

var versionRE = regexp.MustCompile(`^v[0-9A-Za-z.-]+$`)

// maxVersionLen keeps the longest tag within the 128 characters allowed.
const maxVersionLen = 128 - len("-") - len(FlavourDistroless)

// Build cross-compiles the app for every version and the sleep program with
// the local Go toolchain, assembles one image per version and flavour with
// Assemble, and writes them all to OutDir/bookshop-<os>-<arch>.tar in
// docker-save format, ready for `kind load image-archive`. The archive is
// written to a temporary file in OutDir and renamed into place, so an
// interrupted build never leaves a partial archive at the final path.
//
// Build validates opts before doing any work. Cancelling ctx stops the
// compilers and the archive write.
func Build(ctx context.Context, opts BuildOptions) (*BuildResult, error) {
	start := time.Now()
	o, err := resolve(opts)
	if err != nil {
		return nil, fmt.Errorf("image build options: %w", err)
	}
	created, err := sourceDateEpoch()
	if err != nil {
		return nil, err
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		return nil, fmt.Errorf("building the bookshop images needs the Go toolchain, and `go` is not on PATH (install Go %s or later from https://go.dev/dl/ and put its bin directory on PATH): %w", minGo, err)
	}
	log := &syncWriter{w: o.Log}

	work, err := os.MkdirTemp("", "droprun-image-")
	if err != nil {
		return nil, fmt.Errorf("creating build directory: %w", err)
	}
	defer os.RemoveAll(work)

	var env []string
	if o.ModuleDir == "" {
		o.ModuleDir = filepath.Join(work, "src")
		if err := droprun.ExtractSource(o.Source, o.ModuleDir); err != nil {
			return nil, err
		}
		env = droprun.SourceBuildEnv()
		if opts.Source == nil {
			fmt.Fprintf(log, "building from the bookshop source embedded in droprun\n")
		}
	}

	bins, err := compileAll(ctx, goBin, o, env, work, log)
	if err != nil {
		return nil, err
	}

	result := &BuildResult{}
	refs := map[name.Reference]v1.Image{}
	for _, v := range o.Versions {
		for _, f := range o.Flavours {
			files, err := Files(f, bins.web[v], bins.sleep)
			if err != nil {
				return nil, err
			}
			ref := Ref(v, f)
			img, err := Assemble(files, ImageConfig{Platform: o.Platform, Version: v, Created: created})
			if err != nil {
				return nil, fmt.Errorf("assembling %s: %w", ref, err)
			}
			built, err := describe(img, ref, v, o.Platform)
			if err != nil {
				return nil, err
			}
			built.Flavour = f
			tag, err := name.NewTag(ref)
			if err != nil {
				return nil, fmt.Errorf("tag %s: %w", ref, err)
			}
			refs[tag] = img
			result.Images = append(result.Images, built)
			fmt.Fprintf(log, "assembled %s %s\n", ref, built.Digest)
		}
	}

	archive := filepath.Join(o.OutDir, fmt.Sprintf("%s-%s.tar", Repository, strings.ReplaceAll(o.Platform, "/", "-")))
	size, err := writeArchive(ctx, archive, refs)
	if err != nil {
		return nil, err
	}
	result.Archive = archive
	fmt.Fprintf(log, "wrote %s (%.1f MiB, %d images) in %s\n",
		archive, float64(size)/(1<<20), len(result.Images), time.Since(start).Round(time.Millisecond))
	return result, nil
}

// resolve checks opts and fills in the defaults.
func resolve(opts BuildOptions) (BuildOptions, error) {
	o := opts
	if o.ModuleDir != "" {
		if _, err := os.Stat(filepath.Join(o.ModuleDir, "go.mod")); err != nil {
			return o, fmt.Errorf("ModuleDir %s: no go.mod: %w", o.ModuleDir, err)
		}
	} else if o.Source == nil {
		o.Source = droprun.Source()
	}
	if o.OutDir == "" {
		return o, errors.New("OutDir is required")
	}
	if o.AppPackage == "" {
		o.AppPackage = "./apps/bookshop"
	}
	if o.SleepPackage == "" {
		o.SleepPackage = "./apps/bookshop/sleep"
	}
	if len(o.Versions) == 0 {
		o.Versions = []string{"v1", "v2"}
	}
	if len(o.Flavours) == 0 {
		o.Flavours = []Flavour{FlavourStandard, FlavourDistroless}
	}
	if o.Platform == "" {
		o.Platform = "linux/" + runtime.GOARCH
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	if _, _, err := parsePlatform(o.Platform); err != nil {
		return o, fmt.Errorf("Platform: %w", err)
	}
	for i, v := range o.Versions {
		switch {
		case v == "":
			return o, fmt.Errorf("Versions[%d] is empty", i)
		case !versionRE.MatchString(v):
			return o, fmt.Errorf("Versions[%d] %q does not match %s", i, v, versionRE)
		case len(v) > maxVersionLen:
			return o, fmt.Errorf("Versions[%d] is longer than %d characters", i, maxVersionLen)
		case slices.Contains(o.Versions[:i], v):
			return o, fmt.Errorf("Versions[%d] %q is listed twice", i, v)
		}
	}
	for i, f := range o.Flavours {
		if f != FlavourStandard && f != FlavourDistroless {
			return o, fmt.Errorf("Flavours[%d]: unknown flavour %q (want %q or %q)", i, f, FlavourStandard, FlavourDistroless)
		}
		if slices.Contains(o.Flavours[:i], f) {
			return o, fmt.Errorf("Flavours[%d] %q is listed twice", i, f)
		}
	}
	// Own copies, so the caller's slices are never shared.
	o.Versions = slices.Clone(o.Versions)
	o.Flavours = slices.Clone(o.Flavours)
	return o, nil
}

// sourceDateEpoch returns the timestamp for every image: SOURCE_DATE_EPOCH
// when set, otherwise the Unix epoch.
func sourceDateEpoch() (time.Time, error) {
	s, ok := os.LookupEnv(SourceDateEpochEnv)
	if !ok || s == "" {
		return time.Unix(0, 0).UTC(), nil
	}
	sec, err := strconv.ParseInt(s, 10, 64)
	if err != nil || sec < 0 {
		return time.Time{}, fmt.Errorf("%s=%q: want a non-negative Unix time in seconds", SourceDateEpochEnv, s)
	}
	return time.Unix(sec, 0).UTC(), nil
}

// binaries holds the compiled programs: the app per version, and sleep
// (nil when no FlavourStandard image is requested).
type binaries struct {
	web   map[string][]byte
	sleep []byte
}

// compileAll runs the go builds (the first alone, the rest concurrently)
// and reads the outputs back. The first failure cancels the others.
func compileAll(ctx context.Context, goBin string, o BuildOptions, env []string, work string, log io.Writer) (*binaries, error) {
	osName, arch, _ := parsePlatform(o.Platform)
	type job struct {
		what, pkg, version, out string
	}
	var jobs []job
	for _, v := range o.Versions {
		jobs = append(jobs, job{"web " + v, o.AppPackage, v, filepath.Join(work, "web-"+v)})
	}
	if slices.Contains(o.Flavours, FlavourStandard) {
		jobs = append(jobs, job{"sleep", o.SleepPackage, "", filepath.Join(work, "sleep")})
	}

	run := func(ctx context.Context, j job) error {
		fmt.Fprintf(log, "building %s for %s...\n", j.what, o.Platform)
		return goBuild(ctx, goBin, o.ModuleDir, env, j.pkg, j.version, osName, arch, j.out)
	}
	// The first build alone compiles the dependencies into the Go build
	// cache: concurrent go commands would each compile them again. The
	// others then only compile the main package and link, concurrently.
	if err := run(ctx, jobs[0]); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make([]error, len(jobs)-1)
	var wg sync.WaitGroup
	for i, j := range jobs[1:] {
		wg.Go(func() {
			if errs[i] = run(ctx, j); errs[i] != nil {
				cancel()
			}
		})
	}
	wg.Wait()
	// Report the error that caused the others to be cancelled.
	if err := firstRealError(errs); err != nil {
		return nil, err
	}

	bins := &binaries{web: map[string][]byte{}}
	for _, j := range jobs {
		data, err := os.ReadFile(j.out)
		if err != nil {
			return nil, fmt.Errorf("reading %s binary: %w", j.what, err)
		}
		if j.version == "" {
			bins.sleep = data
		} else {
			bins.web[j.version] = data
		}
	}
	return bins, nil
}

// firstRealError prefers an error that is not a cancellation, because a
// failed build cancels its siblings.
func firstRealError(errs []error) error {
	var first error
	for _, err := range errs {
		if err == nil {
			continue
		}
		if !errors.Is(err, context.Canceled) {
			return err
		}
		if first == nil {
			first = err
		}
	}
	return first
}

// goBuild compiles one static binary. An empty version skips -X. env is
// added to droprun's environment.
func goBuild(ctx context.Context, goBin, dir string, env []string, pkg, version, goos, goarch, out string) error {
	ldflags := "-s -w -buildid="
	if version != "" {
		ldflags += " -X main.version=" + version
	}
	args := []string{"build", "-trimpath", "-buildvcs=false", "-ldflags=" + ldflags, "-o", out, pkg}
	cmd := exec.CommandContext(ctx, goBin, args...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), env...), "CGO_ENABLED=0", "GOOS="+goos, "GOARCH="+goarch)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.Stdout = &stderr
	if err := cmd.Run(); err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return fmt.Errorf("go build %s: %w", pkg, ctxErr)
		}
		return &compileError{pkg: pkg, platform: goos + "/" + goarch, dir: dir, output: strings.TrimSpace(stderr.String()), err: err}
	}
	return nil
}

// minGo is the Go release the embedded go.mod asks for, for the message
// when no toolchain is found.
const minGo = "1.26"

// compileError is a failed go build, carrying the compiler's output.
type compileError struct {
	pkg, platform, dir, output string
	err                        error
}

func (e *compileError) Error() string {
	return fmt.Sprintf("go build %s (%s) in %s: %v\n%s", e.pkg, e.platform, e.dir, e.err, e.output)
}

func (e *compileError) Unwrap() error { return e.err }

// writeArchive writes refs as a docker-save tarball to path atomically
// (atomicfile: a temporary file in the same directory, renamed into
// place), and returns the archive's size.
func writeArchive(ctx context.Context, path string, refs map[name.Reference]v1.Image) (int64, error) {
	var size int64
	err := atomicfile.WriteFunc(path, 0o644, func(w io.Writer) error {
		// MultiRefWrite is what tarball.MultiRefWriteToFile calls; writing
		// through our own writer lets us honour ctx and count the bytes.
		cw := &countingWriter{w: w}
		if err := tarball.MultiRefWrite(refs, &ctxWriter{ctx: ctx, w: cw}); err != nil {
			return err
		}
		size = cw.n
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("writing archive %s: %w", path, err)
	}
	return size, nil
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// ctxWriter fails writes once ctx is done, so a cancelled Build stops
// writing the archive.
type ctxWriter struct {
	ctx context.Context
	w   io.Writer
}

func (c *ctxWriter) Write(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.w.Write(p)
}

// syncWriter serialises writes from concurrent builds.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
