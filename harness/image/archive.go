package image

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"syscall"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Format is the form an image archive takes on disk.
type Format string

const (
	// FormatDockerSave is a tar with a manifest.json naming each image's
	// config, layers and tags: what `docker save`, go-containerregistry's
	// tarball.Write and droprun's image builds write, and what kind's
	// loader takes.
	FormatDockerSave Format = "docker-save"
	// FormatOCILayout is an OCI image layout directory (oci-layout,
	// index.json, blobs/), as crane, skopeo or buildah write it.
	FormatOCILayout Format = "oci-layout"
	// FormatOCILayoutTar is a tar of an OCI image layout.
	FormatOCILayoutTar Format = "oci-layout-tar"
)

// Annotations of an OCI layout's index.json that name an image.
const (
	// AnnotationRefName is the OCI reference name: repository:tag, or a
	// bare tag (skopeo's oci:DIR:TAG).
	AnnotationRefName = "org.opencontainers.image.ref.name"
	// AnnotationContainerdName is the full name containerd and Docker (25
	// and later) write next to a bare ref.name tag.
	AnnotationContainerdName = "io.containerd.image.name"
)

// Archive is what one image archive holds.
type Archive struct {
	// Path is the archive as given: a file, or an OCI layout directory.
	Path   string
	Format Format
	// Images are the images in it, in the archive's own order.
	Images []ArchiveImage
	// layout is an OCI layout's directory (Path itself, or where a layout
	// tar was unpacked by DockerSave).
	layout string
}

// ArchiveImage is one image of an archive.
type ArchiveImage struct {
	// Refs are its names, fully qualified as containerd names images on
	// a node: "myapp:1.0" is docker.io/library/myapp:1.0. Empty for an
	// image the archive holds without a usable name.
	Refs []string
	// Label is how the archive itself names the image, for messages: its
	// tags, its OCI ref.name, or its digest.
	Label string
	// digest is an OCI layout's manifest (or index) digest.
	digest v1.Hash
}

