package image

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
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

// needGo skips integration tests in -short mode or without a go toolchain.
func needGo(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: compiles Go binaries; skipped with -short")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("integration test: needs the go toolchain on PATH: ", err)
	}
}

// fakeModule writes a throwaway module with an app (printing main.version)
// and a sleep program, and returns its directory. A non-empty appSource
// replaces the app's main.go.
func fakeModule(t *testing.T, appSource string) string {
	t.Helper()
	dir := t.TempDir()
	if appSource == "" {
		// Like the real app, -version prints the stamped version.
		appSource = "package main\n\nimport (\n\t\"fmt\"\n\t\"os\"\n)\n\nvar version = \"dev\"\n\n" +
			"func main() {\n\tif len(os.Args) > 1 && os.Args[1] == \"-version\" {\n\t\tfmt.Println(version)\n\t\treturn\n\t}\n\tfmt.Println(\"web\", version)\n}\n"
	}
	files := map[string]string{
		"go.mod":        "module example.com/fake\n\ngo 1.26\n",
		"app/main.go":   appSource,
		"sleep/main.go": "package main\n\nimport (\n\t\"os\"\n\t\"strconv\"\n\t\"time\"\n)\n\nfunc main() {\n\tn, _ := strconv.Atoi(os.Args[1])\n\ttime.Sleep(time.Duration(n) * time.Second)\n}\n",
	}
	for p, content := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func fakeOptions(t *testing.T, mod string) BuildOptions {
	return BuildOptions{ModuleDir: mod, AppPackage: "./app", SleepPackage: "./sleep", OutDir: t.TempDir()}
}

// realModuleRoot returns droprun's module root when the real bookshop app
// and sleep program are present, or "" otherwise.
func realModuleRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Logf("go env GOMOD: %v", err)
		return ""
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return ""
	}
	root := filepath.Dir(gomod)
	for _, f := range []string{"apps/bookshop/main.go", "apps/bookshop/sleep/main.go"} {
		if _, err := os.Stat(filepath.Join(root, f)); err != nil {
			return ""
		}
	}
	return root
}

// timedBuild runs Build and logs its duration and progress lines.
func timedBuild(t *testing.T, opts BuildOptions) (*BuildResult, string, error) {
	t.Helper()
	var log bytes.Buffer
	opts.Log = &log
	start := time.Now()
	res, err := Build(context.Background(), opts)
	t.Logf("Build of %s into %s took %s:\n%s", opts.ModuleDir, opts.OutDir, time.Since(start).Round(time.Millisecond), log.String())
	return res, log.String(), err
}

