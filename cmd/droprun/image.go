package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/droprun/droprun/harness/image"
)

func newImageCmd(s streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "image",
		Short: "Build the bookshop images",
	}
	cmd.AddCommand(newImageBuildCmd(s))
	return cmd
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

Run it from the droprun source tree (or pass --module-dir).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			for _, f := range flavours {
				o.Flavours = append(o.Flavours, image.Flavour(f))
			}
			if o.ModuleDir == "" {
				dir, err := findModuleRoot()
				if err != nil {
					return err
				}
				o.ModuleDir = dir
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
	f.StringVar(&o.ModuleDir, "module-dir", "", "root of the droprun source tree (default: found from the current directory)")
	return cmd
}

// findModuleRoot walks up from the working directory to the droprun
// module's go.mod.
func findModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := dir; ; d = filepath.Dir(d) {
		if b, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil && strings.Contains(string(b), "module github.com/droprun/droprun\n") {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("not inside the droprun source tree (%s): run from a checkout or pass --module-dir", dir)
		}
	}
}
