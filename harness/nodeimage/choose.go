package nodeimage

import (
	"github.com/droprun/droprun/harness/imageref"

	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	kinddefaults "sigs.k8s.io/kind/pkg/apis/config/defaults"
)

// Auto is the node image setting that lets droprun choose the image (see
// Selector.Choose): droprun's cached image, else kind's published one when
// a registry serves it, else droprun's image built offline.
const Auto = imageref.Auto

// PublishedImage is kind's published node image: the one kind v0.33.0
// pins by digest as its default (sigs.k8s.io/kind/pkg/apis/config/defaults).
// It runs Kubernetes v1.37.0, the same minor as DefaultKubernetesVersion:
// kind's source names no digest for v1.37.2, and a tag alone could change
// under droprun.
const PublishedImage = kinddefaults.Image

// BuildAnnouncement is printed before droprun's node image is built
// because nothing else was available.
const BuildAnnouncement = "building droprun's node image offline: about 15 min on 2 cores the first time"

// Source says where the chosen node image comes from.
type Source string

const (
	// SourceCached is droprun's own image, present with the current inputs.
	SourceCached Source = "cached"
	// SourcePublished is kind's published image, present or pullable.
	SourcePublished Source = "published"
	// SourceBuild is droprun's own image, to be built offline.
	SourceBuild Source = "build"
	// SourceGiven is an image the user named, present or pullable.
	SourceGiven Source = "given"
)

// Choice is the node image a cluster is created from, and why.
type Choice struct {
	// Image is the reference kind's nodes run.
	Image  string
	Source Source
	// Auto is true when the setting was auto.
	Auto bool
	// Present is true when the image is in the local engine.
	Present bool
	// Droprun is true when the image carries droprun's LabelInputs label:
	// droprun's pod network (apps/cni) and its host settings (kubelet
	// --fail-cgroupv1=false, containerd restrict_oom_score_adj) are built
	// in. It is decided by the image's labels, never by its name, so
	// droprun's image pushed under another name is still droprun's. Known
	// only once the image is Present.
	Droprun bool
	// Pulled and Built say what Ensure did to make the image present.
	Pulled, Built bool
	// Reason says in one line why this image, for doctor and progress.
	Reason string
}

// String describes the choice in one line: "droprun/node:v1.37.2 cached
// (auto): ...".
func (c Choice) String() string {
	how := string(c.Source)
	if c.Auto {
		how += " (auto)"
	}
	return fmt.Sprintf("%s %s: %s", c.Image, how, c.Reason)
}

// Selector chooses the node image and makes it present. The zero value
// uses the local docker engine, the registries docker would reach, and
// droprun's default versions.
type Selector struct {
	// Versions pin droprun's own image; empty fields take DefaultVersions.
	Versions Versions
	// SourceDir and CacheDir are passed to Build (see Options). SourceDir
	// also lets Choose check that a cached image has the current inputs.
	SourceDir, CacheDir string
	// ProbeTimeout bounds the check that a registry serves an image, so
	// that a machine without a registry falls through fast. Default 10 s.
	ProbeTimeout time.Duration
	// Out receives progress (pull output, the build). Default io.Discard.
	Out io.Writer

	// Seams for tests; nil means the real engine, registry and build.
	inspect func(ctx context.Context, ref string) (map[string]string, error)
	probe   func(ctx context.Context, ref string) error
	pull    func(ctx context.Context, ref string, out io.Writer) error
	build   func(ctx context.Context, o Options) (*Result, error)
}

