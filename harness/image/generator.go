package image

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"path/filepath"
	"runtime"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// The generator image: droprun's load generator (apps/generator) for the
// pods of traffic.generators: pods.
const (
	// GeneratorRepository is its name. Its tag is the first 12 hex digits
	// of the binary's SHA-256: the build is reproducible, so the same
	// source gives the same tag, and a changed generator a new one, which
	// no node can mistake for an old image under the same name.
	GeneratorRepository = "droprun-generator"
	// GeneratorPath is the binary's path in the image, its entrypoint.
	GeneratorPath = "/usr/local/bin/generator"
)

// BuildGenerator compiles apps/generator from the source embedded in
// droprun (static, for linux/<platform's arch>, default this machine's),
// assembles its image and writes it as a docker-save archive into dir,
// named after the image. It needs the Go toolchain; the generator's
// dependencies are droprun's own, from the Go module cache.
func BuildGenerator(ctx context.Context, platform, dir string, log io.Writer) (BuiltImage, string, error) {
	if platform == "" {
		platform = "linux/" + runtime.GOARCH
	}
	_, arch, err := parsePlatform(platform)
	if err != nil {
		return BuiltImage{}, "", err
	}
	created, err := sourceDateEpoch()
	if err != nil {
		return BuiltImage{}, "", err
	}
	if log != nil {
		fmt.Fprintf(log, "building the load generator for %s...\n", platform)
	}
	bin, err := compileEmbedded(ctx, "./apps/generator", "the load generator", arch)
	if err != nil {
		return BuiltImage{}, "", err
	}
	sum := sha256.Sum256(bin)
	version := hex.EncodeToString(sum[:])[:12]
	ref := GeneratorRepository + ":" + version
	img, err := goImage(bin, GeneratorPath, "droprun apps/generator", version, platform, created)
	if err != nil {
		return BuiltImage{}, "", fmt.Errorf("assembling %s: %w", ref, err)
	}
	built, err := describe(img, ref, version, platform)
	if err != nil {
		return BuiltImage{}, "", err
	}
	tag, err := name.NewTag(ref)
	if err != nil {
		return BuiltImage{}, "", err
	}
	archive := filepath.Join(dir, fmt.Sprintf("%s-%s.tar", GeneratorRepository, version))
	if _, err := writeArchive(ctx, archive, map[name.Reference]v1.Image{tag: img}); err != nil {
		return BuiltImage{}, "", err
	}
	if log != nil {
		fmt.Fprintf(log, "wrote %s (%s)\n", archive, ref)
	}
	return built, archive, nil
}

// describe is the BuiltImage of img, tagged ref.
func describe(img v1.Image, ref, version, platform string) (BuiltImage, error) {
	digest, err := img.Digest()
	if err != nil {
		return BuiltImage{}, fmt.Errorf("digest of %s: %w", ref, err)
	}
	id, err := img.ConfigName()
	if err != nil {
		return BuiltImage{}, fmt.Errorf("config digest of %s: %w", ref, err)
	}
	return BuiltImage{Ref: ref, Digest: digest.String(), ID: id.String(), Version: version, Platform: platform}, nil
}
