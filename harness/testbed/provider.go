package testbed

import (
	"context"
	"io"

	"github.com/droprun/droprun/harness/cluster"
	"github.com/droprun/droprun/harness/engine"
	"github.com/droprun/droprun/harness/scenario"
)

// providerOf chooses the scenario's cluster provider, once: the existing
// cluster it names, or droprun's kind cluster (created when
// Options.CreateCluster, else found running).
func providerOf(sc *scenario.Scenario, o Options) (cluster.Provider, error) {
	if e := sc.Cluster.Existing; e != nil {
		return cluster.ExistingProvider{Kubeconfig: e.Kubeconfig, Context: e.Context, AllowContext: o.AllowContext, Trusted: e.Trusted}, nil
	}
	k, err := NewKind(o.Log)
	if err != nil {
		return nil, err
	}
	return cluster.KindProvider{Kind: k, Config: KindConfig(sc.Cluster.Kind), Create: o.CreateCluster}, nil
}

// NewKind returns droprun's kind manager, printing progress to log, on
// this machine's engine as harness/engine checks it.
func NewKind(log io.Writer) (*cluster.Kind, error) {
	return cluster.NewKind(log, cluster.Host{
		Ready: func(ctx context.Context) error {
			_, err := engine.DockerInfo(ctx)
			return err
		},
		LacksSysResource: engine.LacksCapSysResource,
	})
}

// KindConfig returns the cluster config of a defaulted scenario's kind
// block.
func KindConfig(k *scenario.KindCluster) cluster.Config {
	return cluster.Config{
		Name:            k.Name,
		Nodes:           k.Nodes,
		KubeProxyMode:   k.KubeProxyMode,
		NodeImage:       k.NodeImage,
		HostPort:        k.HostPort,
		GatewayHostPort: k.GatewayHostPort,
	}
}
