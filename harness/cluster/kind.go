package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/kind/pkg/cluster"
	"sigs.k8s.io/kind/pkg/cluster/nodeutils"
	"sigs.k8s.io/kind/pkg/exec"

	"github.com/droprun/droprun/harness/nodeimage"
)

// Kind manages droprun's kind clusters through the kind library. It never
// runs the kind binary and never writes the user's ~/.kube/config.
type Kind struct {
	provider *cluster.Provider
	log      io.Writer
	// StateDir holds one kubeconfig per cluster (default: the user's config
	// directory, droprun/).
	StateDir string
	// ReadyTimeout bounds the wait for every node to be Ready. Default 3m.
	ReadyTimeout time.Duration
	// NodeImages chooses the node image of a new cluster and makes it
	// present (pull or offline build); NewKind sends its progress to log.
	NodeImages nodeimage.Selector
	host       Host
}

// Host is what a kind cluster needs of this machine's container engine
// (harness/engine gives both: testbed.NewKind).
type Host struct {
	// Ready checks that the engine answers, before kind is asked to use
	// it, with an error that says what to do.
	Ready func(ctx context.Context) error
	// LacksSysResource reports a host whose capability bounding set lacks
	// CAP_SYS_RESOURCE (a node image that is not droprun's then needs
	// containerd's restrict_oom_score_adj).
	LacksSysResource func() (bool, error)
}

// NewKind returns a Kind that prints progress to log, on host's engine.
func NewKind(log io.Writer, host Host) (*Kind, error) {
	if host.Ready == nil || host.LacksSysResource == nil {
		return nil, errors.New("cluster.NewKind: the host's engine checks are missing (testbed.NewKind gives them)")
	}
	dir, err := os.UserConfigDir()
	if err != nil {
		return nil, fmt.Errorf("finding a directory for kubeconfigs: %w", err)
	}
	return &Kind{
		provider:     cluster.NewProvider(cluster.ProviderWithDocker(), cluster.ProviderWithLogger(kindLogger{log})),
		log:          log,
		StateDir:     filepath.Join(dir, "droprun"),
		ReadyTimeout: 3 * time.Minute,
		NodeImages:   nodeimage.Selector{Out: log},
		host:         host,
	}, nil
}

// Cluster is a running cluster droprun can use.
type Cluster struct {
	Name string
	// Kubeconfig is the path of the cluster's kubeconfig, droprun's own.
	Kubeconfig string
	Client     kubernetes.Interface
	// Created is true when Up created the cluster, false when it reused one.
	Created bool
	// NodeImage is the image the nodes run, and where it came from (its
	// Source is empty for a cluster that was already running).
	NodeImage nodeimage.Choice
	// Provider names the provider that opened it (ProviderKind,
	// ProviderExisting).
	Provider string
	// Entries are a kind cluster's host ports, one per node
	// (Config.Entries); nil for an existing cluster.
	Entries []Entry
	// nodes offer what droprun can do inside the nodes (nodes.go); nil
	// when nothing (an existing cluster).
	nodes any
	// down deletes the cluster; nil for one droprun may not delete.
	down func(ctx context.Context) error
}

// Down deletes the cluster when droprun manages it (a kind cluster); an
// existing cluster is never deleted, and Down says so.
func (c *Cluster) Down(ctx context.Context) error {
	if c.down == nil {
		return fmt.Errorf("cluster %s is not droprun's to delete", c.Name)
	}
	return c.down(ctx)
}

// Deletable reports whether Down would delete the cluster.
func (c *Cluster) Deletable() bool { return c.down != nil }

// KubeconfigPath is where droprun keeps the kubeconfig of cluster name.
func (k *Kind) KubeconfigPath(name string) string {
	return filepath.Join(k.StateDir, "kind-"+name+".kubeconfig")
}

// Up creates the cluster c, or reuses a running cluster of the same name
// when it was created with the same config, and waits until every node is
// Ready. A cluster of that name with another config is an error: droprun
// never deletes a cluster it was not asked to.
func (k *Kind) Up(ctx context.Context, c Config) (*Cluster, error) {
	start := time.Now()
	exists, err := k.exists(ctx, c.Name)
	if err != nil {
		return nil, err
	}
	var img nodeimage.Choice
	if exists {
		c, img, err = k.runningImage(ctx, c)
	} else {
		c, img, err = k.create(ctx, c)
	}
	if err != nil {
		return nil, err
	}
	cl, err := k.ready(ctx, c, exists)
	if err != nil {
		return nil, err
	}
	cl.Created, cl.NodeImage = !exists, img
	verb := "reused"
	if cl.Created {
		verb = "created"
	}
	fmt.Fprintf(k.log, "cluster %q %s and Ready in %s; kubeconfig %s\n", c.Name, verb, time.Since(start).Round(time.Second), cl.Kubeconfig)
	return cl, nil
}

