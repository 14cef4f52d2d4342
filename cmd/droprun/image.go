package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/droprun/droprun/harness/image"
	"github.com/droprun/droprun/harness/path"
)

func newImageCmd(s streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "image",
		Short: "Build the bookshop images",
	}
	cmd.AddCommand(newImageBuildCmd(s))
	cmd.AddCommand(newImageBuildGoCmd(s))
	cmd.AddCommand(newImageFrontsCmd(s))
	cmd.AddCommand(newImageGeneratorCmd(s))
	return cmd
}

func newImageGeneratorCmd(s streams) *cobra.Command {
	var out, platform string
	cmd := &cobra.Command{
		Use:   "generator",
		Short: "Build the load generator's image (traffic.generators: pods) into an image archive",
		Long: `Build droprun's load generator (apps/generator: droprun's own client in a pod,
sending its share of a run's load from inside the cluster) into one small image,
without a Docker daemon, a registry or a base image, from the source embedded in
droprun, into OUT/droprun-generator-<tag>.tar (docker-save format).

Its tag is the first 12 hex digits of the binary's SHA-256: the build is
reproducible, so the same droprun gives the same tag, and a changed generator a
new one. A run on droprun's kind cluster builds and loads it by itself; for a
cluster of your own, load or push it where your nodes pull from, e.g.

  droprun image generator --out /tmp/gen
  kind load image-archive /tmp/gen/droprun-generator-*.tar --name mine
  (or: crane push /tmp/gen/droprun-generator-*.tar registry.example/droprun-generator:TAG)

and name it in the scenario as traffic.generators.image.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if platform != "" && platform != "linux/amd64" && platform != "linux/arm64" {
				return usageError("--platform %q: use linux/amd64 or linux/arm64", platform)
			}
			im, archive, err := image.BuildGenerator(cmd.Context(), platform, out, s.Err)
			if err != nil {
				return err
			}
			fmt.Fprintf(s.Out, "%s\n  %-26s %s\n", archive, im.Ref, im.ID)
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "out/images", "directory for the image archive")
	cmd.Flags().StringVar(&platform, "platform", "", "linux/amd64 or linux/arm64 (default: this machine's architecture)")
	return cmd
}

func newImageFrontsCmd(s streams) *cobra.Command {
	return &cobra.Command{
		Use:   "fronts",
		Short: "Build the images of the fronts droprun deploys (Traefik, Caddy) once, into the user's cache",
		Long: `Build the image of every front a scenario's traffic.target can put in front of
the pods and that is not bookshop itself (Traefik Proxy, Caddy), from the Go module
proxy, into ~/.cache/droprun/fronts. A run through a front builds its image
the first time anyway; this does it ahead, so that the build (6 to 9 minutes
for Traefik and 2 for Caddy on a 2-core machine) is not part of a run. An image already there
is kept: delete its file to rebuild it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			for _, p := range path.All() {
				if p.Proxy == nil || p.Proxy.Source == "" {
					continue
				}
				file, err := image.CachedGo(cmd.Context(), image.GoBuildOptions{Package: p.Proxy.Source, Tags: []string{p.Proxy.Image}, Log: s.Err}, "")
				if err != nil {
					return fmt.Errorf("traffic.target %s: %w", p.Name, err)
				}
				fmt.Fprintf(s.Out, "%-8s %s  %s\n", p.Name, p.Proxy.Image, file)
			}
			return nil
		},
	}
}