func TestIntegrationBuildReproducible(t *testing.T) {
	needGo(t)

	var first *BuildResult
	var opts BuildOptions
	var logText string
	if root := realModuleRoot(t); root != "" {
		opts = BuildOptions{ModuleDir: root, OutDir: t.TempDir()}
		var err error
		first, logText, err = timedBuild(t, opts)
		var compileErr *compileError
		switch {
		case errors.As(err, &compileErr):
			t.Logf("the real bookshop app does not compile yet, using a throwaway module: %v", err)
			first = nil
		case err != nil:
			t.Fatalf("first Build of the real app: %v", err)
		}
	} else {
		t.Log("apps/bookshop not present yet, using a throwaway module")
	}
	if first == nil {
		opts = fakeOptions(t, fakeModule(t, ""))
		var err error
		first, logText, err = timedBuild(t, opts)
		if err != nil {
			t.Fatalf("first Build: %v", err)
		}
	}
	opts.OutDir = t.TempDir()
	second, _, err := timedBuild(t, opts)
	if err != nil {
		t.Fatalf("second Build: %v", err)
	}

	wantRefs := []string{"bookshop:v1", "bookshop:v1-distroless", "bookshop:v2", "bookshop:v2-distroless"}
	platform := "linux/" + runtime.GOARCH
	for _, res := range []*BuildResult{first, second} {
		if got := filepath.Base(res.Archive); got != "bookshop-linux-"+runtime.GOARCH+".tar" {
			t.Errorf("archive name %s", got)
		}
		var refs []string
		for _, img := range res.Images {
			refs = append(refs, img.Ref)
			if img.Platform != platform || !strings.HasPrefix(img.Digest, "sha256:") || !strings.HasPrefix(img.ID, "sha256:") {
				t.Errorf("image %+v: want platform %s and sha256 digests", img, platform)
			}
			if img.Ref != Ref(img.Version, img.Flavour) {
				t.Errorf("image %+v: Ref does not match version and flavour", img)
			}
		}
		if strings.Join(refs, " ") != strings.Join(wantRefs, " ") {
			t.Errorf("images %v, want %v", refs, wantRefs)
		}
	}
	if len(first.Images) != len(second.Images) {
		t.Fatalf("builds returned %d and %d images", len(first.Images), len(second.Images))
	}
	for i := range first.Images {
		a, b := first.Images[i], second.Images[i]
		t.Logf("%-24s %s (id %s)", a.Ref, a.Digest, a.ID)
		if a != b {
			t.Errorf("not reproducible:\n first  %+v\n second %+v", a, b)
		}
	}
	// Every image differs from every other: versions are stamped, flavours differ.
	digests := map[string]string{}
	for _, img := range first.Images {
		if other, dup := digests[img.Digest]; dup {
			t.Errorf("%s and %s share digest %s", img.Ref, other, img.Digest)
		}
		digests[img.Digest] = img.Ref
	}

	for _, want := range []string{"building web v1 for " + platform, "building sleep for", "assembled bookshop:v2-distroless sha256:", "wrote " + first.Archive} {
		if !strings.Contains(logText, want) {
			t.Errorf("progress log lacks %q:\n%s", want, logText)
		}
	}

	for _, res := range []*BuildResult{first, second} {
		checkArchive(t, res, wantRefs)
	}
}

// dockerSaveEntry is one element of a docker-save manifest.json.
type dockerSaveEntry struct {
	Config   string
	RepoTags []string
	Layers   []string
}

// checkArchive checks the docker-save layout that containerd's importer
// reads, then reads every image back by tag.
func checkArchive(t *testing.T, res *BuildResult, wantRefs []string) {
	t.Helper()
	entries, files := readTar(t, res.Archive)
	var manifest []dockerSaveEntry
	if err := json.Unmarshal(files["manifest.json"], &manifest); err != nil {
		t.Fatalf("manifest.json: %v", err)
	}
	var tags []string
	for _, m := range manifest {
		tags = append(tags, m.RepoTags...)
		if len(m.RepoTags) != 1 || len(m.Layers) != 1 {
			t.Errorf("manifest entry %+v: want one tag and one layer", m)
		}
		for _, blob := range append([]string{m.Config}, m.Layers...) {
			if _, ok := files[blob]; !ok {
				t.Errorf("manifest entry %v names %q, not in the archive", m.RepoTags, blob)
			}
		}
	}
	slices.Sort(tags)
	if strings.Join(tags, " ") != strings.Join(wantRefs, " ") {
		t.Errorf("manifest.json RepoTags %v, want %v", tags, wantRefs)
	}
	for _, e := range entries {
		if e.Typeflag != tar.TypeReg {
			t.Errorf("archive entry %s has type %c, want regular files only", e.Name, e.Typeflag)
		}
	}

	// Nothing but the archive in OutDir: the temporary file was renamed.
	dirEntries, err := os.ReadDir(filepath.Dir(res.Archive))
	if err != nil {
		t.Fatal(err)
	}
	if len(dirEntries) != 1 {
		var names []string
		for _, d := range dirEntries {
			names = append(names, d.Name())
		}
		t.Errorf("OutDir holds %v, want only the archive", names)
	}

	webs := map[string][]byte{}
	for _, want := range res.Images {
		tag, err := name.NewTag(want.Ref)
		if err != nil {
			t.Fatal(err)
		}
		img, err := tarball.ImageFromPath(res.Archive, &tag)
		if err != nil {
			t.Fatalf("reading %s back: %v", want.Ref, err)
		}
		d, err := img.Digest()
		if err != nil {
			t.Fatal(err)
		}
		if d.String() != want.Digest {
			t.Errorf("%s read back with digest %s, Build reported %s", want.Ref, d, want.Digest)
		}
		id, err := img.ConfigName()
		if err != nil {
			t.Fatal(err)
		}
		if id.String() != want.ID {
			t.Errorf("%s read back with ID %s, Build reported %s", want.Ref, id, want.ID)
		}
		webs[want.Ref] = checkBinaries(t, img, want)
	}
	// Both flavours of a version share the web binary; versions differ.
	if !bytes.Equal(webs["bookshop:v1"], webs["bookshop:v1-distroless"]) {
		t.Error("bookshop:v1 and bookshop:v1-distroless ship different web binaries")
	}
	if bytes.Equal(webs["bookshop:v1"], webs["bookshop:v2"]) {
		t.Error("bookshop:v1 and bookshop:v2 ship the same web binary: version not stamped")
	}
}