// Connect returns the running cluster c without creating it: a missing
// cluster, or one created with another config, is an error that says what
// to do.
func (k *Kind) Connect(ctx context.Context, c Config) (*Cluster, error) {
	exists, err := k.exists(ctx, c.Name)
	if err != nil {
		return nil, err
	}
	if !exists {
		return nil, fmt.Errorf("%w: %q: create it with `droprun cluster up --name %s` (or pass --create)", ErrNoCluster, c.Name, c.Name)
	}
	c, img, err := k.runningImage(ctx, c)
	if err != nil {
		return nil, err
	}
	cl, err := k.ready(ctx, c, true)
	if err != nil {
		return nil, err
	}
	cl.NodeImage = img
	return cl, nil
}

// runningImage resolves c's node image for a cluster that already runs:
// auto means whatever image its control plane runs, and the containerd
// patch follows that image's labels, so that c hashes as it did when the
// cluster was created (checkMatches).
func (k *Kind) runningImage(ctx context.Context, c Config) (Config, nodeimage.Choice, error) {
	node := NodeName(c.Name, 0)
	out, err := osexec.CommandContext(ctx, "docker", "container", "inspect", "--format",
		fmt.Sprintf(`{{.Config.Image}} {{index .Config.Labels %q}}`, nodeimage.LabelInputs), node).Output()
	if err != nil {
		return c, nodeimage.Choice{}, fmt.Errorf("reading the node image of %s (%w): delete the cluster with `droprun cluster down --name %s` if it is broken", node, err, c.Name)
	}
	image, inputs, _ := strings.Cut(strings.TrimSpace(string(out)), " ")
	if inputs == "<no value>" {
		inputs = ""
	}
	img := nodeimage.Choice{Image: image, Auto: c.NodeImage == nodeimage.Auto, Present: true, Droprun: inputs != "",
		Reason: "the image the running cluster's nodes run"}
	if c.NodeImage == nodeimage.Auto {
		c.NodeImage = image
	}
	if c.RestrictOOMScoreAdj, err = k.oomPatch(img.Droprun); err != nil {
		return c, img, err
	}
	return c, img, nil
}

// oomPatch reports whether nodes of a node image need the containerd
// restrict_oom_score_adj patch on this host: droprun's image has it built
// in; any other image needs it where CAP_SYS_RESOURCE is missing.
func (k *Kind) oomPatch(droprunImage bool) (bool, error) {
	if droprunImage {
		return false, nil
	}
	need, err := k.host.LacksSysResource()
	if err != nil {
		return false, fmt.Errorf("checking the host's capabilities for the node's containerd: %w", err)
	}
	return need, nil
}

// exists checks the engine and reports whether cluster name exists.
func (k *Kind) exists(ctx context.Context, name string) (bool, error) {
	if err := k.host.Ready(ctx); err != nil {
		return false, err
	}
	names, err := k.provider.List()
	if err != nil {
		return false, fmt.Errorf("listing kind clusters: %w", err)
	}
	return slices.Contains(names, name), nil
}

// ready connects to cluster c, checks that an existing one matches c, and
// waits until every node is Ready.
func (k *Kind) ready(ctx context.Context, c Config, existed bool) (*Cluster, error) {
	cl, err := k.connect(c.Name)
	if err != nil {
		return nil, err
	}
	if existed {
		if err := checkMatches(ctx, cl.Client, c); err != nil {
			return nil, err
		}
	}
	fmt.Fprintf(k.log, "waiting for %d node(s) to be Ready\n", c.Nodes)
	if err := WaitNodesReady(ctx, cl.Client, c.Nodes, k.ReadyTimeout); err != nil {
		return nil, err
	}
	return cl, nil
}

// create chooses the node image and makes it present (nodeimage.Selector:
// for auto, droprun's cached image, kind's published one when a registry
// serves it, or the offline build), then creates the cluster. It returns c
// with the image resolved.
func (k *Kind) create(ctx context.Context, c Config) (Config, nodeimage.Choice, error) {
	img, err := k.NodeImages.Choose(ctx, c.NodeImage)
	if err != nil {
		return c, img, err
	}
	fmt.Fprintf(k.log, "node image: %s\n", img)
	for _, e := range c.Entries() {
		for _, p := range []int{e.WebPort, e.GatewayPort} {
			if err := portFree(p); err != nil {
				return c, img, fmt.Errorf("host port for node %s: %w", e.Node, err)
			}
		}
	}
	if img, err = k.NodeImages.Ensure(ctx, img); err != nil {
		return c, img, err
	}
	c.NodeImage = img.Image
	if c.RestrictOOMScoreAdj, err = k.oomPatch(img.Droprun); err != nil {
		return c, img, err
	}
	if err := os.MkdirAll(k.StateDir, 0o700); err != nil {
		return c, img, err
	}
	fmt.Fprintf(k.log, "creating kind cluster %s\n", c)
	start := time.Now()
	err = k.provider.Create(c.Name,
		cluster.CreateWithV1Alpha4Config(KindConfig(c)),
		cluster.CreateWithKubeconfigPath(k.KubeconfigPath(c.Name)),
		cluster.CreateWithWaitForReady(2*time.Minute),
		cluster.CreateWithDisplayUsage(false),
		cluster.CreateWithDisplaySalutation(false),
	)
	if err != nil {
		return c, img, fmt.Errorf("creating kind cluster %q: %w", c.Name, withOutput(err))
	}
	fmt.Fprintf(k.log, "kind created %q in %s\n", c.Name, time.Since(start).Round(time.Second))
	return c, img, ctx.Err()
}

