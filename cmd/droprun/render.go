package main

import (
	"fmt"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"strings"

	"github.com/spf13/cobra"

	"github.com/droprun/droprun/harness/image"
	"github.com/droprun/droprun/harness/scenario"
	"github.com/droprun/droprun/harness/testbed/render"
	"github.com/droprun/droprun/harness/variant"
)

func newRenderCmd(s streams) *cobra.Command {
	var name, ver string
	var initial bool
	cmd := &cobra.Command{
		Use:   "render --variant NAME [SCENARIO]",
		Short: "Print the objects droprun applies for a variant",
		Long: `Print, as YAML, the objects droprun applies (with server-side apply) for one
variant: the web Deployment and its NodePort Service (30080), the front's
objects (30081) when the scenario sends traffic through one, and the
generators' Job when the load comes from pods (traffic.generators), with
stand-ins for what only a run knows (its nodes' addresses, its control
token, the generator image's tag; FRONT_TOKEN, the random token of Traefik's
API, which a run makes once per namespace and keeps).

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
			for _, o := range objs.Front {
				if s, ok := o.(*corev1ac.SecretApplyConfiguration); ok {
					s.Data = nil // shown as the stand-in, not as base64
					s.WithStringData(map[string]string{variant.FrontTokenKey: "FRONT_TOKEN"})
				}
			}
			y, err := render.YAML(objs.List()...)
			if err != nil {
				return err
			}
			if sc.Traffic.FromPods() {
				job, err := generatorsJob(sc, i, objs)
				if err != nil {
					return err
				}
				y = append(append(y, "---\n"+generatorsNote...), job...)
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

// generatorsNote heads the generators' Job in render's output: what it
// shows in place of what only a run knows.
const generatorsNote = `# The generators' Job, as a run applies it for this variant (one per variant).
# Only a run knows: NODE_IP, each node's InternalIP (one --target per node);
# SERVICE_PORT, the port of your own Service (app.custom.service) that targets
# the app; RUN_TOKEN, the random control token it makes; and SOURCE_HASH, the
# tag of the generator image it builds (its binary's SHA-256, 12 digits).
`

// generatorsJob is the YAML of the generators' Job a run of variant i of
// sc applies, with stand-ins for what only a run knows (generatorsNote).
func generatorsJob(sc *scenario.Scenario, i int, objs render.Objects) ([]byte, error) {
	p := sc.Path()
	var targets []string
	switch c := sc.App.Custom; {
	case !p.Inside:
		targets = []string{fmt.Sprintf("http://NODE_IP:%d%s", p.NodePort, sc.Traffic.Path)}
	case c != nil && c.Service != "":
		targets = []string{render.ServiceURL(c.Service, sc.Namespace, "SERVICE_PORT", sc.Traffic.Path)}
	default: // droprun's Service for the app
		targets = []string{render.ServiceURL(*objs.Service.Name, sc.Namespace, fmt.Sprint(*objs.Service.Spec.Ports[0].Port), sc.Traffic.Path)}
	}
	img := sc.Traffic.Generators.Image
	if img == "" {
		img = image.GeneratorRepository + ":SOURCE_HASH"
	}
	g := render.GeneratorsOf(sc, render.LoadConfig(sc, sc.Variants[i].Name), img, targets)
	g.Token = "RUN_TOKEN"
	job, err := render.GeneratorsJob(g)
	if err != nil {
		return nil, err
	}
	return render.YAML(job)
}
