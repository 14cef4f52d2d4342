package image

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

func randomImage(t *testing.T) v1.Image {
	t.Helper()
	img, err := random.Image(1024, 2)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// dockerSave writes a docker-save archive of images under the given tags.
func dockerSave(t *testing.T, tags map[string]v1.Image) string {
	t.Helper()
	refs := map[name.Reference]v1.Image{}
	for s, img := range tags {
		tag, err := name.NewTag(s)
		if err != nil {
			t.Fatal(err)
		}
		refs[tag] = img
	}
	p := filepath.Join(t.TempDir(), "images.tar")
	if err := tarball.MultiRefWriteToFile(p, refs); err != nil {
		t.Fatal(err)
	}
	return p
}

func configName(t *testing.T, img v1.Image) v1.Hash {
	t.Helper()
	h, err := img.ConfigName()
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestInspectDockerSave(t *testing.T) {
	p := dockerSave(t, map[string]v1.Image{"myapp:1.0": randomImage(t), "ghcr.io/o/app:2": randomImage(t)})
	a, err := Inspect(p)
	if err != nil {
		t.Fatal(err)
	}
	if a.Format != FormatDockerSave || len(a.Images) != 2 {
		t.Fatalf("format %s, %d images; want docker-save, 2", a.Format, len(a.Images))
	}
	if got, want := a.Refs(), []string{"docker.io/library/myapp:1.0", "ghcr.io/o/app:2"}; !slices.Equal(got, want) {
		t.Errorf("Refs = %q, want %q", got, want)
	}
	for ref, want := range map[string]bool{"myapp:1.0": true, "docker.io/library/myapp:1.0": true, "ghcr.io/o/app:2": true, "myapp:1.1": false, "o/app:2": false} {
		if a.Has(ref) != want {
			t.Errorf("Has(%q) = %v, want %v", ref, !want, want)
		}
	}
	// A docker-save archive is loaded as it is.
	file, done, err := a.DockerSave(context.Background(), t.TempDir())
	if err != nil || file != p {
		t.Fatalf("DockerSave = %q, %v; want the archive itself", file, err)
	}
	done()
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("done removed the user's archive: %v", err)
	}
}

func TestInspectBadArchives(t *testing.T) {
	good := dockerSave(t, map[string]v1.Image{"myapp:1": randomImage(t)})
	data, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(data)
	zw.Close()

	cases := []struct {
		name, path, want string
	}{
		{"missing", filepath.Join(dir, "nope.tar"), "does not exist"},
		{"text", write("notes.tar", []byte("these are not the images you are looking for\n")), "is not a tar archive"},
		{"empty", write("empty.tar", nil), "is empty"},
		{"gzip", write("images.tar.gz", gz.Bytes()), "gzip-compressed"},
		{"tar of something else", write("other.tar", tarOf(t, map[string][]byte{"README": []byte("hi")})), "holds neither manifest.json (docker save) nor index.json"},
		{"directory", dir, "not an OCI image layout"},
		{"corrupt layer", write("corrupt.tar", corruptLayer(t, data)), "is corrupt"},
		{"layer left out", write("partial.tar", dropEntry(t, data, ".tar.gz")), "is incomplete"},
	}
	for _, tc := range cases {
		_, err := Inspect(tc.path)
		t.Logf("%s: %v", tc.name, err)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), tc.path+": ") {
			t.Errorf("%s: Inspect = %v; want an error about %s starting with %q", tc.name, err, tc.want, tc.path)
		}
		var ae *ArchiveError
		if err != nil && (!errors.As(err, &ae) || ae.Fix == "") {
			t.Errorf("%s: %v is not an *ArchiveError with a fix", tc.name, err)
		}
	}
	// Every cut into the archive's entries is found (a cut into the last
	// entry's padding or the end-of-archive blocks loses nothing).
	for _, n := range []int{512, len(data) / 3, len(data) / 2, len(data) - 1536} {
		p := write("cut.tar", data[:n])
		if _, err := Inspect(p); err == nil {
			t.Errorf("archive cut at %d of %d bytes: Inspect accepted it", n, len(data))
		} else if !strings.Contains(err.Error(), "truncated") && !strings.Contains(err.Error(), "cut short") && !strings.Contains(err.Error(), "incomplete") {
			t.Errorf("archive cut at %d of %d bytes: %v does not say it was cut short", n, len(data), err)
		}
	}
}