// withOutput adds the stderr of a failed command run by kind, which kind
// keeps out of the error text.
func withOutput(err error) error {
	if re := exec.RunErrorForError(err); re != nil && len(re.Output) > 0 {
		out := strings.TrimSpace(string(re.Output))
		if strings.Contains(out, "pull access denied") || strings.Contains(out, "failed to pull") || strings.Contains(out, "dial tcp") {
			return fmt.Errorf("%w: %s (the node image could not be pulled: build one with `droprun node-image build`)", err, out)
		}
		return fmt.Errorf("%w: %s", err, out)
	}
	return err
}

// portFree reports a host port on 127.0.0.1 that something else holds.
func portFree(port int) error {
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return fmt.Errorf("port %d on 127.0.0.1 is taken (%w): stop what holds it (`ss -ltnp 'sport = :%d'` shows it) or set cluster.kind.hostPort/gatewayHostPort in the scenario (node k uses hostPort+2k and gatewayHostPort+2k)", port, err, port)
	}
	return l.Close()
}

// connect writes the cluster's kubeconfig to droprun's own path and returns
// a client for it.
func (k *Kind) connect(name string) (*Cluster, error) {
	path := k.KubeconfigPath(name)
	if err := os.MkdirAll(k.StateDir, 0o700); err != nil {
		return nil, err
	}
	if err := k.provider.ExportKubeConfig(name, path, false); err != nil {
		return nil, fmt.Errorf("writing the kubeconfig of %q: %w", name, err)
	}
	client, err := clientFor(path, "")
	if err != nil {
		return nil, err
	}
	return &Cluster{Name: name, Kubeconfig: path, Client: client, Provider: ProviderKind, nodes: kindNodes{k, name},
		down: func(ctx context.Context) error { return k.Down(ctx, name) }}, nil
}

func clientFor(kubeconfig, context string) (*kubernetes.Clientset, error) {
	rc, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: kubeconfig},
		&clientcmd.ConfigOverrides{CurrentContext: context}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("reading kubeconfig %s: %w", kubeconfig, err)
	}
	setRateLimit(rc)
	return kubernetes.NewForConfig(rc)
}

// checkMatches compares a running cluster with the config asked for: the
// config hash on the control plane (it covers the host port layout), the
// node count, and the node names Entries attributes traffic to.
func checkMatches(ctx context.Context, client kubernetes.Interface, c Config) error {
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("cluster %q exists but does not answer (%w): delete it with `droprun cluster down --name %s`", c.Name, err, c.Name)
	}
	var got string
	names := map[string]bool{}
	for _, n := range nodes.Items {
		if h := n.Labels[LabelConfig]; h != "" {
			got = h
		}
		names[n.Name] = true
	}
	var missing []string
	for _, e := range c.Entries() {
		if !names[e.Node] {
			missing = append(missing, e.Node)
		}
	}
	if got != c.Hash() || len(nodes.Items) != c.Nodes || len(missing) > 0 {
		why := ""
		if len(missing) > 0 {
			why = "; no node named " + strings.Join(missing, ", ")
		}
		return fmt.Errorf("cluster %q exists with another configuration (%d nodes, config %q%s; asked for %s, config %q): delete it with `droprun cluster down --name %s`, or choose another cluster name",
			c.Name, len(nodes.Items), got, why, c, c.Hash(), c.Name)
	}
	return nil
}

// ErrNotDroprun says a kind cluster was not created by droprun.
var ErrNotDroprun = errors.New("not created by droprun")