// Choose decides which node image ref means, without pulling or building
// anything. ref is Auto (or empty) or an image reference. With Auto:
//   - droprun's own image (droprun/node:<Kubernetes version>) when the
//     local engine has it with the current inputs;
//   - else kind's PublishedImage when the engine has it or a registry
//     serves it (kind's own CNI, kindnetd, comes inside);
//   - else droprun's own image, to be built offline (BuildAnnouncement).
//
// An explicit reference is used as given: present, or pullable, or an
// error that says what to do.
func (s *Selector) Choose(ctx context.Context, ref string) (Choice, error) {
	if ref != "" && ref != Auto {
		return s.chooseGiven(ctx, ref)
	}
	own := "droprun/node:" + s.Versions.withDefaults().Kubernetes
	stale := ""
	labels, err := s.inspectImage(ctx, own)
	switch {
	case err == nil:
		want, werr := ExpectedInputs(s.SourceDir, s.Versions)
		got := labels[LabelInputs]
		switch {
		case werr != nil:
			return Choice{Image: own, Source: SourceCached, Auto: true, Present: true, Droprun: got != "",
				Reason: "droprun's node image is in the local engine (its inputs not checked: " + werr.Error() + ")"}, nil
		case got == want:
			return Choice{Image: own, Source: SourceCached, Auto: true, Present: true, Droprun: true,
				Reason: "droprun's node image is in the local engine, up to date"}, nil
		}
		stale = fmt.Sprintf("%s is in the local engine but was built from other inputs; ", own)
	case !errors.Is(err, ErrNoImage):
		return Choice{}, err
	}
	labels, err = s.inspectImage(ctx, PublishedImage)
	switch {
	case err == nil:
		return Choice{Image: PublishedImage, Source: SourcePublished, Auto: true, Present: true, Droprun: labels[LabelInputs] != "",
			Reason: stale + "kind's published node image is in the local engine; kind's own CNI (kindnetd) comes with it"}, nil
	case !errors.Is(err, ErrNoImage):
		return Choice{}, err
	}
	perr := s.probeImage(ctx, PublishedImage)
	if perr == nil {
		return Choice{Image: PublishedImage, Source: SourcePublished, Auto: true,
			Reason: stale + "a registry serves kind's published node image: it will be pulled; kind's own CNI (kindnetd) comes with it"}, nil
	}
	why := stale + "no registry reachable (" + shortErr(perr) + "): auto will build droprun's node image offline (~15 min on 2 cores the first time; `droprun node-image build` does it ahead)"
	if stale != "" {
		why = stale + "no registry reachable (" + shortErr(perr) + "): auto will rebuild droprun's node image offline (cached artifacts reused)"
	}
	return Choice{Image: own, Source: SourceBuild, Auto: true, Droprun: true, Reason: why}, nil
}

func (s *Selector) chooseGiven(ctx context.Context, ref string) (Choice, error) {
	labels, err := s.inspectImage(ctx, ref)
	switch {
	case err == nil:
		return Choice{Image: ref, Source: SourceGiven, Present: true, Droprun: labels[LabelInputs] != "",
			Reason: "named in the settings, in the local engine"}, nil
	case !errors.Is(err, ErrNoImage):
		return Choice{}, err
	}
	if strings.HasPrefix(ref, "droprun/") {
		// droprun's own names live only in local engines: no registry has them.
		return Choice{}, fmt.Errorf("node image %s is not in the local engine and no registry has droprun's images: build it with `droprun node-image build` (about 15 min on 2 cores the first time), or set nodeImage: auto", ref)
	}
	if err := s.probeImage(ctx, ref); err != nil {
		return Choice{}, fmt.Errorf("node image %s is not in the local engine and cannot be pulled (%s): docker pull it where a registry is reachable, push it to one this machine reaches, or set nodeImage: auto", ref, shortErr(err))
	}
	return Choice{Image: ref, Source: SourceGiven, Reason: "named in the settings; a registry serves it: it will be pulled"}, nil
}

// Ensure makes the chosen image present in the local engine: a no-op when
// it is, else a pull (published or given) or the offline build.
func (s *Selector) Ensure(ctx context.Context, c Choice) (Choice, error) {
	if c.Present {
		return c, nil
	}
	out := s.out()
	switch c.Source {
	case SourceBuild:
		fmt.Fprintln(out, BuildAnnouncement)
		build := s.build
		if build == nil {
			build = Build
		}
		res, err := build(ctx, Options{Image: c.Image, Versions: s.Versions, SourceDir: s.SourceDir, CacheDir: s.CacheDir, Out: out})
		if err != nil {
			return c, err
		}
		c.Present, c.Built, c.Droprun = true, !res.UpToDate, true
		c.Reason = "droprun's node image, built offline"
		return c, nil
	case SourcePublished, SourceGiven:
		fmt.Fprintf(out, "pulling node image %s\n", c.Image)
		start := time.Now()
		pull := s.pull
		if pull == nil {
			pull = dockerPull
		}
		if err := pull(ctx, c.Image, out); err != nil {
			return c, fmt.Errorf("pulling node image %s: %w (set nodeImage: auto to build droprun's offline, or pull it by hand)", c.Image, err)
		}
		labels, err := s.inspectImage(ctx, c.Image)
		if err != nil {
			return c, fmt.Errorf("node image %s after the pull: %w", c.Image, err)
		}
		c.Present, c.Pulled, c.Droprun = true, true, labels[LabelInputs] != ""
		c.Reason = fmt.Sprintf("pulled in %s", time.Since(start).Round(time.Second))
		fmt.Fprintf(out, "node image %s %s\n", c.Image, c.Reason)
		return c, nil
	}
	return c, fmt.Errorf("node image %s: nothing to do for source %q", c.Image, c.Source)
}

