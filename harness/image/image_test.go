package image

import (
	"archive/tar"
	"errors"
	"io"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

func TestRef(t *testing.T) {
	tests := []struct {
		name    string
		version string
		flavour Flavour
		want    string
	}{
		{name: "standard v1", version: "v1", flavour: FlavourStandard, want: "bookshop:v1"},
		{name: "standard v2", version: "v2", flavour: FlavourStandard, want: "bookshop:v2"},
		{name: "distroless v1", version: "v1", flavour: FlavourDistroless, want: "bookshop:v1-distroless"},
		{name: "distroless dotted", version: "v1.2.3-rc.1", flavour: FlavourDistroless, want: "bookshop:v1.2.3-rc.1-distroless"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Ref(tt.version, tt.flavour)
			if got != tt.want {
				t.Errorf("Ref(%q, %q) = %q, want %q", tt.version, tt.flavour, got, tt.want)
			}
			if strings.HasSuffix(got, ":latest") {
				t.Errorf("Ref(%q, %q) = %q uses :latest", tt.version, tt.flavour, got)
			}
		})
	}
}

// fakeFiles returns the files of flavour f with small stand-in binaries.
func fakeFiles(t *testing.T, f Flavour, web string) []File {
	t.Helper()
	files, err := Files(f, []byte(web), []byte("#!sleep binary"))
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func mustAssemble(t *testing.T, files []File, cfg ImageConfig) v1.Image {
	t.Helper()
	img, err := Assemble(files, cfg)
	if err != nil {
		t.Fatalf("Assemble: %v", err)
	}
	return img
}

func digest(t *testing.T, img v1.Image) v1.Hash {
	t.Helper()
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

var cfgV1 = ImageConfig{Platform: "linux/amd64", Version: "v1"}

func TestAssembleIsDeterministic(t *testing.T) {
	for _, f := range []Flavour{FlavourStandard, FlavourDistroless} {
		t.Run(string(f), func(t *testing.T) {
			a := digest(t, mustAssemble(t, fakeFiles(t, f, "web v1"), cfgV1))
			b := digest(t, mustAssemble(t, fakeFiles(t, f, "web v1"), cfgV1))
			if a != b {
				t.Errorf("same inputs gave digests %s and %s", a, b)
			}
		})
	}
}

func TestAssembleDigestDependsOnInputs(t *testing.T) {
	base := digest(t, mustAssemble(t, fakeFiles(t, FlavourStandard, "web v1"), cfgV1))
	tests := []struct {
		name  string
		files []File
		cfg   ImageConfig
	}{
		{name: "different web binary", files: fakeFiles(t, FlavourStandard, "web v2"), cfg: cfgV1},
		{name: "distroless flavour", files: fakeFiles(t, FlavourDistroless, "web v1"), cfg: cfgV1},
		{name: "different version label", files: fakeFiles(t, FlavourStandard, "web v1"),
			cfg: ImageConfig{Platform: "linux/amd64", Version: "v2"}},
		{name: "different platform", files: fakeFiles(t, FlavourStandard, "web v1"),
			cfg: ImageConfig{Platform: "linux/arm64", Version: "v1"}},
		{name: "different created time", files: fakeFiles(t, FlavourStandard, "web v1"),
			cfg: ImageConfig{Platform: "linux/amd64", Version: "v1", Created: time.Unix(1700000000, 0)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := digest(t, mustAssemble(t, tt.files, tt.cfg)); got == base {
				t.Errorf("digest %s did not change", got)
			}
		})
	}
}

// layerEntries reads the single layer of img.
func layerEntries(t *testing.T, img v1.Image) (map[string]*tar.Header, map[string]string, []string) {
	t.Helper()
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	if len(layers) != 1 {
		t.Fatalf("got %d layers, want 1", len(layers))
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	hdrs := map[string]*tar.Header{}
	data := map[string]string{}
	var order []string
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		hdrs[h.Name] = h
		data[h.Name] = string(b)
		order = append(order, h.Name)
	}
	return hdrs, data, order
}

func TestAssembleLayerContents(t *testing.T) {
	created := time.Unix(1234567890, 0)
	cfg := ImageConfig{Platform: "linux/amd64", Version: "v1", Created: created}
	for _, f := range []Flavour{FlavourStandard, FlavourDistroless} {
		t.Run(string(f), func(t *testing.T) {
			hdrs, data, order := layerEntries(t, mustAssemble(t, fakeFiles(t, f, "web v1"), cfg))

			want := []string{"bin/", "bin/sleep", "etc/", "etc/group", "etc/passwd", "home/", "home/nonroot/",
				"tmp/", "usr/", "usr/local/", "usr/local/bin/", "usr/local/bin/web"}
			if f == FlavourDistroless {
				want = []string{"etc/", "etc/group", "etc/passwd", "home/", "home/nonroot/",
					"tmp/", "usr/", "usr/local/", "usr/local/bin/", "usr/local/bin/web"}
			}
			if strings.Join(order, " ") != strings.Join(want, " ") {
				t.Errorf("entries\n got %v\nwant %v", order, want)
			}

			web := hdrs["usr/local/bin/web"]
			if web == nil || web.Typeflag != tar.TypeReg || web.Mode != 0o755 || data["usr/local/bin/web"] != "web v1" {
				t.Errorf("web entry = %+v, content %q; want regular file 0755 with the binary", web, data["usr/local/bin/web"])
			}
			if _, ok := hdrs["bin/sleep"]; ok != (f == FlavourStandard) {
				t.Errorf("bin/sleep present = %v, want %v", ok, f == FlavourStandard)
			}
			if tmp := hdrs["tmp/"]; tmp == nil || tmp.Mode != 0o1777 || tmp.Typeflag != tar.TypeDir {
				t.Errorf("tmp/ entry = %+v, want directory 1777", tmp)
			}
			if !strings.Contains(data["etc/passwd"], "nonroot:x:65532:65532:") || !strings.Contains(data["etc/group"], "nonroot:x:65532:") {
				t.Errorf("passwd/group lack nonroot 65532:\n%s\n%s", data["etc/passwd"], data["etc/group"])
			}
			for name, h := range hdrs {
				if !h.ModTime.Equal(created) {
					t.Errorf("%s: ModTime %v, want %v", name, h.ModTime, created)
				}
				wantID := 0
				if name == "home/nonroot/" {
					wantID = NonRootUID
				}
				if h.Uid != wantID || h.Gid != wantID || h.Uname != "" || h.Gname != "" {
					t.Errorf("%s: owner %d:%d (%q:%q), want %d:%d", name, h.Uid, h.Gid, h.Uname, h.Gname, wantID, wantID)
				}
			}
		})
	}
}

func TestAssembleZeroCreatedIsUnixEpoch(t *testing.T) {
	img := mustAssemble(t, fakeFiles(t, FlavourDistroless, "web"), cfgV1)
	hdrs, _, _ := layerEntries(t, img)
	if h := hdrs["usr/local/bin/web"]; h.ModTime.Unix() != 0 {
		t.Errorf("ModTime = %v, want Unix 0", h.ModTime)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.Created.Unix() != 0 {
		t.Errorf("Created = %v, want Unix 0", cf.Created)
	}
}

// TestAssembleConfigOverrides: Entrypoint, ExposedPorts and Labels replace
// bookshop's defaults; an empty ExposedPorts declares no port.
func TestAssembleConfigOverrides(t *testing.T) {
	files := []File{{Path: "/usr/local/bin/svc", Mode: 0o755, Data: []byte("svc")}}
	for _, tc := range []struct {
		name      string
		ports     []string
		wantPorts []string
	}{
		{"ports given", []string{"9898/tcp", "9999/tcp"}, []string{"9898/tcp", "9999/tcp"}},
		{"no ports", []string{}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			img := mustAssemble(t, files, ImageConfig{
				Platform: "linux/amd64", Version: "a", Entrypoint: []string{"/usr/local/bin/svc", "serve"},
				ExposedPorts: tc.ports, Labels: map[string]string{"org.opencontainers.image.title": "svc", "x": "y"},
			})
			cf, err := img.ConfigFile()
			if err != nil {
				t.Fatal(err)
			}
			c := cf.Config
			if !slices.Equal(c.Entrypoint, []string{"/usr/local/bin/svc", "serve"}) {
				t.Errorf("Entrypoint = %v, want [/usr/local/bin/svc serve]", c.Entrypoint)
			}
			if got := slices.Sorted(maps.Keys(c.ExposedPorts)); !slices.Equal(got, tc.wantPorts) {
				t.Errorf("ExposedPorts = %v, want %v", got, tc.wantPorts)
			}
			wantLabels := map[string]string{"org.opencontainers.image.title": "svc", "org.opencontainers.image.version": "a", "x": "y"}
			if !maps.Equal(c.Labels, wantLabels) {
				t.Errorf("Labels = %v, want %v", c.Labels, wantLabels)
			}
			if len(cf.History) != 1 || !strings.HasPrefix(cf.History[0].Comment, "svc a: ") {
				t.Errorf("History = %+v, want one entry commented \"svc a: ...\"", cf.History)
			}
		})
	}
}

func TestAssembleConfig(t *testing.T) {
	created := time.Unix(1700000000, 0).UTC()
	img := mustAssemble(t, fakeFiles(t, FlavourStandard, "web"),
		ImageConfig{Platform: "linux/arm64", Version: "v7", Created: created})
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cf.Config
	checks := []struct {
		name      string
		got, want any
	}{
		{"os", cf.OS, "linux"},
		{"architecture", cf.Architecture, "arm64"},
		{"created", cf.Created.Time.UTC(), created},
		{"entrypoint", strings.Join(c.Entrypoint, " "), "/usr/local/bin/web"},
		{"cmd", len(c.Cmd), 0},
		{"user", c.User, "65532:65532"},
		{"working dir", c.WorkingDir, "/"},
		{"env", strings.Join(c.Env, " "), "PATH=" + PathEnv},
		{"exposed 8080/tcp", len(c.ExposedPorts), 1},
		{"version label", c.Labels["org.opencontainers.image.version"], "v7"},
		{"title label", c.Labels["org.opencontainers.image.title"], "bookshop"},
		{"history entries", len(cf.History), 1},
		{"diff ids", len(cf.RootFS.DiffIDs), 1},
	}
	for _, ch := range checks {
		if ch.got != ch.want {
			t.Errorf("%s = %v, want %v", ch.name, ch.got, ch.want)
		}
	}
	if _, ok := c.ExposedPorts["8080/tcp"]; !ok {
		t.Errorf("ExposedPorts = %v, want 8080/tcp", c.ExposedPorts)
	}
	if len(cf.History) == 1 && !cf.History[0].Created.Time.Equal(created) {
		t.Errorf("history created = %v, want %v", cf.History[0].Created, created)
	}
}

func TestAssembleRejectsBadInput(t *testing.T) {
	web := File{Path: WebPath, Mode: 0o755, Data: []byte("web")}
	tests := []struct {
		name    string
		files   []File
		cfg     ImageConfig
		wantErr string
	}{
		{name: "unknown platform", files: []File{web}, cfg: ImageConfig{Platform: "windows/amd64", Version: "v1"}, wantErr: "unknown platform"},
		{name: "empty platform", files: []File{web}, cfg: ImageConfig{Version: "v1"}, wantErr: "unknown platform"},
		{name: "empty version", files: []File{web}, cfg: ImageConfig{Platform: "linux/amd64"}, wantErr: "version is empty"},
		{name: "relative path", files: []File{{Path: "usr/bin/web", Mode: 0o755}}, cfg: cfgV1, wantErr: "clean absolute path"},
		{name: "unclean path", files: []File{{Path: "/usr/../etc/x", Mode: 0o755}}, cfg: cfgV1, wantErr: "clean absolute path"},
		{name: "root path", files: []File{{Path: "/", Mode: 0o755}}, cfg: cfgV1, wantErr: "clean absolute path"},
		{name: "type bits in mode", files: []File{{Path: "/x", Mode: 0o40755}}, cfg: cfgV1, wantErr: "bits other than permissions"},
		{name: "duplicate path", files: []File{web, web}, cfg: cfgV1, wantErr: "listed twice"},
		{name: "clash with passwd", files: []File{{Path: "/etc/passwd", Mode: 0o644}}, cfg: cfgV1, wantErr: "clashes with the base filesystem"},
		{name: "clash with tmp dir", files: []File{{Path: "/tmp", Mode: 0o644}}, cfg: cfgV1, wantErr: "clashes with a directory"},
		{name: "file under a file", files: []File{web, {Path: WebPath + "/x", Mode: 0o644}}, cfg: cfgV1, wantErr: "is also a parent directory"},
		{name: "file under passwd", files: []File{{Path: "/etc/passwd/x", Mode: 0o644}}, cfg: cfgV1, wantErr: "is also a parent directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Assemble(tt.files, tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Assemble error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestFilesUnknownFlavour(t *testing.T) {
	if _, err := Files("alpine", []byte("web"), nil); err == nil || !strings.Contains(err.Error(), "unknown flavour") {
		t.Errorf("Files(alpine) error = %v, want unknown flavour", err)
	}
}