func tarOf(t *testing.T, files map[string][]byte) []byte {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, n := range slices.Sorted(maps.Keys(files)) {
		if err := tw.WriteHeader(&tar.Header{Name: n, Mode: 0o644, Size: int64(len(files[n])), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		tw.Write(files[n])
	}
	tw.Close()
	return b.Bytes()
}

// rewrite copies the tar data entry by entry through edit, which returns
// the new content of an entry, or nil to leave it out.
func rewrite(t *testing.T, data []byte, edit func(name string, b []byte) []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	tr, tw := tar.NewReader(bytes.NewReader(data)), tar.NewWriter(&out)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		if b = edit(h.Name, b); b == nil {
			continue
		}
		h.Size = int64(len(b))
		tw.WriteHeader(h)
		tw.Write(b)
	}
	tw.Close()
	return out.Bytes()
}

func corruptLayer(t *testing.T, data []byte) []byte {
	return rewrite(t, data, func(n string, b []byte) []byte {
		if strings.HasSuffix(n, ".tar.gz") {
			b = slices.Clone(b)
			b[len(b)/2] ^= 0xff
		}
		return b
	})
}

func dropEntry(t *testing.T, data []byte, suffix string) []byte {
	return rewrite(t, data, func(n string, b []byte) []byte {
		if strings.HasSuffix(n, suffix) {
			return nil
		}
		return b
	})
}

// ociLayout writes an OCI layout holding three images: one named
// repository:tag by ref.name, one named by containerd's annotation beside a
// bare-tag ref.name (as Docker 25 writes them), one with only a bare tag.
func ociLayout(t *testing.T) (string, map[string]v1.Image) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "layout")
	lp, err := layout.Write(dir, empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	named := map[string]v1.Image{"docker.io/library/myapp:3": randomImage(t), "registry.local:5000/team/svc:4": randomImage(t)}
	for _, im := range []struct {
		ann map[string]string
		img v1.Image
	}{
		{map[string]string{AnnotationRefName: "myapp:3"}, named["docker.io/library/myapp:3"]},
		{map[string]string{AnnotationRefName: "4", AnnotationContainerdName: "registry.local:5000/team/svc:4"}, named["registry.local:5000/team/svc:4"]},
		{map[string]string{AnnotationRefName: "5"}, randomImage(t)},
	} {
		if err := lp.AppendImage(im.img, layout.WithAnnotations(im.ann)); err != nil {
			t.Fatal(err)
		}
	}
	return dir, named
}

func TestInspectOCILayout(t *testing.T) {
	dir, named := ociLayout(t)
	a, err := Inspect(dir)
	if err != nil {
		t.Fatal(err)
	}
	if a.Format != FormatOCILayout || len(a.Images) != 3 {
		t.Fatalf("format %s, %d images; want oci-layout, 3", a.Format, len(a.Images))
	}
	if got, want := a.Refs(), []string{"docker.io/library/myapp:3", "registry.local:5000/team/svc:4"}; !slices.Equal(got, want) {
		t.Errorf("Refs = %q, want %q", got, want)
	}
	if d := a.Describe(); !strings.Contains(d, "1 image(s) without a name (org.opencontainers.image.ref.name 5)") {
		t.Errorf("Describe = %q; want the bare-tag image listed as unnamed", d)
	}
	checkConverted(t, a, named)

	// The same layout as a tar.
	files := map[string][]byte{}
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			files[filepath.ToSlash(rel)], _ = os.ReadFile(p)
		}
		return err
	})
	tp := filepath.Join(t.TempDir(), "layout.tar")
	if err := os.WriteFile(tp, tarOf(t, files), 0o644); err != nil {
		t.Fatal(err)
	}
	at, err := Inspect(tp)
	if err != nil {
		t.Fatal(err)
	}
	if at.Format != FormatOCILayoutTar || !slices.Equal(at.Refs(), a.Refs()) {
		t.Fatalf("layout tar: format %s, refs %q; want oci-layout-tar, %q", at.Format, at.Refs(), a.Refs())
	}
	checkConverted(t, at, named)

	// A blob gone from the layout.
	for rel := range files {
		if strings.HasPrefix(rel, "blobs/") && bytes.HasPrefix(files[rel], []byte{0x1f, 0x8b}) { // a layer
			os.Remove(filepath.Join(dir, filepath.FromSlash(rel)))
			break
		}
	}
	if _, err := Inspect(dir); err == nil || !strings.Contains(err.Error(), "is incomplete") {
		t.Errorf("layout without a layer: Inspect = %v, want incomplete", err)
	}
}