// Labels returns the labels of the local image ref, or ErrNoImage.
func (s *Selector) Labels(ctx context.Context, ref string) (map[string]string, error) {
	return s.inspectImage(ctx, ref)
}

func (s *Selector) out() io.Writer {
	if s.Out == nil {
		return io.Discard
	}
	return s.Out
}

func (s *Selector) inspectImage(ctx context.Context, ref string) (map[string]string, error) {
	if s.inspect != nil {
		return s.inspect(ctx, ref)
	}
	return imageLabels(ctx, ref)
}

// probeImage asks the registry of ref for its manifest (a HEAD request,
// no layers), bounded by ProbeTimeout. Registries on loopback are spoken
// to over plain HTTP, as docker does. The probe only tells whether a pull
// can work; the pull itself goes through docker (dockerPull).
func (s *Selector) probeImage(ctx context.Context, ref string) error {
	timeout := s.ProbeTimeout
	if timeout == 0 {
		timeout = 10 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if s.probe != nil {
		return s.probe(ctx, ref)
	}
	r, err := name.ParseReference(ref)
	if err != nil {
		return err
	}
	_, err = remote.Head(r, remote.WithContext(ctx))
	var te *transport.Error
	if errors.As(err, &te) && (te.StatusCode == http.StatusUnauthorized || te.StatusCode == http.StatusForbidden) {
		// The registry answers but wants credentials: the probe is
		// anonymous, docker pull applies the user's.
		return nil
	}
	return err
}

// imageLabels returns the labels of the local image ref (empty map for an
// image without labels), or ErrNoImage.
func imageLabels(ctx context.Context, ref string) (map[string]string, error) {
	// inspectLabel checks presence; one label read is enough to tell.
	v, err := inspectLabel(ctx, ref, LabelInputs)
	if err != nil {
		return nil, err
	}
	labels := map[string]string{}
	if v != "" {
		labels[LabelInputs] = v
		if k, err := inspectLabel(ctx, ref, labelKubernetes); err == nil && k != "" {
			labels[labelKubernetes] = k
		}
	}
	return labels, nil
}

// dockerPull pulls ref through the docker engine, which applies its own
// registry settings (mirrors, credentials, loopback registries over HTTP).
func dockerPull(ctx context.Context, ref string, out io.Writer) error {
	var stderr strings.Builder
	cmd := exec.CommandContext(ctx, "docker", "pull", ref)
	cmd.Stdout, cmd.Stderr = out, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("docker pull: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	return nil
}

// ExpectedInputs returns the LabelInputs value a build of versions v from
// droprun's source at sourceDir ("" = the source embedded in droprun)
// would carry.
func ExpectedInputs(sourceDir string, v Versions) (string, error) {
	src, err := findSource(sourceDir)
	if err != nil {
		return "", err
	}
	cniHash, err := src.cniHash()
	if err != nil {
		return "", err
	}
	return inputsHash(v.withDefaults(), cniHash)
}

// shortErr keeps the first line of an error, for one-line reasons.
func shortErr(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	if len(s) > 160 {
		s = s[:160] + "…"
	}
	return s
}

// CheckRef reports whether ref is a node image setting droprun accepts:
// Auto, or an image reference with an explicit tag other than latest, or
// with a digest. An untagged or latest image would make kind pull its own
// idea of the image.
func CheckRef(ref string) error { return imageref.CheckNode(ref) }
