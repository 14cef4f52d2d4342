package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/droprun/droprun/harness/scenario"
	"github.com/droprun/droprun/harness/testbed/render"
	"github.com/droprun/droprun/harness/variant"
)

func newRenderCmd(s streams) *cobra.Command {
	var name, ver string
	var initial bool
	cmd := &cobra.Command{
		Use:   "render --variant NAME [SCENARIO]",
		Short: "Print the Deployment and Service droprun applies for a variant",
		Long: `Print, as YAML, the objects droprun applies (with server-side apply) for one
variant: the web Deployment and its NodePort Service (30080), plus the gateway
Deployment and Service (30081) when the scenario sends traffic through it.

Without SCENARIO the variant is rendered with droprun's defaults (2 replicas,
25%/25% surge/unavailable, a 30 s grace period, a 5 s preStop sleep). With a
SCENARIO, --variant names one of its variants (by name) and every setting of
the scenario applies. The variants are:

` + variantHelp() + `
Examples:
  droprun render --variant prestop-sleep
  droprun render --variant the-trap --initial scenarios/the-trap.yaml
  droprun render --variant graceful-drain --app-version v2 scenarios/compare-all.yaml | kubectl diff -f -`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			sc, i, version, err := pickVariantVersion(args, name, ver)
			if err != nil {
				return err
			}
			objs, err := render.Render(sc, i, version, initial, "")
			if err != nil {
				return err
			}
			y, err := render.YAML(objs.List()...)
			if err != nil {
				return err
			}
			_, err = s.Out.Write(y)
			return err
		},
	}
	cmd.Flags().StringVar(&name, "variant", "", "the variant to render: a built-in name, or a variant's name in SCENARIO")
	cmd.Flags().StringVar(&ver, "app-version", "v1", "the app version the Deployment runs: v1 or v2 (rollouts alternate between them)")
	cmd.Flags().BoolVar(&initial, "initial", false, "render the state before the first rollout (the variant's 'from', e.g. the trap's no-prestop)")
	return cmd
}

// defaultScenario is the scenario `render` uses without a file: one
// built-in variant with every default.
func defaultScenario(name string) *scenario.Scenario { return scenario.OfVariant(name) }

// variantHelp lists the built-in variants for --help texts.
func variantHelp() string {
	var b strings.Builder
	for _, v := range variant.All() {
		fmt.Fprintf(&b, "  %-24s %s\n", v.Name, v.Summary)
	}
	return b.String()
}