// TestInspectRefusesNonRegular: a FIFO, device or link where an archive
// or a layout's blob should be is refused at once, never opened (a FIFO
// would hang the read).
func TestInspectRefusesNonRegular(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "images.tar")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Inspect(fifo); err == nil || !strings.Contains(err.Error(), "is not a regular file") {
		t.Errorf("a FIFO as the archive: %v", err)
	}
	for _, plant := range []string{"fifo", "link"} {
		dir, _ := ociLayout(t)
		var blob string
		filepath.WalkDir(filepath.Join(dir, "blobs"), func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && blob == "" {
				blob = p
			}
			return err
		})
		os.Remove(blob)
		var err error
		if plant == "fifo" {
			err = syscall.Mkfifo(blob, 0o644)
		} else {
			err = os.Symlink("/etc/hostname", blob)
		}
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Inspect(dir); err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("a %s in blobs/: %v, want refused", plant, err)
		}
	}
}

// TestInspectBounds: an archive with more files, or more small files'
// bytes, than Inspect holds at once is refused, named.
func TestInspectBounds(t *testing.T) {
	defer func(n, b int) { maxEntries, keepBudget = n, b }(maxEntries, keepBudget)
	maxEntries, keepBudget = 10, 4<<10
	files := map[string][]byte{}
	for i := range 11 {
		files[fmt.Sprintf("f%02d", i)] = nil
	}
	p := filepath.Join(t.TempDir(), "many.tar")
	os.WriteFile(p, tarOf(t, files), 0o644)
	if _, err := Inspect(p); err == nil || !strings.Contains(err.Error(), "holds more than 10 files") {
		t.Errorf("11 files: %v", err)
	}
	files = map[string][]byte{"a": bytes.Repeat([]byte("x"), 3<<10), "b": bytes.Repeat([]byte("y"), 3<<10)}
	os.WriteFile(p, tarOf(t, files), 0o644)
	if _, err := Inspect(p); err == nil || !strings.Contains(err.Error(), "that add up to more than") {
		t.Errorf("6 KiB of small files past a 4 KiB budget: %v", err)
	}
}

// checkConverted checks that DockerSave turns a into a docker-save archive
// holding every named image under its full name, and that done removes it.
func checkConverted(t *testing.T, a *Archive, named map[string]v1.Image) {
	t.Helper()
	file, done, err := a.DockerSave(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	c, err := Inspect(file)
	if err != nil {
		t.Fatalf("the converted archive: %v", err)
	}
	if c.Format != FormatDockerSave || !slices.Equal(c.Refs(), a.Refs()) {
		t.Errorf("converted: format %s, refs %q; want docker-save, %q", c.Format, c.Refs(), a.Refs())
	}
	for ref, want := range named {
		tag, _ := name.NewTag(ref)
		img, err := tarball.ImageFromPath(file, &tag)
		if err != nil {
			t.Fatalf("%s in the converted archive: %v", ref, err)
		}
		if got := configName(t, img); got != configName(t, want) {
			t.Errorf("%s: config %s, want %s", ref, got, configName(t, want))
		}
	}
	done()
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Errorf("done left %s behind (%v)", file, err)
	}
}

