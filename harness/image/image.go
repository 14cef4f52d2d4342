package image

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"maps"
	"path"
	"slices"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// Flavour selects what an image ships besides the app binary.
type Flavour string

const (
	// FlavourStandard ships /bin/sleep next to the app, so an exec preStop
	// hook such as `sleep 5` works.
	FlavourStandard Flavour = "standard"
	// FlavourDistroless ships only the app: an exec preStop hook `sleep 5`
	// fails because there is no sleep binary, which is the trap droprun
	// demonstrates.
	FlavourDistroless Flavour = "distroless"
)

// Fixed facts about every bookshop image, for the code that writes the
// Kubernetes manifests (container port, securityContext, preStop hook).
const (
	// Repository is the image name, without registry or tag.
	Repository = "bookshop"
	// WebPath is where the app binary lives; it is the entrypoint.
	WebPath = "/usr/local/bin/web"
	// SleepPath is where FlavourStandard images ship the sleep binary.
	SleepPath = "/bin/sleep"
	// NonRootUID is the uid and gid the images run as (user "nonroot", as
	// in the distroless base images).
	NonRootUID = 65532
	// Port is the TCP port the image declares as exposed.
	Port = 8080
	// PathEnv is the PATH the image config sets.
	PathEnv = "/usr/local/bin:/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin"
)

// Ref returns the tag of the image for version and flavour:
// "bookshop:v1" for FlavourStandard and "bookshop:v1-distroless" for
// FlavourDistroless; any other flavour f gives "bookshop:v1-<f>". Ref never
// returns ":latest", so Kubernetes defaults to imagePullPolicy IfNotPresent
// and uses the image loaded into the kind nodes. Ref does not validate its
// inputs; Build does.
func Ref(version string, f Flavour) string {
	if f == FlavourStandard {
		return Repository + ":" + version
	}
	return Repository + ":" + version + "-" + string(f)
}

// File is a regular file to put in an image's layer.
type File struct {
	// Path is the absolute path in the image, such as "/usr/local/bin/web".
	Path string
	// Mode holds the permission bits (for example 0o755); no type bits.
	Mode int64
	// Data is the file's content.
	Data []byte
}

// ImageConfig holds what varies between the images Assemble produces.
type ImageConfig struct {
	// Platform is "linux/amd64" or "linux/arm64"; it sets the config's OS
	// and Architecture.
	Platform string
	// Version is the app version, recorded in the
	// org.opencontainers.image.version label. Required.
	Version string
	// Created is the time written to the config, the history entry and
	// every tar header. The zero value means the Unix epoch. It is
	// truncated to whole seconds.
	Created time.Time
	// Entrypoint is the command the image runs. Default [WebPath].
	Entrypoint []string
	// ExposedPorts are the ports the config declares, such as "8080/tcp".
	// nil means bookshop's Port/tcp; an empty, non-nil slice declares none.
	ExposedPorts []string
	// Labels are added to the config's labels and may replace the
	// defaults: org.opencontainers.image.title (Repository) and
	// org.opencontainers.image.version (Version).
	Labels map[string]string
}

// Assemble builds a single-layer image from files, on top of a minimal
// root filesystem: every parent directory of the files, /tmp (mode 1777),
// and /etc/passwd and /etc/group that define root and nonroot (NonRootUID)
// with home /home/nonroot. The config runs cfg.Entrypoint (default
// WebPath) as NonRootUID, exposes cfg.ExposedPorts (default Port/tcp),
// sets PATH to PathEnv, the working directory to "/", the OCI title and
// version labels and cfg.Labels.
//
// Assemble is pure: the same files and cfg always give the same digest.
// Tar entries are sorted, owned by root (except /home/nonroot, owned by
// nonroot), and stamped with cfg.Created. Files must have distinct, clean,
// absolute paths that do not clash with the root filesystem it adds.
func Assemble(files []File, cfg ImageConfig) (v1.Image, error) {
	osName, arch, err := parsePlatform(cfg.Platform)
	if err != nil {
		return nil, err
	}
	if cfg.Version == "" {
		return nil, fmt.Errorf("image config: version is empty")
	}
	created := cfg.Created
	if created.IsZero() {
		created = time.Unix(0, 0)
	}
	created = created.UTC().Truncate(time.Second)

	entrypoint := cfg.Entrypoint
	if entrypoint == nil {
		entrypoint = []string{WebPath}
	}
	ports := map[string]struct{}{fmt.Sprintf("%d/tcp", Port): {}}
	if cfg.ExposedPorts != nil {
		ports = map[string]struct{}{}
		for _, p := range cfg.ExposedPorts {
			ports[p] = struct{}{}
		}
	}
	labels := map[string]string{
		"org.opencontainers.image.title":   Repository,
		"org.opencontainers.image.version": cfg.Version,
	}
	maps.Copy(labels, cfg.Labels)

	layerTar, err := layerTar(files, created)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithCompressedCaching)
	if err != nil {
		return nil, fmt.Errorf("creating layer: %w", err)
	}

	base, err := mutate.ConfigFile(empty.Image, &v1.ConfigFile{
		OS:           osName,
		Architecture: arch,
		RootFS:       v1.RootFS{Type: "layers"},
		Config: v1.Config{
			Entrypoint:   slices.Clone(entrypoint),
			User:         fmt.Sprintf("%d:%d", NonRootUID, NonRootUID),
			ExposedPorts: ports,
			Env:          []string{"PATH=" + PathEnv},
			WorkingDir:   "/",
			Labels:       labels,
		},
	})
	if err != nil {
		return nil, fmt.Errorf("setting image config: %w", err)
	}
	img, err := mutate.Append(base, mutate.Addendum{
		Layer: layer,
		History: v1.History{
			Created:   v1.Time{Time: created},
			CreatedBy: "droprun harness/image",
			Comment:   labels["org.opencontainers.image.title"] + " " + cfg.Version + ": " + strings.Join(filePaths(files), " "),
		},
	})
	if err != nil {
		return nil, fmt.Errorf("appending layer: %w", err)
	}
	img, err = mutate.CreatedAt(img, v1.Time{Time: created})
	if err != nil {
		return nil, fmt.Errorf("setting creation time: %w", err)
	}
	// Compute the digest now so that a problem surfaces here rather than
	// while the archive is being written.
	if _, err := img.Digest(); err != nil {
		return nil, fmt.Errorf("computing image digest: %w", err)
	}
	return img, nil
}

