package main

import (
	"github.com/spf13/pflag"

	"github.com/droprun/droprun/harness/scenario"
	"github.com/droprun/droprun/harness/traffic"
)

// consent is what the user allows a scenario beyond its data's own
// reach, flag by flag: a kubeconfig's plugins, a node image, load beyond
// 127.0.0.1, and pods beyond the Pod Security baseline. run and deploy
// take the same flags, recorded on the scenario by apply.
type consent struct {
	trust        bool
	nodeImage    string
	allowTargets []string
	privileged   bool
}

// flags registers the consent flags on f.
func (c *consent) flags(f *pflag.FlagSet) {
	f.BoolVar(&c.trust, "trust-kubeconfig", false, trustKubeconfigUsage)
	f.StringVar(&c.nodeImage, "allow-node-image", "", allowNodeImageUsage)
	f.StringArrayVar(&c.allowTargets, "allow-target", nil, "on an existing cluster, allow load to go to this HOST[:PORT] beyond 127.0.0.1 (the load balancer or ingress of cluster.existing.url)")
	f.BoolVar(&c.privileged, "allow-privileged", false, "apply the custom app's manifests though they ask for more than the Pod Security baseline (a privileged container, the host's namespaces, ports or paths, added capabilities, another service account): on kind that reaches this host; see docs/security.md")
}

// apply records the consent on sc and returns the hosts --allow-target
// named. A flag naming what the scenario does not have is bad usage.
func (c *consent) apply(sc *scenario.Scenario) ([]traffic.AllowTarget, error) {
	trustKubeconfig(sc, c.trust)
	if err := allowNodeImage(sc, c.nodeImage); err != nil {
		return nil, err
	}
	if c.privileged {
		if sc.App.Custom == nil {
			return nil, usageError("--allow-privileged applies to a custom app's manifests (app.custom); this scenario runs bookshop, whose pods need no privilege: leave it out")
		}
		sc.App.Custom.PrivilegedAllowed = true
	}
	return parseAllowTargets(c.allowTargets)
}