func TestFullName(t *testing.T) {
	for in, want := range map[string]string{
		"myapp":                       "docker.io/library/myapp:latest",
		"myapp:1.0":                   "docker.io/library/myapp:1.0",
		"docker.io/library/myapp:1.0": "docker.io/library/myapp:1.0",
		"index.docker.io/o/app:2":     "docker.io/o/app:2",
		"o/app:2":                     "docker.io/o/app:2",
		"ghcr.io/o/app:2":             "ghcr.io/o/app:2",
		"localhost:5000/app:3":        "localhost:5000/app:3",
		"podinfo:6.9.2-prestop":       "docker.io/library/podinfo:6.9.2-prestop",
	} {
		if got, err := FullName(in); err != nil || got != want {
			t.Errorf("FullName(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := FullName("Not A Name"); err == nil {
		t.Error("FullName accepted an invalid reference")
	}
}

// TestFindIn: the archive that holds a ref, by any spelling of its name;
// for a ref none holds, an error naming it in full and each archive's
// images; a bad ref is refused as such.
func TestFindIn(t *testing.T) {
	a, err := Inspect(dockerSave(t, map[string]v1.Image{"app:1": randomImage(t)}))
	if err != nil {
		t.Fatal(err)
	}
	b, err := Inspect(dockerSave(t, map[string]v1.Image{"ghcr.io/o/app:2": randomImage(t)}))
	if err != nil {
		t.Fatal(err)
	}
	archives := []*Archive{a, b}
	for ref, want := range map[string]*Archive{"app:1": a, "docker.io/library/app:1": a, "ghcr.io/o/app:2": b} {
		if got, err := FindIn(archives, ref); err != nil || got != want {
			t.Errorf("FindIn(%s) = %v, %v; want %s", ref, got, err, want.Path)
		}
	}
	_, err = FindIn(archives, "app:2")
	want := "app:2 (docker.io/library/app:2) is in none of the archives: " +
		a.Path + " holds docker.io/library/app:1; " + b.Path + " holds ghcr.io/o/app:2"
	if err == nil || err.Error() != want {
		t.Errorf("FindIn(app:2) error = %v\nwant %s", err, want)
	}
	if _, err := FindIn(archives, "Bad Ref"); err == nil || !strings.Contains(err.Error(), "is not an image reference") {
		t.Errorf("FindIn(Bad Ref) error = %v, want not an image reference", err)
	}
}

// TestInspectLinkedLayer: docker save writes a layer two images share
// once, and the second image's layer.tar is a link to the first's; a link
// out of the archive stands for nothing.
func TestInspectLinkedLayer(t *testing.T) {
	write := func(link string) string {
		var b bytes.Buffer
		tw := tar.NewWriter(&b)
		add := func(name string, data []byte) {
			if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
				t.Fatal(err)
			}
			if _, err := tw.Write(data); err != nil {
				t.Fatal(err)
			}
		}
		add("aaaa/layer.tar", []byte("layer bytes"))
		if err := tw.WriteHeader(&tar.Header{Name: "bbbb/layer.tar", Typeflag: tar.TypeSymlink, Linkname: link}); err != nil {
			t.Fatal(err)
		}
		add("manifest.json", []byte(`[{"Config":"c1.json","RepoTags":["my-service:1.1-a"],"Layers":["aaaa/layer.tar"]},`+
			`{"Config":"c2.json","RepoTags":["my-service:1.1-b"],"Layers":["bbbb/layer.tar"]}]`))
		add("c1.json", []byte(`{}`))
		add("c2.json", []byte(`{}`))
		if err := tw.Close(); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(t.TempDir(), "images.tar")
		if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	a, err := Inspect(write("../aaaa/layer.tar"))
	if err != nil || len(a.Images) != 2 || !a.Has("my-service:1.1-b") {
		t.Fatalf("a layer linked to another image's: %v, %+v", err, a)
	}
	for _, out := range []string{"../../etc/passwd", "/etc/passwd", "../cccc/layer.tar"} {
		if _, err := Inspect(write(out)); err == nil || !strings.Contains(err.Error(), "bbbb/layer.tar, which it does not hold") {
			t.Errorf("a link to %s: %v, want the layer missing", out, err)
		}
	}
}
