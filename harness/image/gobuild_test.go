package image

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
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
// gives another image ID, so a rollout between them changes the pods.
func TestGoImage(t *testing.T) {
	bin := []byte("\x7fELF not really")
	a1, err := goImage(bin, "/usr/local/bin/app", "example.com/app@v1", "a")
	if err != nil {
		t.Fatal(err)
	}
	a2, _ := goImage(bin, "/usr/local/bin/app", "example.com/app@v1", "a")
	b, _ := goImage(bin, "/usr/local/bin/app", "example.com/app@v1", "b")
	ida1, _ := a1.ConfigName()
	ida2, _ := a2.ConfigName()
	idb, _ := b.ConfigName()
	if ida1 != ida2 {
		t.Errorf("the same input gave two images: %s, %s", ida1, ida2)
	}
	if ida1 == idb {
		t.Errorf("tags a and b gave the same image ID %s", ida1)
	}
	cf, _ := b.ConfigFile()
	if got := cf.Config.Entrypoint; len(got) != 1 || got[0] != "/usr/local/bin/app" || cf.Config.Labels["org.opencontainers.image.version"] != "b" {
		t.Errorf("config: entrypoint %v, labels %v", got, cf.Config.Labels)
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
