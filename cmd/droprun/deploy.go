package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/droprun/droprun/harness/kube"
	"github.com/droprun/droprun/harness/scenario"
	"github.com/droprun/droprun/harness/testbed"
	"github.com/droprun/droprun/harness/testbed/render"
	"github.com/droprun/droprun/harness/variant"
)

func newDeployCmd(s streams) *cobra.Command {
	var (
		name, ver, allow string
		create           bool
		given            consent
	)
	cmd := &cobra.Command{
		Use:   "deploy --variant NAME [SCENARIO]",
		Short: "Deploy one variant of the app on the cluster and check it answers",
		Long: `Build and load the bookshop images, apply one variant's Deployment and Service
(server-side apply, droprun's own namespace), wait until it is rolled out, and
GET the traffic URL on 127.0.0.1 until a pod answers.

Use it to set up the lab by hand (then roll it yourself with kubectl, using
the kubeconfig 'droprun cluster up' printed), or to check a cluster before a
run. Without SCENARIO the variant runs with droprun's defaults.

Examples:
  droprun deploy --variant no-prestop
  droprun deploy --variant graceful-drain --app-version v2 scenarios/compare-all.yaml`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sc, i, version, err := pickVariantVersion(args, name, ver)
			if err != nil {
				return err
			}
			allowed, err := given.apply(sc)
			if err != nil {
				return err
			}
			checked, err := testbed.Check(sc, allowed)
			if err != nil {
				return badInput(err)
			}
			tb, err := testbed.Prepare(cmd.Context(), checked, testbed.Options{Log: s.Err, AllowContext: allow, CreateCluster: create,
				Owner: kube.NewOwner("deploy-" + time.Now().UTC().Format("20060102-150405"))})
			if err != nil {
				return err
			}
			defer tb.Release(context.WithoutCancel(cmd.Context()))
			if err := tb.Deploy(cmd.Context(), render.Of(sc, i), version, false); err != nil {
				return err
			}
			a, err := tb.WaitAnswering(cmd.Context(), time.Minute)
			if err != nil {
				return err
			}
			fmt.Fprintf(s.Out, "%s answered %d from pod %s (version %s)\n", tb.TargetURL(), a.Status, a.Pod, a.Version)
			return nil
		},
	}
	cmd.Flags().StringVar(&name, "variant", "", "the variant: a built-in name, or a variant's name in SCENARIO ("+variant.NameList()+")")
	cmd.Flags().StringVar(&ver, "app-version", "v1", "the app version to deploy: v1 or v2")
	cmd.Flags().StringVar(&allow, "allow-context", "", "allow this non-kind context of an existing cluster")
	cmd.Flags().BoolVar(&create, "create", false, "create the kind cluster if it does not exist")
	given.flags(cmd.Flags())
	return cmd
}

// parseAppVersion turns v1/v2 into an index into scenario.Versions.
func parseAppVersion(v string) (int, error) {
	for i, name := range scenario.Versions {
		if name == v {
			return i, nil
		}
	}
	return 0, usageError("--app-version %q: use v1 or v2", v)
}

// pickVariantVersion is pickVariant plus --app-version, for the commands
// that render one variant at one version.
func pickVariantVersion(args []string, name, ver string) (*scenario.Scenario, int, int, error) {
	version, err := parseAppVersion(ver)
	if err != nil {
		return nil, 0, 0, err
	}
	sc, i, err := pickVariant(args, name)
	return sc, i, version, err
}

// pickVariant loads the scenario in args (or a default one for a built-in
// variant) and finds the variant called name in it.
func pickVariant(args []string, name string) (*scenario.Scenario, int, error) {
	var sc *scenario.Scenario
	if len(args) == 1 {
		var err error
		if sc, err = loadScenario(args[0]); err != nil {
			return nil, 0, err
		}
		if name == "" && len(sc.Variants) == 1 {
			name = sc.Variants[0].Name
		}
	} else {
		if name == "" {
			return nil, 0, usageError("--variant is required without a scenario file (one of: %s)", variant.NameList())
		}
		if _, ok := variant.Lookup(name); !ok {
			return nil, 0, usageError("--variant %q is not a variant (use one of: %s)", name, variant.NameList())
		}
		sc = defaultScenario(name)
	}
	i := sc.Index(name)
	if i < 0 {
		return nil, 0, usageError("--variant %q: the scenario has no variant of that name", name)
	}
	return sc, i, nil
}