// checkBinaries checks that the image's web binary is a static build for
// its platform, that it prints its version when the host can run it, and
// that only standard images ship sleep. It returns the web binary.
func checkBinaries(t *testing.T, img v1.Image, want BuiltImage) []byte {
	t.Helper()
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("%s: layers %d, %v", want.Ref, len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var web []byte
	hasSleep := false
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		switch h.Name {
		case "usr/local/bin/web":
			if web, err = io.ReadAll(tr); err != nil {
				t.Fatal(err)
			}
		case "bin/sleep":
			hasSleep = true
		}
	}
	if hasSleep != (want.Flavour == FlavourStandard) {
		t.Errorf("%s: bin/sleep present = %v", want.Ref, hasSleep)
	}
	if web == nil {
		t.Fatalf("%s: no usr/local/bin/web", want.Ref)
	}
	bin := filepath.Join(t.TempDir(), "web")
	if err := os.WriteFile(bin, web, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("go", "version", "-m", bin).CombinedOutput()
	if err != nil {
		t.Fatalf("go version -m: %v\n%s", err, out)
	}
	// With -trimpath the build info omits -ldflags, so the version is
	// checked by running the binary below.
	_, arch, _ := strings.Cut(want.Platform, "/")
	for _, s := range []string{"CGO_ENABLED=0", "GOOS=linux", "GOARCH=" + arch, "-trimpath=true"} {
		if !bytes.Contains(out, []byte(s)) {
			t.Errorf("%s: web build info lacks %q:\n%s", want.Ref, s, out)
		}
	}
	if runtime.GOOS+"/"+runtime.GOARCH == want.Platform {
		out, err := exec.Command(bin, "-version").Output()
		if got := strings.TrimSpace(string(out)); err != nil || got != want.Version {
			t.Errorf("%s: web -version printed %q (%v), want %q", want.Ref, got, err, want.Version)
		}
	}
	return web
}

// readTar returns the headers and contents of a tar file.
func readTar(t *testing.T, path string) ([]*tar.Header, map[string][]byte) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var hdrs []*tar.Header
	files := map[string][]byte{}
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return hdrs, files
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		hdrs = append(hdrs, h)
		files[h.Name] = b
	}
}

