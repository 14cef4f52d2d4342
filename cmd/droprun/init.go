package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/droprun/droprun/harness/scaffold"
)

func newInitCmd(s streams) *cobra.Command {
	var o scaffold.Options
	cmd := &cobra.Command{
		Use:   "init DEPLOYMENT.yaml --image NAME:T1 --image NAME:T2 [--archive FILE]...",
		Short: "Write a scenario that measures your own Deployment's rollouts",
		Long: `Write a scenario for your own service from its Deployment manifest: the
Deployment as you ship it (variant as-shipped) against the same Deployment
with a native preStop sleep of 5 s (variant prestop-sleep, written next to
the scenario as <deployment>-prestop-sleep.yaml, with the grace period raised
when the sleep would not leave the app its own shutdown time).

From the manifest (one apps/v1 Deployment alone in its file) init takes:
  container   the pod's only container, or the one --container names
  port        the readiness probe's port, else the container's only port
              (or the one named http); --port overrides it
  path        the readiness probe's httpGet path as traffic.path, else /;
              --path overrides it (an app that fails readiness on SIGTERM on
              purpose answers its probe path 503 while it drains)

Rollouts alternate between two images of the container, so give two tags of
your service with --image twice, and the archives that hold them with
--archive (docker save, droprun image build-go, or an OCI image layout); they
are loaded into every kind node. Without --archive the nodes must have or
pull the images themselves.

The scenario is written with comments on every field you may want to change,
then checked exactly as 'droprun validate' checks it. An existing file is
never overwritten without --force.

Example:
  droprun image build-go github.com/stefanprodan/podinfo/cmd/podinfo@v1.8.1-0.20250910200901-e86405a8674e \
      --tag podinfo:t1 --tag podinfo:t2 --out podinfo.tar
  droprun init deploy.yaml --image podinfo:t1 --image podinfo:t2 --archive podinfo.tar --path /version
  droprun run droprun.yaml

Exit status: 0 when the scenario was written, 2 on bad usage or bad input (a
manifest that is not one Deployment, a container or port that cannot be
chosen, not two images, a bad archive, a file in the way), 1 otherwise.`,
		Args: cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			o.Manifest = args[0]
			r, err := scaffold.Init(o)
			var ie *scaffold.InputError
			if errors.As(err, &ie) {
				return usageError("%w", err)
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(s.Out, "wrote %s: variants %s (%s) and %s (%s)\n", r.Out, scaffold.AsShipped, r.Scenario.Variants[0].Manifest, scaffold.PreStopSleep, r.PreStopManifest)
			fmt.Fprintf(s.Out, "container %s, port %d (%s), traffic path %s\n", r.Container, r.Port, r.PortFrom, r.Path)
			for _, n := range r.Notes {
				fmt.Fprintf(s.Out, "note: %s\n", n)
			}
			fmt.Fprintf(s.Out, "next: droprun run %s\n", r.Out)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.Out, "output", "o", scaffold.DefaultOut, "the scenario file to write; the prestop-sleep manifest goes next to it")
	f.StringVar(&o.Container, "container", "", "the container whose image the rollouts change (needed when the pod has several)")
	f.IntVar(&o.Port, "port", 0, "the container port traffic goes to (default: the readiness probe's port, else the container's only port)")
	f.StringArrayVar(&o.Images, "image", nil, "an image of the container to alternate between; give it twice (NAME:T1, NAME:T2)")
	f.StringArrayVar(&o.Archives, "archive", nil, "an image archive holding the images, loaded into every kind node (repeatable)")
	f.StringVar(&o.Path, "path", "", "the path every request asks for (default: the readiness probe's path, else /)")
	f.StringVar(&o.Name, "name", "", "the scenario's name (default: the Deployment's)")
	f.Int64Var(&o.PreStopSeconds, "prestop-seconds", scaffold.DefaultPreStopSeconds, "the prestop-sleep variant's sleep, in seconds")
	f.BoolVar(&o.Force, "force", false, "overwrite the scenario and the prestop-sleep manifest if they exist")
	return cmd
}