// CheckOwned returns nil when kind cluster name does not exist or droprun
// created it (its control plane carries LabelConfig, which droprun's kind
// config sets), and an error wrapping ErrNotDroprun otherwise: a cluster
// whose nodes lack the label, or whose API does not answer within 20 s
// to show it, may be someone else's.
func (k *Kind) CheckOwned(ctx context.Context, name string) error {
	exists, err := k.exists(ctx, name)
	if err != nil || !exists {
		return err
	}
	cl, err := k.connect(name)
	if err != nil {
		return fmt.Errorf("kind cluster %q: %w: %v", name, ErrNotDroprun, err)
	}
	return checkOwned(ctx, cl.Client, name)
}

// checkOwned is CheckOwned on the cluster client answers for.
func checkOwned(ctx context.Context, client kubernetes.Interface, name string) error {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: LabelConfig})
	switch {
	case err != nil:
		return fmt.Errorf("kind cluster %q: its API does not answer (%v), so droprun cannot tell whether it created it: %w", name, err, ErrNotDroprun)
	case len(nodes.Items) == 0:
		return fmt.Errorf("kind cluster %q: %w (no node carries the %s label droprun's clusters have)", name, ErrNotDroprun, LabelConfig)
	}
	return nil
}

// Down deletes the cluster and its kubeconfig. Deleting a cluster that does
// not exist is not an error.
func (k *Kind) Down(ctx context.Context, name string) error {
	if err := k.host.Ready(ctx); err != nil {
		return err
	}
	start := time.Now()
	err := k.provider.Delete(name, k.KubeconfigPath(name))
	if err != nil && strings.Contains(withOutput(err).Error(), "did not receive an exit event") {
		// A pod cgroup left frozen inside a node (see thawNodes): thaw it
		// and delete again.
		if n := k.thawNodes(ctx, name); n > 0 {
			fmt.Fprintf(k.log, "cluster %q: thawed %d frozen cgroup(s) inside its nodes; deleting again\n", name, n)
			err = k.provider.Delete(name, k.KubeconfigPath(name))
		}
	}
	if err != nil {
		return fmt.Errorf("deleting kind cluster %q: %w", name, withOutput(err))
	}
	if err := os.Remove(k.KubeconfigPath(name)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	fmt.Fprintf(k.log, "cluster %q deleted in %s\n", name, time.Since(start).Round(time.Second))
	return nil
}

// NodeStatus is one node as `droprun cluster status` shows it.
type NodeStatus struct {
	Name    string
	Role    string
	Ready   bool
	Version string
	// Reason says why a node is not Ready, from its Ready condition.
	Reason string
}

// Status lists the nodes of cluster name with their readiness. It returns
// ErrNoCluster when there is no such cluster.
func (k *Kind) Status(ctx context.Context, name string) ([]NodeStatus, error) {
	exists, err := k.exists(ctx, name)
	if err != nil {
		return nil, err
	}
	if !exists {
		return nil, fmt.Errorf("%w: %q: create it with `droprun cluster up --name %s`", ErrNoCluster, name, name)
	}
	cl, err := k.connect(name)
	if err != nil {
		return nil, err
	}
	nodes, err := cl.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing the nodes of %q: %w", name, err)
	}
	var out []NodeStatus
	for _, n := range nodes.Items {
		st := NodeStatus{Name: n.Name, Role: "worker", Version: n.Status.NodeInfo.KubeletVersion}
		if _, cp := n.Labels["node-role.kubernetes.io/control-plane"]; cp {
			st.Role = "control-plane"
		}
		st.Ready, st.Reason = nodeReady(&n)
		out = append(out, st)
	}
	return out, nil
}

// ErrNoCluster means the named kind cluster does not exist.
var ErrNoCluster = errors.New("no such kind cluster")

func nodeReady(n *corev1.Node) (bool, string) {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue, c.Reason + ": " + c.Message
		}
	}
	return false, "no Ready condition yet"
}

// LoadImageArchive imports an image archive (docker-save format) into the
// containerd of every node of cluster name, the way `kind load
// image-archive` does.
func (k *Kind) LoadImageArchive(ctx context.Context, name, archive string) error {
	nodes, err := k.provider.ListInternalNodes(name)
	if err != nil {
		return fmt.Errorf("listing the nodes of %q: %w", name, err)
	}
	if len(nodes) == 0 {
		return fmt.Errorf("%w: %q", ErrNoCluster, name)
	}
	start := time.Now()
	for _, n := range nodes {
		if err := ctx.Err(); err != nil {
			return err
		}
		f, err := os.Open(archive)
		if err != nil {
			return fmt.Errorf("opening image archive: %w", err)
		}
		err = nodeutils.LoadImageArchive(n, f)
		f.Close()
		if err != nil {
			return fmt.Errorf("loading %s into node %s: %w", archive, n.String(), withOutput(err))
		}
	}
	fmt.Fprintf(k.log, "loaded %s into %d node(s) in %s\n", filepath.Base(archive), len(nodes), time.Since(start).Round(100*time.Millisecond))
	return nil
}
