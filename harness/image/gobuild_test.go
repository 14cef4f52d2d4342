package image

import (
	"archive/zip"
	"bytes"
	"context"
	"debug/elf"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// PodinfoPackage is the real service the end-to-end tests build.
const PodinfoPackage = "github.com/stefanprodan/podinfo/cmd/podinfo@v1.8.1-0.20250910200901-e86405a8674e"

func TestBuildGoRefusesBadInput(t *testing.T) {
	out := filepath.Join(t.TempDir(), "x.tar")
	for _, tc := range []struct {
		name string
		o    GoBuildOptions
		want string
	}{
		{"no version", GoBuildOptions{Package: "github.com/x/y", Tags: []string{"y:a"}, Out: out}, "is not PKG@VERSION"},
		{"local path", GoBuildOptions{Package: "./cmd/y@v1", Tags: []string{"y:a"}, Out: out}, "is not PKG@VERSION"},
		{"no tags", GoBuildOptions{Package: "github.com/x/y@v1.0.0", Out: out}, "no image tags"},
		{"no tag in a tag", GoBuildOptions{Package: "github.com/x/y@v1.0.0", Tags: []string{"y"}, Out: out}, `image tag "y"`},
		{"latest", GoBuildOptions{Package: "github.com/x/y@v1.0.0", Tags: []string{"y:latest"}, Out: out}, "pulls :latest"},
		{"twice", GoBuildOptions{Package: "github.com/x/y@v1.0.0", Tags: []string{"y:a", "y:a"}, Out: out}, "given twice"},
		{"no out", GoBuildOptions{Package: "github.com/x/y@v1.0.0", Tags: []string{"y:a"}}, "--out"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := BuildGo(context.Background(), tc.o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestGoImage: the same binary and tag give the same image; another tag
// gives another image ID, so a rollout between them changes the pods. The
// image is Assemble's: sorted entries, /home/nonroot, the given time.
func TestGoImage(t *testing.T) {
	bin := []byte("\x7fELF not really")
	created := time.Unix(1700000000, 0).UTC()
	img := func(tag string) v1.Image {
		t.Helper()
		im, err := goImage(bin, "/usr/local/bin/app", "example.com/app@v1", tag, "linux/arm64", created)
		if err != nil {
			t.Fatal(err)
		}
		return im
	}
	a1, a2, b := img("a"), img("a"), img("b")
	ida1, _ := a1.ConfigName()
	ida2, _ := a2.ConfigName()
	idb, _ := b.ConfigName()
	if ida1 != ida2 {
		t.Errorf("the same input gave two images: %s, %s", ida1, ida2)
	}
	if ida1 == idb {
		t.Errorf("tags a and b gave the same image ID %s", ida1)
	}
	cf, err := b.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	wantLabels := map[string]string{
		"org.opencontainers.image.title":   "app",
		"org.opencontainers.image.version": "b",
		"org.opencontainers.image.source":  "example.com/app@v1",
	}
	if got := cf.Config.Entrypoint; !slices.Equal(got, []string{"/usr/local/bin/app"}) || !maps.Equal(cf.Config.Labels, wantLabels) {
		t.Errorf("config: entrypoint %v, labels %v; want [/usr/local/bin/app], %v", got, cf.Config.Labels, wantLabels)
	}
	if len(cf.Config.ExposedPorts) != 0 || cf.Architecture != "arm64" || !cf.Created.Time.Equal(created) {
		t.Errorf("config: ports %v, architecture %s, created %v; want none, arm64, %v", cf.Config.ExposedPorts, cf.Architecture, cf.Created, created)
	}
	hdrs, _, order := layerEntries(t, b)
	want := []string{"etc/", "etc/group", "etc/passwd", "home/", "home/nonroot/", "tmp/", "usr/", "usr/local/", "usr/local/bin/", "usr/local/bin/app"}
	if !slices.Equal(order, want) {
		t.Errorf("entries\n got %v\nwant %v", order, want)
	}
	if h := hdrs["usr/local/bin/app"]; h == nil || h.Mode != 0o755 || !h.ModTime.Equal(created) {
		t.Errorf("binary entry %+v: want mode 0755 stamped %v", h, created)
	}
}

// fakeProxy lays out a GOPROXY=file:// module proxy serving one module
// version whose root is a main package, and points go at it (no checksum
// database: the module is made up).
func fakeProxy(t *testing.T, module, version string) {
	t.Helper()
	fakeProxyOf(t, proxyModule{module, version, map[string]string{
		"go.mod":  "module " + module + "\n\ngo 1.21\n",
		"main.go": "package main\n\nfunc main() { println(\"hello\") }\n",
	}})
}

// proxyModule is one module version a fake proxy serves: its files by
// path, go.mod among them.
type proxyModule struct {
	path, version string
	files         map[string]string
}

// fakeProxyOf lays out a GOPROXY=file:// module proxy serving mods and
// points go at it.
func fakeProxyOf(t *testing.T, mods ...proxyModule) {
	t.Helper()
	dir := t.TempDir()
	for _, m := range mods {
		vdir := filepath.Join(dir, filepath.FromSlash(m.path), "@v")
		if err := os.MkdirAll(vdir, 0o755); err != nil {
			t.Fatal(err)
		}
		var zbuf bytes.Buffer
		zw := zip.NewWriter(&zbuf)
		for name, data := range m.files {
			w, err := zw.Create(m.path + "@" + m.version + "/" + name)
			if err != nil {
				t.Fatal(err)
			}
			io.WriteString(w, data)
		}
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		for name, data := range map[string][]byte{
			"list":              []byte(m.version + "\n"),
			m.version + ".info": []byte(`{"Version":"` + m.version + `","Time":"2024-01-01T00:00:00Z"}`),
			m.version + ".mod":  []byte(m.files["go.mod"]),
			m.version + ".zip":  zbuf.Bytes(),
		} {
			if err := os.WriteFile(filepath.Join(vdir, name), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Setenv("GOPROXY", "file://"+filepath.ToSlash(dir))
	t.Setenv("GOSUMDB", "off")
	t.Setenv("GONOSUMDB", "")
	t.Setenv("GOFLAGS", "")
}

// TestGoInstallMajorVersion: a module at …/bar/v2 installs as "bar",
// the file go install produced, not "v2"; SOURCE_DATE_EPOCH stamps the
// image as it does bookshop's.
func TestGoInstallMajorVersion(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go install")
	}
	fakeProxy(t, "example.com/bar/v2", "v2.0.0")
	t.Setenv(SourceDateEpochEnv, "1700000000")
	out := filepath.Join(t.TempDir(), "bar.tar")
	res, err := BuildGo(context.Background(), GoBuildOptions{Package: "example.com/bar/v2@v2.0.0", Tags: []string{"bar:a"}, Out: out})
	if err != nil {
		t.Fatal(err)
	}
	if res.Binary != "/usr/local/bin/bar" {
		t.Errorf("Binary = %s, want /usr/local/bin/bar", res.Binary)
	}
	tag, _ := name.NewTag("bar:a")
	img, err := tarball.ImageFromPath(out, &tag)
	if err != nil {
		t.Fatal(err)
	}
	hdrs, _, _ := layerEntries(t, img)
	if h := hdrs["usr/local/bin/bar"]; h == nil || h.ModTime.Unix() != 1700000000 {
		t.Errorf("usr/local/bin/bar entry %+v: want one stamped 1700000000", h)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.Created.Unix() != 1700000000 {
		t.Errorf("config created %v, want 1700000000", cf.Created)
	}
}

// TestGoInstallWithReplace: go install refuses a package whose module's
// go.mod has replace directives (Traefik's does); BuildGo builds it in a
// copy of the module's source instead, with its replacement, and names the
// binary as go install would.
func TestGoInstallWithReplace(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go build")
	}
	fakeProxyOf(t,
		proxyModule{"example.com/front/v3", "v3.1.0", map[string]string{
			"go.mod":                 "module example.com/front/v3\n\ngo 1.21\n\nrequire example.com/lib v1.0.0\n\nreplace example.com/lib => example.com/fork v1.0.1\n",
			"cmd/front/main.go":      "package main\n\nimport \"example.com/lib\"\n\nfunc main() { println(lib.Who) }\n",
			"internal/unused/doc.go": "package unused\n",
		}},
		proxyModule{"example.com/lib", "v1.0.0", map[string]string{
			"go.mod": "module example.com/lib\n\ngo 1.21\n", "lib.go": "package lib\n\nconst Who = \"upstream\"\n",
		}},
		proxyModule{"example.com/fork", "v1.0.1", map[string]string{
			"go.mod": "module example.com/lib\n\ngo 1.21\n", "lib.go": "package lib\n\nconst Who = \"fork\"\n",
		}},
	)
	out := filepath.Join(t.TempDir(), "front.tar")
	res, err := BuildGo(context.Background(), GoBuildOptions{Package: "example.com/front/v3/cmd/front@v3.1.0", Tags: []string{"front:a"}, Out: out})
	if err != nil {
		t.Fatal(err)
	}
	if res.Binary != "/usr/local/bin/front" {
		t.Errorf("Binary = %s, want /usr/local/bin/front", res.Binary)
	}
	tag, _ := name.NewTag("front:a")
	img, err := tarball.ImageFromPath(out, &tag)
	if err != nil {
		t.Fatal(err)
	}
	_, files, _ := layerEntries(t, img)
	if bin := files["usr/local/bin/front"]; !strings.Contains(bin, "fork") || strings.Contains(bin, "upstream") {
		t.Errorf("the binary (%d bytes) was not built with the replacement: want the fork's string in it, not upstream's", len(bin))
	}
	for pkg, want := range map[string]string{"example.com/bar/v2": "bar", "example.com/cmd/tool": "tool", "example.com/v2": "example.com", "example.com/x/v": "v"} {
		if got := goInstallName(pkg); got != want {
			t.Errorf("goInstallName(%s) = %s, want %s", pkg, got, want)
		}
	}
}

// TestGoInstallCrossWithGOBIN: go install refuses to cross-compile while
// GOBIN is set (droprun on macOS builds linux binaries); goInstall unsets
// it, whether from the environment or `go env -w`, finds the binary under
// bin/linux_ARCH and writes nothing to GOBIN.
func TestGoInstallCrossWithGOBIN(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go install for another architecture")
	}
	other := map[string]string{"amd64": "arm64", "arm64": "amd64"}[runtime.GOARCH]
	if other == "" {
		t.Skipf("no other architecture known for %s", runtime.GOARCH)
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatal(err)
	}
	fakeProxy(t, "example.com/bar/v2", "v2.0.0")
	for _, where := range []string{"environment", "go env file"} {
		t.Run(where, func(t *testing.T) {
			gobin := t.TempDir()
			if where == "environment" {
				t.Setenv("GOBIN", gobin)
			} else {
				goenv := filepath.Join(t.TempDir(), "env")
				if err := os.WriteFile(goenv, []byte("GOBIN="+gobin+"\nGOTOOLCHAIN=local\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				t.Setenv("GOENV", goenv)
				t.Setenv("GOBIN", "")
			}
			bin, err := goInstall(context.Background(), goBin, "example.com/bar/v2@v2.0.0", other, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			if want := filepath.Join("bin", "linux_"+other, "bar"); !strings.HasSuffix(bin, want) {
				t.Errorf("binary at %s, want one ending in %s", bin, want)
			}
			f, err := elf.Open(bin)
			if err != nil {
				t.Fatalf("%s is not an ELF binary: %v", bin, err)
			}
			defer f.Close()
			if want := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[other]; f.Machine != want {
				t.Errorf("binary for %s, want %s", f.Machine, want)
			}
			if entries, _ := os.ReadDir(gobin); len(entries) != 0 {
				t.Errorf("GOBIN %s got %d entries, want none", gobin, len(entries))
			}
		})
	}
}

// TestBuildGoPodinfo builds the real podinfo from the module proxy (or the
// module cache) and reads both images back from the archive.
func TestBuildGoPodinfo(t *testing.T) {
	if testing.Short() {
		t.Skip("builds podinfo from the module proxy")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	out := filepath.Join(t.TempDir(), "podinfo.tar")
	res, err := BuildGo(ctx, GoBuildOptions{Package: PodinfoPackage, Tags: []string{"podinfo:a", "podinfo:b"}, Out: out})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Images) != 2 || res.Images[0].ID == res.Images[1].ID || res.Binary != "/usr/local/bin/podinfo" {
		t.Fatalf("result %+v", res)
	}
	for _, im := range res.Images {
		tag, _ := name.NewTag(im.Ref)
		img, err := tarball.ImageFromPath(out, &tag)
		if err != nil {
			t.Fatalf("%s not in the archive: %v", im.Ref, err)
		}
		id, _ := img.ConfigName()
		if id.String() != im.ID {
			t.Errorf("%s: archive has ID %s, result says %s", im.Ref, id, im.ID)
		}
		layers, _ := img.Layers()
		if size, _ := layers[0].Size(); len(layers) != 1 || size > 40<<20 {
			t.Errorf("%s: %d layers, first %d bytes: want one small layer", im.Ref, len(layers), size)
		}
	}
}