// Files returns the files Build puts in an image of flavour f: web at
// WebPath and, for FlavourStandard only, sleep at SleepPath.
func Files(f Flavour, web, sleep []byte) ([]File, error) {
	files := []File{{Path: WebPath, Mode: 0o755, Data: web}}
	switch f {
	case FlavourStandard:
		files = append(files, File{Path: SleepPath, Mode: 0o755, Data: sleep})
	case FlavourDistroless:
	default:
		return nil, fmt.Errorf("unknown flavour %q (want %q or %q)", f, FlavourStandard, FlavourDistroless)
	}
	return files, nil
}

const (
	passwd = "root:x:0:0:root:/root:/sbin/nologin\n" +
		"nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"
	group = "root:x:0:\n" +
		"nonroot:x:65532:\n"
)

// entry is one tar header plus its content.
type entry struct {
	hdr  tar.Header
	data []byte
}

// layerTar returns the uncompressed layer: files plus the root filesystem
// skeleton, sorted by name, every header stamped with mtime.
func layerTar(files []File, mtime time.Time) ([]byte, error) {
	entries := map[string]entry{}
	dir := func(name string, mode int64, uid int) {
		entries[name] = entry{hdr: tar.Header{Typeflag: tar.TypeDir, Name: name, Mode: mode, Uid: uid, Gid: uid}}
	}
	reg := func(name string, mode int64, data []byte) {
		entries[name] = entry{hdr: tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(data))}, data: data}
	}
	dir("tmp/", 0o1777, 0)
	dir("etc/", 0o755, 0)
	dir("home/", 0o755, 0)
	dir("home/nonroot/", 0o700, NonRootUID)
	reg("etc/passwd", 0o644, []byte(passwd))
	reg("etc/group", 0o644, []byte(group))

	seen := map[string]bool{}
	for _, f := range files {
		name, err := cleanPath(f.Path)
		if err != nil {
			return nil, err
		}
		if f.Mode&^0o7777 != 0 {
			return nil, fmt.Errorf("file %s: mode %#o has bits other than permissions", f.Path, f.Mode)
		}
		if seen[name] {
			return nil, fmt.Errorf("file %s: listed twice", f.Path)
		}
		seen[name] = true
		if _, clash := entries[name]; clash {
			return nil, fmt.Errorf("file %s: clashes with the base filesystem", f.Path)
		}
		if _, clash := entries[name+"/"]; clash {
			return nil, fmt.Errorf("file %s: clashes with a directory", f.Path)
		}
		reg(name, f.Mode, f.Data)
	}
	// Parent directories of the files; a file may not be a parent.
	for name := range seen {
		for d := path.Dir(name); d != "."; d = path.Dir(d) {
			if e, ok := entries[d]; ok && e.hdr.Typeflag == tar.TypeReg {
				return nil, fmt.Errorf("file /%s: is also a parent directory", d)
			}
			if _, ok := entries[d+"/"]; !ok {
				dir(d+"/", 0o755, 0)
			}
		}
	}

	names := make([]string, 0, len(entries))
	for name := range entries {
		names = append(names, name)
	}
	slices.Sort(names)

	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, name := range names {
		e := entries[name]
		e.hdr.ModTime = mtime
		if err := tw.WriteHeader(&e.hdr); err != nil {
			return nil, fmt.Errorf("writing tar header %s: %w", name, err)
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, fmt.Errorf("writing tar entry %s: %w", name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("closing layer tar: %w", err)
	}
	return buf.Bytes(), nil
}

// cleanPath turns an absolute image path into a tar entry name.
func cleanPath(p string) (string, error) {
	if !strings.HasPrefix(p, "/") || path.Clean(p) != p || p == "/" {
		return "", fmt.Errorf("file path %q: want a clean absolute path such as /usr/local/bin/web", p)
	}
	return strings.TrimPrefix(p, "/"), nil
}

func filePaths(files []File) []string {
	paths := make([]string, len(files))
	for i, f := range files {
		paths[i] = f.Path
	}
	slices.Sort(paths)
	return paths
}

// parsePlatform splits and checks a platform string.
func parsePlatform(p string) (osName, arch string, err error) {
	switch p {
	case "linux/amd64", "linux/arm64":
		osName, arch, _ = strings.Cut(p, "/")
		return osName, arch, nil
	default:
		return "", "", fmt.Errorf("unknown platform %q (want linux/amd64 or linux/arm64)", p)
	}
}
