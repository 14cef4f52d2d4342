package image

import (
	"context"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// TestBuildGenerator: the generator's image builds from the embedded
// source into an archive droprun's loader accepts, tagged by its binary's
// hash (the same build twice gives the same tag and image), running the
// generator as nonroot.
func TestBuildGenerator(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs go build")
	}
	dir := t.TempDir()
	im, archive, err := BuildGenerator(context.Background(), "", dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^droprun-generator:[0-9a-f]{12}$`).MatchString(im.Ref) || filepath.Dir(archive) != dir {
		t.Errorf("image %s in %s; want droprun-generator:<12 hex digits> in %s", im.Ref, archive, dir)
	}
	a, err := Inspect(archive)
	if err != nil || !a.Has(im.Ref) {
		t.Fatalf("the archive %s does not hold %s (%v): %s", archive, im.Ref, err, a.Describe())
	}
	img, err := tarball.ImageFromPath(archive, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cfg.Config.Entrypoint, []string{GeneratorPath}) || cfg.Config.User != "65532:65532" {
		t.Errorf("entrypoint %v as %s; want %s as nonroot", cfg.Config.Entrypoint, cfg.Config.User, GeneratorPath)
	}
	again, _, err := BuildGenerator(context.Background(), "", t.TempDir(), nil)
	if err != nil || again.Ref != im.Ref || again.ID != im.ID {
		t.Errorf("built again: %s %s (%v); want the same %s %s", again.Ref, again.ID, err, im.Ref, im.ID)
	}
}