func newImageBuildCmd(s streams) *cobra.Command {
	var o image.BuildOptions
	var flavours []string
	cmd := &cobra.Command{
		Use:   "build",
		Short: "Build the bookshop images offline into one image archive",
		Long: `Build bookshop v1 and v2, in two flavours, without a Docker daemon, a registry
or a base image: the app is cross-compiled with the local Go toolchain (static)
and the images are assembled with go-containerregistry, the way ko does.

  bookshop:v1, bookshop:v2                        with /bin/sleep, for exec preStop hooks
  bookshop:v1-distroless, bookshop:v2-distroless  without it: an exec 'sleep' hook fails

All images go into one docker-save archive, OUT/bookshop-<os>-<arch>.tar, that
'kind load image-archive' and droprun's cluster loader accept. The build is
reproducible: the same source gives the same image digests (SOURCE_DATE_EPOCH
sets the timestamp, default the Unix epoch).

The bookshop source is embedded in droprun, so this works from any directory;
it needs the Go toolchain ('go' on PATH), and bookshop's dependencies come
from the Go module cache (or GOPROXY). --module-dir builds a source tree
instead, such as a checkout with edited bookshop source.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			for _, f := range flavours {
				o.Flavours = append(o.Flavours, image.Flavour(f))
			}
			o.Log = s.Err
			res, err := image.Build(cmd.Context(), o)
			if err != nil {
				return err
			}
			fmt.Fprintf(s.Out, "%s\n", res.Archive)
			for _, im := range res.Images {
				fmt.Fprintf(s.Out, "  %-26s %s\n", im.Ref, im.Digest)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.OutDir, "out", "out/images", "directory for the image archive")
	f.StringVar(&o.Platform, "platform", "", "linux/amd64 or linux/arm64 (default: this machine's architecture)")
	f.StringSliceVar(&o.Versions, "versions", []string{"v1", "v2"}, "app versions to build")
	f.StringSliceVar(&flavours, "flavours", []string{string(image.FlavourStandard), string(image.FlavourDistroless)}, "image flavours: standard, distroless")
	f.StringVar(&o.ModuleDir, "module-dir", "", "build from this droprun source tree instead of the bookshop source embedded in droprun")
	return cmd
}

func newImageBuildGoCmd(s streams) *cobra.Command {
	o := image.GoBuildOptions{}
	cmd := &cobra.Command{
		Use:   "build-go PKG@VERSION --tag NAME:T1 --tag NAME:T2 --out FILE.tar",
		Short: "Build images of any Go program from the module proxy into one image archive",
		Long: `Build a Go service into small images for a custom-app scenario, without a
Docker daemon, a registry or a base image: 'go install PKG@VERSION' (static,
for linux on this machine's architecture), then one image per --tag, assembled
with go-containerregistry, all in one docker-save archive for
app.custom.imageArchives.

The images hold the binary at /usr/local/bin/<name>, named as go install names
it (the entrypoint, run as uid 65532 "nonroot"), on the same minimal root
filesystem as the bookshop images: /etc/passwd and /etc/group, /home/nonroot
and /tmp. They differ only in their version label, which is the tag, so each
has its own image ID and a rollout from one tag to the other replaces every
pod. The build is reproducible; SOURCE_DATE_EPOCH sets its timestamps.

  droprun image build-go github.com/stefanprodan/podinfo/cmd/podinfo@v1.8.1-0.20250910200901-e86405a8674e \
      --tag podinfo:a --tag podinfo:b --out podinfo.tar`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case !strings.Contains(args[0], "@"):
				return usageError("%q has no @VERSION: name a main package at a module version, e.g. github.com/stefanprodan/podinfo/cmd/podinfo@v1.8.1-0.20250910200901-e86405a8674e", args[0])
			case len(o.Tags) == 0:
				return usageError("give the images to make with --tag NAME:TAG, twice for two images rollouts alternate between")
			case o.Out == "":
				return usageError("give the archive to write with --out FILE.tar")
			}
			o.Package, o.Log = args[0], s.Err
			res, err := image.BuildGo(cmd.Context(), o)
			if err != nil {
				return err
			}
			fmt.Fprintf(s.Out, "%s (%d MB, entrypoint %s)\n", res.Archive, res.Size>>20, res.Binary)
			for _, im := range res.Images {
				fmt.Fprintf(s.Out, "  %-26s %s\n", im.Ref, im.ID)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringArrayVar(&o.Tags, "tag", nil, "image to make, NAME:TAG (repeat it: two tags make rollouts alternate)")
	f.StringVar(&o.Out, "out", "", "the docker-save archive to write (required)")
	return cmd
}