func TestIntegrationBuildArm64(t *testing.T) {
	needGo(t)
	opts := fakeOptions(t, fakeModule(t, ""))
	opts.Platform = "linux/arm64"
	opts.Versions = []string{"v3"}
	opts.Flavours = []Flavour{FlavourDistroless}
	res, _, err := timedBuild(t, opts)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(res.Archive) != "bookshop-linux-arm64.tar" || len(res.Images) != 1 {
		t.Fatalf("result %+v", res)
	}
	tag, _ := name.NewTag("bookshop:v3-distroless")
	img, err := tarball.ImageFromPath(res.Archive, &tag)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.OS != "linux" || cf.Architecture != "arm64" {
		t.Errorf("config platform %s/%s, want linux/arm64", cf.OS, cf.Architecture)
	}
	checkBinaries(t, img, res.Images[0])
}

func TestIntegrationBuildReportsCompileError(t *testing.T) {
	needGo(t)
	opts := fakeOptions(t, fakeModule(t, "package main\n\nfunc main() { undefinedThing() }\n"))
	_, err := Build(context.Background(), opts)
	if err == nil || !strings.Contains(err.Error(), "undefined: undefinedThing") || !strings.Contains(err.Error(), "./app") {
		t.Fatalf("Build error = %v, want the compiler's message for ./app", err)
	}
	if entries, _ := os.ReadDir(opts.OutDir); len(entries) != 0 {
		t.Errorf("OutDir not empty after a failed build: %v", entries)
	}
}

func TestIntegrationBuildCancelled(t *testing.T) {
	needGo(t)
	opts := fakeOptions(t, fakeModule(t, ""))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Build(ctx, opts)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Build error = %v, want context.Canceled", err)
	}
	if entries, _ := os.ReadDir(opts.OutDir); len(entries) != 0 {
		t.Errorf("OutDir not empty after a cancelled build: %v", entries)
	}
}

// TestIntegrationBuildEmbeddedMatchesCheckout builds from the source
// embedded in droprun (no ModuleDir) and from the checkout: the images are
// the same, byte for byte, so an installed droprun and a checkout deploy
// the same bookshop.
func TestIntegrationBuildEmbeddedMatchesCheckout(t *testing.T) {
	needGo(t)
	root := realModuleRoot(t)
	if root == "" {
		t.Skip("not inside the droprun checkout")
	}
	embedded, logText, err := timedBuild(t, BuildOptions{OutDir: t.TempDir()})
	if err != nil {
		t.Fatalf("Build from the embedded source: %v", err)
	}
	if !strings.Contains(logText, "embedded") {
		t.Errorf("progress log does not say the embedded source was built:\n%s", logText)
	}
	checkout, _, err := timedBuild(t, BuildOptions{ModuleDir: root, OutDir: t.TempDir()})
	if err != nil {
		t.Fatalf("Build from %s: %v", root, err)
	}
	if !slices.Equal(embedded.Images, checkout.Images) {
		t.Errorf("the embedded source and the checkout give different images:\n embedded %+v\n checkout %+v", embedded.Images, checkout.Images)
	}
	checkArchive(t, embedded, []string{"bookshop:v1", "bookshop:v1-distroless", "bookshop:v2", "bookshop:v2-distroless"})
}

// TestIntegrationBuildFromSource builds a module given as an fs.FS, and a
// change to its source changes the image: the archive droprun caches is
// rebuilt from the embedded source every time, never kept across a change.
func TestIntegrationBuildFromSource(t *testing.T) {
	needGo(t)
	build := func(greeting string) BuiltImage {
		t.Helper()
		src := os.DirFS(fakeModule(t, "package main\n\nvar version string\n\nfunc main() { println(\""+greeting+"\", version) }\n"))
		res, _, err := timedBuild(t, BuildOptions{Source: src, AppPackage: "./app", Versions: []string{"v1"}, Flavours: []Flavour{FlavourDistroless}, OutDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		return res.Images[0]
	}
	a, again, b := build("hello"), build("hello"), build("goodbye")
	if a != again {
		t.Errorf("the same source built twice differs:\n %+v\n %+v", a, again)
	}
	if a.Digest == b.Digest {
		t.Errorf("a changed source gave the same image %s", a.Digest)
	}
}
