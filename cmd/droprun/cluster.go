package main

import (
	"errors"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/droprun/droprun/harness/cluster"
	"github.com/droprun/droprun/harness/imageref"
	"github.com/droprun/droprun/harness/scenario"
	"github.com/droprun/droprun/harness/testbed"
)

func newClusterCmd(s streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "Create, inspect and delete droprun's kind cluster",
		Long: `Manage droprun's kind cluster through the kind library (never the kind binary).

The default cluster is 1 control plane + 2 workers, kube-proxy
in iptables mode. Its node image (--node-image, default auto) is droprun's
cached image, else kind's published image when a registry serves it (pulled,
with kind's own CNI), else droprun's image built offline (about 15 min on 2
cores the first time; 'droprun node-image build' does it ahead). An image
reference is used as given, pulled when missing. Every node k (0 = the control plane, then the
workers) gets its own host ports on 127.0.0.1: web NodePort at --host-port+2k
(30080, 30082, 30084) and the gateway's at --gateway-host-port+2k (30081,
30083, 30085), so traffic can enter through every node's kube-proxy. Its
kubeconfig is written to droprun's own directory, never into ~/.kube/config.`,
	}
	cmd.AddCommand(newClusterUpCmd(s), newClusterDownCmd(s), newClusterStatusCmd(s))
	return cmd
}

// clusterFlags are the cluster settings a command takes from a scenario
// file (-f) and flags, flags winning.
type clusterFlags struct {
	file string
	kind scenario.KindCluster
}

func (f *clusterFlags) register(fs *pflag.FlagSet, all bool) {
	fs.StringVarP(&f.file, "file", "f", "", "take the cluster settings from this scenario file")
	fs.StringVar(&f.kind.Name, "name", "", "kind cluster name (default "+scenario.DefaultClusterName+")")
	if !all {
		return
	}
	fs.IntVar(&f.kind.Nodes, "nodes", 0, "total nodes: 1 control plane + workers (default 3)")
	fs.StringVar(&f.kind.KubeProxyMode, "kube-proxy-mode", "", "iptables (default), nftables or ipvs")
	fs.StringVar(&f.kind.NodeImage, "node-image", "", "node image: auto, or an image with a tag or digest (default "+scenario.DefaultNodeImage+")")
	fs.IntVar(&f.kind.HostPort, "host-port", 0, "127.0.0.1 port mapped to the control plane's web NodePort 30080; node k gets this+2k (default 30080)")
	fs.IntVar(&f.kind.GatewayHostPort, "gateway-host-port", 0, "127.0.0.1 port mapped to the control plane's gateway NodePort 30081; node k gets this+2k (default 30081)")
}

// config merges the scenario file's kind block (if any) with the flags.
func (f *clusterFlags) config() (cluster.Config, error) {
	k := scenario.KindCluster{}
	if f.file != "" {
		sc, err := scenario.Load(f.file)
		if err != nil {
			return cluster.Config{}, err
		}
		if sc.Cluster.Kind == nil {
			return cluster.Config{}, usageError("%s uses an existing cluster, not a kind cluster", f.file)
		}
		k = *sc.Cluster.Kind
		// A node image the file names runs privileged as every node: one
		// other than droprun's or kind's needs the user's word, given as
		// --node-image on the command line.
		if f.kind.NodeImage == "" && !imageref.KnownNode(k.NodeImage) {
			return cluster.Config{}, usageError("%s names the node image %s, neither droprun's (%s:…) nor kind's (%s:…); a node image runs privileged on this host: if you trust it, pass --node-image %s",
				f.file, k.NodeImage, imageref.DroprunNodeRepo, imageref.KindNodeRepo, k.NodeImage)
		}
	}
	override(&k.Name, f.kind.Name)
	override(&k.Nodes, f.kind.Nodes)
	override(&k.KubeProxyMode, f.kind.KubeProxyMode)
	override(&k.NodeImage, f.kind.NodeImage)
	override(&k.HostPort, f.kind.HostPort)
	override(&k.GatewayHostPort, f.kind.GatewayHostPort)
	// Defaults and validation are the scenario's: build a minimal one.
	sc := &scenario.Scenario{APIVersion: scenario.APIVersion, Kind: scenario.Kind, Metadata: scenario.Metadata{Name: "cluster"},
		Cluster: scenario.Cluster{Kind: &k}, Variants: []scenario.Variant{{Variant: "no-prestop"}}}
	sc.Default()
	for _, fe := range sc.Validate() {
		return cluster.Config{}, usageError("%s", fe.String())
	}
	return testbed.KindConfig(sc.Cluster.Kind), nil
}