// Refs returns every name the archive holds, sorted.
func (a *Archive) Refs() []string {
	var out []string
	for _, im := range a.Images {
		out = append(out, im.Refs...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Has reports whether the archive holds an image named ref (compared
// fully qualified, so "myapp:1.0" matches docker.io/library/myapp:1.0).
func (a *Archive) Has(ref string) bool {
	full, err := FullName(ref)
	return err == nil && slices.Contains(a.Refs(), full)
}

// FindIn returns the first of archives that holds ref (Has). When none
// does, the error names ref in full and what each archive holds, for the
// caller to prefix with where ref came from (a flag, a field).
func FindIn(archives []*Archive, ref string) (*Archive, error) {
	full, err := FullName(ref)
	if err != nil {
		return nil, err
	}
	held := make([]string, len(archives))
	for i, a := range archives {
		if a.Has(ref) {
			return a, nil
		}
		held[i] = a.Path + " holds " + a.Describe()
	}
	return nil, fmt.Errorf("%s (%s) is in none of the archives: %s", ref, full, strings.Join(held, "; "))
}

// Describe lists what the archive holds, for messages: its names, and
// the images it holds without one.
func (a *Archive) Describe() string {
	var names, unnamed []string
	for _, im := range a.Images {
		if len(im.Refs) == 0 {
			unnamed = append(unnamed, im.Label)
		}
		names = append(names, im.Refs...)
	}
	slices.Sort(names)
	names = slices.Compact(names)
	var parts []string
	if len(names) > 0 {
		parts = append(parts, strings.Join(names, ", "))
	}
	if len(unnamed) > 0 {
		parts = append(parts, fmt.Sprintf("%d image(s) without a name (%s)", len(unnamed), strings.Join(unnamed, ", ")))
	}
	if len(parts) == 0 {
		return "no image"
	}
	return strings.Join(parts, "; ")
}

// FullName returns ref fully qualified the way containerd (and so a kind
// node) names it: a missing registry is docker.io, a Docker Hub name
// without a namespace is under library/, a missing tag is latest. So
// "myapp:1.0" is docker.io/library/myapp:1.0 and "ghcr.io/o/app" is
// ghcr.io/o/app:latest.
func FullName(ref string) (string, error) {
	r, err := name.ParseReference(ref)
	if err != nil {
		return "", fmt.Errorf("%q is not an image reference: %w", ref, err)
	}
	reg := r.Context().RegistryStr()
	if reg == name.DefaultRegistry {
		reg = "docker.io"
	}
	sep := ":"
	if _, ok := r.(name.Digest); ok {
		sep = "@"
	}
	return reg + "/" + r.Context().RepositoryStr() + sep + r.Identifier(), nil
}

// ArchiveError is a problem with one image archive: what is wrong and the
// fix.
type ArchiveError struct {
	Path string
	Msg  string
	Fix  string
}

func (e *ArchiveError) Error() string {
	s := e.Path + ": " + e.Msg
	if e.Fix != "" {
		s += " (fix: " + e.Fix + ")"
	}
	return s
}

func archiveErr(p, fix, format string, a ...any) *ArchiveError {
	return &ArchiveError{Path: p, Msg: fmt.Sprintf(format, a...), Fix: fix}
}

// Fixes shared by several archive errors.
const (
	fixMake      = "write it with `docker save IMAGE... -o FILE.tar`, `droprun image build-go`, or as an OCI image layout (crane, skopeo)"
	fixTruncated = "the file was cut short or changed: write it again (docker save, droprun image build-go) and copy it whole"
)

// keepLimit bounds the files Inspect keeps in memory while it reads an
// archive: manifests, configs and indexes are far smaller; layers are
// only hashed.
const keepLimit = 1 << 20

// Inspect's bounds on what it holds at once: the bytes of small files it
// keeps (an image's manifests and configs take kilobytes; small layers
// count too) and the files it lists. An archive beyond them is refused.
var (
	keepBudget = 64 << 20
	maxEntries = 100_000
)

// inspection is the files Inspect read so far, within its bounds.
type inspection struct {
	path  string
	files map[string]*archiveEntry
	kept  int
}

// add reads one file into in, or fails at a bound.
func (in *inspection) add(name string, r io.Reader) error {
	if len(in.files) >= maxEntries {
		return archiveErr(in.path, fixMake, "holds more than %d files: not an image archive droprun reads", maxEntries)
	}
	e, err := readEntry(r)
	if err != nil {
		return archiveErr(in.path, fixTruncated, "is truncated or corrupt: reading %s: %v", name, err)
	}
	if in.kept += len(e.data); in.kept > keepBudget {
		return archiveErr(in.path, fixMake, "has files under %d MiB each (manifests, configs, small layers) that add up to more than the %d MiB droprun holds while it reads: not an image archive droprun reads", keepLimit>>20, keepBudget>>20)
	}
	in.files[name] = e
	return nil
}

// archiveEntry is one file of an archive as Inspect read it.
type archiveEntry struct {
	size   int64
	digest string // sha256 hex of the content
	data   []byte // the content, when at most keepLimit bytes
}

// Inspect reads the image archive at p (a docker-save tar, an OCI image
// layout directory, or a tar of one) whole and returns the images it
// holds. It reads every byte once, checking every blob against its digest
// where the archive names one, so a missing, truncated or corrupt archive
// fails here, with what to do, rather than inside a node's containerd.
// The errors are *ArchiveError.
func Inspect(p string) (*Archive, error) {
	st, err := os.Stat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, archiveErr(p, "give the path of an image archive, relative to the scenario file (to the working directory for a shipped scenario run by name); "+fixMake, "does not exist")
	}
	if err != nil {
		return nil, archiveErr(p, "", "%v", err)
	}
	var files map[string]*archiveEntry
	switch {
	case st.IsDir():
		files, err = readLayoutDir(p)
	case !st.Mode().IsRegular():
		return nil, archiveErr(p, fixMake, "is not a regular file (%s)", st.Mode().Type())
	default:
		files, err = readArchiveTar(p)
	}
	if err != nil {
		return nil, err
	}
	a := &Archive{Path: p}
	switch {
	case files["manifest.json"] != nil:
		// Docker 25 and later write an OCI layout and a manifest.json in
		// one tar: kind's loader reads it as docker save.
		a.Format = FormatDockerSave
		err = a.readDockerSave(files)
	case files["index.json"] != nil:
		a.Format = FormatOCILayoutTar
		if st.IsDir() {
			a.Format, a.layout = FormatOCILayout, p
		}
		err = a.readLayout(files)
	case st.IsDir():
		return nil, archiveErr(p, "give an OCI image layout directory (oci-layout, index.json, blobs/) or a docker-save tar", "is a directory without index.json: not an OCI image layout")
	default:
		return nil, archiveErr(p, fixMake+"; if it was one, "+fixTruncated, "holds neither manifest.json (docker save) nor index.json (OCI image layout): it is not an image archive, or it was cut short")
	}
	if err != nil {
		return nil, err
	}
	return a, nil
}

// hexName matches a file named by a sha256 digest, as docker-save
// archives and OCI layouts name blobs: blobs/sha256/HEX, sha256:HEX (a
// config), HEX.json, HEX.tar, HEX.tar.gz, HEX.tar.zst (layers).
var hexName = regexp.MustCompile(`^(?:blobs/sha256/|sha256:)?([0-9a-f]{64})(?:\.json|\.tar|\.tar\.gz|\.tar\.zst)?$`)

// readArchiveTar reads every regular file of the tar at p, hashing each.
// A symbolic link to a file of the archive stands for that file: docker
// save writes a layer two images share once, and links the second image's
// layer.tar to it. A link leading anywhere else stands for nothing.
func readArchiveTar(p string) (map[string]*archiveEntry, error) {
	in := &inspection{path: p, files: map[string]*archiveEntry{}}
	links := map[string]string{}
	if err := eachTarFile(context.Background(), p, in.add, links); err != nil {
		return nil, err
	}
	if len(in.files)+len(links) > maxEntries {
		return nil, archiveErr(p, fixMake, "holds more than %d files and links: not an image archive droprun reads", maxEntries)
	}
	for _, name := range slices.Sorted(maps.Keys(links)) {
		target := links[name]
		for hops := 0; in.files[target] == nil && links[target] != "" && hops < 8; hops++ {
			target = links[target] // a link to a link, a few hops at most
		}
		if e := in.files[target]; e != nil && in.files[name] == nil {
			in.files[name] = e
		}
	}
	return in.files, nil
}

// eachTarFile calls fn with every regular file of the tar at p, by its
// cleaned name, in the tar's order: the one walk Inspect and DockerSave
// share. With links not nil, it also records each symbolic link that
// stays inside the archive, by name, with the name of the file it leads
// to. A gzip-compressed, empty, non-tar or truncated file is an
// *ArchiveError saying so; fn's errors pass as they are.
func eachTarFile(ctx context.Context, p string, fn func(name string, r io.Reader) error, links map[string]string) error {
	f, err := os.Open(p)
	if err != nil {
		return archiveErr(p, "", "%v", err)
	}
	defer f.Close()
	br := bufio.NewReader(f)
	if magic, _ := br.Peek(2); bytes.Equal(magic, []byte{0x1f, 0x8b}) {
		return archiveErr(p, "decompress it first (gunzip), or write it with `docker save -o FILE.tar`", "is gzip-compressed; droprun takes an uncompressed image tar")
	}
	tr := tar.NewReader(br)
	for n := 0; ; n++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		h, err := tr.Next()
		if err == io.EOF {
			if n == 0 {
				return archiveErr(p, fixMake, "is empty: not an image archive")
			}
			return nil
		}
		if err != nil {
			if n == 0 {
				return archiveErr(p, fixMake, "is not a tar archive (%v)", err)
			}
			return archiveErr(p, fixTruncated, "is truncated or corrupt: reading its entry %d: %v", n+1, err)
		}
		name := path.Clean(strings.TrimPrefix(h.Name, "./"))
		if h.Typeflag == tar.TypeSymlink && links != nil && !path.IsAbs(h.Linkname) {
			if target := path.Join(path.Dir(name), h.Linkname); target != ".." && !strings.HasPrefix(target, "../") {
				links[name] = target
			}
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		if err := fn(name, tr); err != nil {
			return err
		}
	}
}

// readLayoutDir reads an OCI layout directory's files (oci-layout,
// index.json and blobs/), hashing each. Each must be a regular file: a
// link, FIFO or device in their place is refused, never opened.
func readLayoutDir(dir string) (map[string]*archiveEntry, error) {
	in := &inspection{path: dir, files: map[string]*archiveEntry{}}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() || (rel != "index.json" && rel != "oci-layout" && !strings.HasPrefix(rel, "blobs/")) {
			return nil
		}
		f, err := openRegular(p)
		if err != nil {
			return archiveErr(dir, "an OCI layout holds regular files only: "+fixMake, "%s: %v", rel, err)
		}
		defer f.Close()
		return in.add(rel, f)
	})
	var ae *ArchiveError
	if errors.As(err, &ae) {
		return nil, err
	}
	if err != nil {
		return nil, archiveErr(dir, "", "reading the OCI layout: %v", err)
	}
	return in.files, nil
}

// openRegular opens p for reading only if it is a regular file: it
// follows no link and never blocks on a FIFO (O_NONBLOCK), and checks the
// file it opened.
func openRegular(p string) (*os.File, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, errors.New("is a symbolic link, not a regular file")
		}
		return nil, err
	}
	st, err := f.Stat()
	if err == nil && !st.Mode().IsRegular() {
		err = fmt.Errorf("is not a regular file (%s)", st.Mode().Type())
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

func readEntry(r io.Reader) (*archiveEntry, error) {
	h := sha256.New()
	var keep bytes.Buffer
	n, err := io.Copy(io.MultiWriter(h, &limitedBuffer{&keep, keepLimit}), r)
	if err != nil {
		return nil, err
	}
	e := &archiveEntry{size: n, digest: hex.EncodeToString(h.Sum(nil))}
	if n <= keepLimit {
		e.data = keep.Bytes()
	}
	return e, nil
}

// limitedBuffer keeps the first max bytes written to it and drops the
// rest, reporting every write whole.
type limitedBuffer struct {
	b   *bytes.Buffer
	max int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := l.max + 1 - l.b.Len(); room > 0 {
		l.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// checkDigests fails when a file named by a digest does not have it.
func (a *Archive) checkDigests(files map[string]*archiveEntry) error {
	for _, n := range slices.Sorted(maps.Keys(files)) {
		if m := hexName.FindStringSubmatch(n); m != nil && files[n].digest != m[1] {
			return archiveErr(a.Path, fixTruncated, "is corrupt: %s has digest sha256:%s", n, files[n].digest)
		}
	}
	return nil
}

func (a *Archive) readDockerSave(files map[string]*archiveEntry) error {
	if err := a.checkDigests(files); err != nil {
		return err
	}
	var m tarball.Manifest
	if err := json.Unmarshal(files["manifest.json"].data, &m); err != nil {
		return archiveErr(a.Path, fixTruncated, "has a manifest.json that is not docker save's: %v", err)
	}
	if len(m) == 0 {
		return archiveErr(a.Path, fixMake, "holds no image (its manifest.json is empty)")
	}
	for i, d := range m {
		for _, f := range append([]string{d.Config}, d.Layers...) {
			if files[path.Clean(f)] == nil {
				return archiveErr(a.Path, fixTruncated, "is incomplete: image %d of its manifest.json (%s) needs %s, which it does not hold", i+1, strings.Join(d.RepoTags, ", "), f)
			}
		}
		im := ArchiveImage{Label: strings.Join(d.RepoTags, ", ")}
		if im.Label == "" {
			im.Label = "config " + d.Config
		}
		for _, t := range d.RepoTags {
			if full, err := FullName(t); err == nil {
				im.Refs = append(im.Refs, full)
			}
		}
		a.Images = append(a.Images, im)
	}
	return nil
}

func (a *Archive) readLayout(files map[string]*archiveEntry) error {
	if err := a.checkDigests(files); err != nil {
		return err
	}
	var idx v1.IndexManifest
	if err := json.Unmarshal(files["index.json"].data, &idx); err != nil {
		return archiveErr(a.Path, fixTruncated, "has an index.json that is not an OCI image index: %v", err)
	}
	if len(idx.Manifests) == 0 {
		return archiveErr(a.Path, fixMake, "holds no image (its index.json lists none)")
	}
	for _, d := range idx.Manifests {
		if err := a.checkTree(files, d, 0); err != nil {
			return err
		}
		im := ArchiveImage{digest: d.Digest, Label: d.Digest.String()}
		if n := d.Annotations[AnnotationRefName]; n != "" {
			im.Label = AnnotationRefName + " " + n
		}
		if ref := layoutRef(d.Annotations); ref != "" {
			if full, err := FullName(ref); err == nil {
				im.Refs = []string{full}
			}
		}
		a.Images = append(a.Images, im)
	}
	return nil
}

// layoutRef is the name an OCI layout gives an image: containerd's full
// name when present, else ref.name when it is a reference (it holds a ':'
// or a '/'); a bare tag such as "1.0" names no repository, so no image.
func layoutRef(ann map[string]string) string {
	if n := ann[AnnotationContainerdName]; n != "" {
		return n
	}
	if n := ann[AnnotationRefName]; strings.ContainsAny(n, ":/") {
		return n
	}
	return ""
}

// checkTree checks that the blob d names is in files, with d's size, and,
// for a manifest or an index, everything it names in turn.
func (a *Archive) checkTree(files map[string]*archiveEntry, d v1.Descriptor, depth int) error {
	b := "blobs/" + d.Digest.Algorithm + "/" + d.Digest.Hex
	e := files[b]
	if e == nil {
		return archiveErr(a.Path, fixTruncated, "is incomplete: it does not hold %s (%s)", b, d.MediaType)
	}
	if e.size != d.Size {
		return archiveErr(a.Path, fixTruncated, "is corrupt: %s has %d bytes, its descriptor says %d", b, e.size, d.Size)
	}
	if depth > 4 {
		return archiveErr(a.Path, fixMake, "nests image indexes more than 4 deep")
	}
	switch d.MediaType {
	case types.OCIImageIndex, types.DockerManifestList:
		var idx v1.IndexManifest
		if err := json.Unmarshal(e.data, &idx); err != nil {
			return archiveErr(a.Path, fixTruncated, "has an image index %s that does not decode: %v", b, err)
		}
		for _, m := range idx.Manifests {
			if err := a.checkTree(files, m, depth+1); err != nil {
				return err
			}
		}
	case types.OCIManifestSchema1, types.DockerManifestSchema2:
		var m v1.Manifest
		if err := json.Unmarshal(e.data, &m); err != nil {
			return archiveErr(a.Path, fixTruncated, "has an image manifest %s that does not decode: %v", b, err)
		}
		for _, l := range append([]v1.Descriptor{m.Config}, m.Layers...) {
			if !l.MediaType.IsDistributable() {
				continue // a foreign layer, fetched by the runtime
			}
			if err := a.checkTree(files, l, depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}

// DockerSave returns a docker-save archive of a's images, the only form
// kind's loader takes: a's own path when it is one; else a file written
// under dir (os.TempDir() when empty) holding every named image of the
// OCI layout under its full name, which the caller removes by calling
// done. For an image index (several platforms), the image for the host's
// platform is the one written, as a kind node runs on the host.
func (a *Archive) DockerSave(ctx context.Context, dir string) (file string, done func(), err error) {
	if a.Format == FormatDockerSave {
		return a.Path, func() {}, nil
	}
	if err := ctx.Err(); err != nil {
		return "", nil, err
	}
	tmp, err := os.MkdirTemp(dir, "droprun-oci-")
	if err != nil {
		return "", nil, err
	}
	done = func() { os.RemoveAll(tmp) }
	defer func() {
		if err != nil {
			done()
		}
	}()
	root := a.layout
	if a.Format == FormatOCILayoutTar {
		root = filepath.Join(tmp, "layout")
		if err := unpackLayout(ctx, a.Path, root); err != nil {
			return "", nil, err
		}
	}
	lp, err := layout.FromPath(root)
	if err != nil {
		return "", nil, archiveErr(a.Path, fixMake, "is not an OCI image layout: %v", err)
	}
	idx, err := lp.ImageIndex()
	if err != nil {
		return "", nil, archiveErr(a.Path, fixMake, "%v", err)
	}
	refs := map[name.Reference]v1.Image{}
	for _, im := range a.Images {
		for _, r := range im.Refs {
			img, err := platformImage(idx, im.digest)
			if err != nil {
				return "", nil, archiveErr(a.Path, fixMake, "image %s: %v", r, err)
			}
			tag, err := name.NewTag(r)
			if err != nil {
				return "", nil, archiveErr(a.Path, "name images by tag (repository:tag)", "image %s: only tags can be loaded: %v", r, err)
			}
			refs[tag] = img
		}
	}
	if len(refs) == 0 {
		return "", nil, archiveErr(a.Path, "name each image of the layout in its index.json: annotation "+AnnotationRefName+": REPOSITORY:TAG", "holds no named image: %s", a.Describe())
	}
	file = filepath.Join(tmp, "images.tar")
	if err := tarball.MultiRefWriteToFile(file, refs); err != nil {
		return "", nil, fmt.Errorf("converting %s to a docker-save archive: %w", a.Path, err)
	}
	return file, done, nil
}

// platformImage is the image the index archiveEntry h names: itself, or, for a
// nested index, its image for the host's platform.
func platformImage(idx v1.ImageIndex, h v1.Hash) (v1.Image, error) {
	m, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	for _, d := range m.Manifests {
		if d.Digest != h {
			continue
		}
		if !d.MediaType.IsIndex() {
			return idx.Image(h)
		}
		child, err := idx.ImageIndex(h)
		if err != nil {
			return nil, err
		}
		cm, err := child.IndexManifest()
		if err != nil {
			return nil, err
		}
		want := v1.Platform{OS: "linux", Architecture: runtime.GOARCH}
		for _, c := range cm.Manifests {
			if c.Platform != nil && c.Platform.Satisfies(want) && c.MediaType.IsImage() {
				return child.Image(c.Digest)
			}
		}
		return nil, fmt.Errorf("its index has no image for %s", want.String())
	}
	return nil, fmt.Errorf("%s is not in the layout's index.json", h)
}

// unpackLayout writes the OCI layout files of the tar at p (oci-layout,
// index.json, blobs/ALG/HEX; nothing else, so no entry can escape root)
// into root.
func unpackLayout(ctx context.Context, p, root string) error {
	blob := regexp.MustCompile(`^blobs/[a-z0-9]+/[0-9a-f]+$`)
	return eachTarFile(ctx, p, func(n string, r io.Reader) error {
		if n != "oci-layout" && n != "index.json" && !blob.MatchString(n) {
			return nil
		}
		dst := filepath.Join(root, filepath.FromSlash(n))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		out, err := os.Create(dst)
		if err != nil {
			return err
		}
		_, err = io.Copy(out, r)
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("unpacking %s from %s: %w", n, p, err)
		}
		return nil
	}, nil)
}
