package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/droprun/droprun/harness/scenario"
	"github.com/droprun/droprun/harness/testbed"
)

func newValidateCmd(s streams) *cobra.Command {
	return &cobra.Command{
		Use:   "validate FILE...",
		Short: "Check scenario files and explain every problem",
		Long: `Strictly decode and validate scenario files (apiVersion droprun/v1alpha1).
A FILE that does not exist may name a shipped scenario (droprun scenarios).

Unknown fields are errors, so a typo never silently falls back to a default.
Every problem is reported with the file, the field path and how to fix it,
for example:

  scenarios/x.yaml: variants[0].preStopSeconds: 30 is not less than
  terminationGracePeriodSeconds (30) (fix: ...)

A custom app's image archives (app.custom.imageArchives) are read whole: each
must exist and be a docker-save archive or an OCI image layout (a directory or
a tar of one), and app.custom.images must be in them.

Exit status: 0 when every file is valid, 1 when any is not, 2 on bad usage.
The format, every field with its default, is documented in the scenarios'
README: droprun scenarios README prints it.`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageError("validate needs at least one scenario file, e.g. droprun validate scenarios/*.yaml")
			}
			return nil
		},
		RunE: func(_ *cobra.Command, args []string) error {
			bad := 0
			for _, f := range args {
				sc, err := loadScenario(f)
				if err != nil {
					fmt.Fprintln(s.Err, err)
					bad++
					continue
				}
				// The run's preflight: where its results go, the image
				// archives read whole, the images in them, the kube-proxy
				// mode on this kernel.
				err = sc.CheckOutput()
				if err == nil {
					_, err = testbed.Preflight(sc)
				}
				if err != nil {
					var se *scenario.Errors
					if errors.As(err, &se) {
						se.File = f
					}
					fmt.Fprintln(s.Err, err)
					bad++
					continue
				}
				fmt.Fprintf(s.Out, "ok  %s: %s\n", f, describe(sc))
			}
			if bad > 0 {
				return &exitError{code: 1, err: fmt.Errorf("%d of %d scenario files are invalid", bad, len(args))}
			}
			return nil
		},
	}
}

// describe summarises a scenario in one line.
func describe(sc *scenario.Scenario) string {
	names := make([]string, len(sc.Variants))
	for i, v := range sc.Variants {
		names[i] = v.Name
	}
	where := "kind cluster " + func() string {
		if sc.Cluster.Kind != nil {
			return fmt.Sprintf("%q (%d nodes, %s)", sc.Cluster.Kind.Name, sc.Cluster.Kind.Nodes, sc.Cluster.Kind.KubeProxyMode)
		}
		return ""
	}()
	if sc.Cluster.Existing != nil {
		where = "existing cluster " + sc.Cluster.Existing.Kubeconfig
	}
	return fmt.Sprintf("%d variant(s) %v × %d rollout(s) at %d req/s via %s on %s",
		len(sc.Variants), names, *sc.Rollouts, sc.Traffic.Rate, sc.Traffic.Target, where)
}