// withKind makes a command's RunE: it resolves the cluster config from the
// flags and hands it to fn with a kind manager that logs to stderr.
func (f *clusterFlags) withKind(s streams, fn func(*cobra.Command, *cluster.Kind, cluster.Config) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, _ []string) error {
		cfg, err := f.config()
		if err != nil {
			return err
		}
		k, err := testbed.NewKind(s.Err)
		if err != nil {
			return err
		}
		return fn(cmd, k, cfg)
	}
}

func override[T comparable](field *T, v T) {
	var zero T
	if v != zero {
		*field = v
	}
}

func newClusterUpCmd(s streams) *cobra.Command {
	var f clusterFlags
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Create the kind cluster, or reuse it when its config matches, and wait for every node",
		Long: `Create the kind cluster, or reuse a running one of the same name when it was
created with the same settings (a cluster of that name with other settings is
an error: droprun never deletes a cluster it was not asked to). Then wait
until every node is Ready; kind's own wait covers only the control plane.

Examples:
  droprun cluster up
  droprun cluster up --nodes 1 --name solo --host-port 31080 --gateway-host-port 31081
  droprun cluster up -f scenarios/compare-all.yaml`,
		Args: cobra.NoArgs,
		RunE: f.withKind(s, func(cmd *cobra.Command, k *cluster.Kind, cfg cluster.Config) error {
			cl, err := k.Up(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			fmt.Fprintf(s.Out, "export KUBECONFIG=%s\n", cl.Kubeconfig)
			return nil
		}),
	}
	f.register(cmd.Flags(), true)
	return cmd
}

func newClusterDownCmd(s streams) *cobra.Command {
	var f clusterFlags
	var force bool
	cmd := &cobra.Command{
		Use:   "down",
		Short: "Delete the kind cluster and its kubeconfig",
		Long: `Delete droprun's kind cluster and the kubeconfig droprun keeps for it.

Only a cluster droprun created is deleted: its control plane carries the
` + cluster.LabelConfig + ` node label. Another kind cluster of that name
(yours, made with 'kind create cluster') is refused unless --force.

Examples:
  droprun cluster down
  droprun cluster down --name solo`,
		Args: cobra.NoArgs,
		RunE: f.withKind(s, func(cmd *cobra.Command, k *cluster.Kind, cfg cluster.Config) error {
			if !force {
				if err := k.CheckOwned(cmd.Context(), cfg.Name); errors.Is(err, cluster.ErrNotDroprun) {
					return fmt.Errorf("%w; droprun deletes only its own clusters: pass --force to delete it anyway", err)
				} else if err != nil {
					return err
				}
			}
			return k.Down(cmd.Context(), cfg.Name)
		}),
	}
	f.register(cmd.Flags(), false)
	cmd.Flags().BoolVar(&force, "force", false, "delete the kind cluster even if droprun did not create it")
	return cmd
}

func newClusterStatusCmd(s streams) *cobra.Command {
	var f clusterFlags
	cmd := &cobra.Command{
		Use:   "status",
		Short: "List the cluster's nodes, Ready or NotReady (exit 1 unless all are Ready)",
		Args:  cobra.NoArgs,
		RunE: f.withKind(s, func(cmd *cobra.Command, k *cluster.Kind, cfg cluster.Config) error {
			nodes, err := k.Status(cmd.Context(), cfg.Name)
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(s.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NODE\tROLE\tSTATUS\tVERSION\tREASON")
			notReady := 0
			for _, n := range nodes {
				st, why := "Ready", ""
				if !n.Ready {
					st, why = "NotReady", n.Reason
					notReady++
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", n.Name, n.Role, st, n.Version, why)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if notReady > 0 {
				return &exitError{code: 1, err: fmt.Errorf("%d of %d nodes are not Ready", notReady, len(nodes))}
			}
			return nil
		}),
	}
	f.register(cmd.Flags(), false)
	return cmd
}
