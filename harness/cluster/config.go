package cluster

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"sigs.k8s.io/kind/pkg/apis/config/v1alpha4"

	"github.com/droprun/droprun/harness/variant"
)

// Config is the kind cluster droprun creates.
type Config struct {
	// Name of the kind cluster (its node containers are <name>-control-plane,
	// <name>-worker, <name>-worker2...).
	Name string
	// Nodes is the total node count: one control plane and Nodes-1 workers.
	Nodes int
	// KubeProxyMode is iptables, nftables or ipvs.
	KubeProxyMode string
	// NodeImage is set on every node: kind's default is pinned by digest and
	// would be pulled. nodeimage.Auto lets Kind choose (nodeimage.Selector);
	// Kind resolves it to the image before it renders or hashes the config.
	NodeImage string
	// RestrictOOMScoreAdj adds a containerd patch (restrict_oom_score_adj =
	// true) for a node image that is not droprun's, on a host whose
	// capability bounding set lacks CAP_SYS_RESOURCE: nothing inside a node
	// may lower oom_score_adj there. droprun's image has it built in.
	RestrictOOMScoreAdj bool
	// HostPort and GatewayHostPort are the 127.0.0.1 ports of node 0 (the
	// control plane) for the web (30080) and gateway (30081) NodePorts;
	// node k gets HostPort+2k and GatewayHostPort+2k (see Entries).
	HostPort, GatewayHostPort int
}

// Entry is one node's way in from the host: the 127.0.0.1 ports mapped to
// the web and gateway NodePorts on that node, so that load can enter the
// cluster through every node, as a cloud load balancer spreads it.
type Entry struct {
	// Node is the kind node container name, which is also its Kubernetes
	// node name.
	Node string
	// WebPort reaches the web NodePort (30080) on Node; GatewayPort the
	// gateway's (30081).
	WebPort, GatewayPort int
}

// HostPort returns the 127.0.0.1 port that reaches nodePort on e.Node: its
// WebPort or its GatewayPort (0 for a node port kind maps no host port to).
func (e Entry) HostPort(nodePort int32) int {
	switch nodePort {
	case variant.WebNodePort:
		return e.WebPort
	case variant.GatewayNodePort:
		return e.GatewayPort
	}
	return 0
}

// NodeName returns the name kind gives node k of cluster name, in the
// order of its config: <name>-control-plane for k = 0, then
// <name>-worker, <name>-worker2, <name>-worker3... (kind's
// common.MakeNodeNamer numbers a role's second node 2).
func NodeName(name string, k int) string {
	switch k {
	case 0:
		return name + "-control-plane"
	case 1:
		return name + "-worker"
	}
	return fmt.Sprintf("%s-worker%d", name, k)
}

// Entries returns every node's host ports, control plane first: node k
// gets HostPort+2k (web) and GatewayHostPort+2k (gateway).
func (c Config) Entries() []Entry {
	out := make([]Entry, max(c.Nodes, 0))
	for k := range out {
		out[k] = Entry{Node: NodeName(c.Name, k), WebPort: c.HostPort + 2*k, GatewayPort: c.GatewayHostPort + 2*k}
	}
	return out
}

// LabelConfig is a node label on the control plane holding the hash of the
// Config the cluster was created with, so a later run can tell whether an
// existing cluster of the same name is the one it asks for.
const LabelConfig = "droprun.dev/config"

// Hash identifies a Config; two clusters with the same hash are
// interchangeable for droprun. It hashes the kind config c renders to
// (without the label that carries the hash), so whatever changes the
// cluster kind builds, such as the host port layout or a kubeadm patch,
// changes the hash and keeps an older cluster from being reused.
func (c Config) Hash() string {
	b, _ := json.Marshal(render(c, nil))
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])[:16]
}

// kubeletPatch lets the kubelet (≥ 1.35) run on a cgroup v1 host, which
// this project's machines are; it changes nothing on cgroup v2. It goes to
// every node image: droprun's also passes --fail-cgroupv1=false, kind's
// published one does not.
const kubeletPatch = `kind: KubeletConfiguration
failCgroupV1: false
`

// containerdOOMPatch is restrict_oom_score_adj = true in the node's
// containerd CRI config (kind's images/base config.toml, version 2).
const containerdOOMPatch = `[plugins."io.containerd.grpc.v1.cri"]
  restrict_oom_score_adj = true
`

// kubeProxyPatch exposes kube-proxy's metrics on the node address, where
// the API server's pod proxy reaches them: droprun reads each node's last
// rule sync from them (the "routed" stage of a rollout). kube-proxy's
// default is 127.0.0.1:10249, unreachable from outside the node.
const kubeProxyPatch = `apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
metricsBindAddress: 0.0.0.0:10249
`

// KindConfig renders c as kind's v1alpha4 cluster config: a control plane
// that carries the config label and Nodes-1 workers, all on NodeImage,
// each with its Entry's host ports mapped on 127.0.0.1.
func KindConfig(c Config) *v1alpha4.Cluster {
	return render(c, map[string]string{LabelConfig: c.Hash()})
}

// render builds the kind config with cpLabels on the control plane.
func render(c Config, cpLabels map[string]string) *v1alpha4.Cluster {
	cfg := &v1alpha4.Cluster{
		TypeMeta:             v1alpha4.TypeMeta{Kind: "Cluster", APIVersion: "kind.x-k8s.io/v1alpha4"},
		Name:                 c.Name,
		Networking:           v1alpha4.Networking{KubeProxyMode: v1alpha4.ProxyMode(c.KubeProxyMode)},
		KubeadmConfigPatches: []string{kubeletPatch, kubeProxyPatch},
	}
	if c.RestrictOOMScoreAdj {
		cfg.ContainerdConfigPatches = []string{containerdOOMPatch}
	}
	for k, e := range c.Entries() {
		n := v1alpha4.Node{
			Role:  v1alpha4.WorkerRole,
			Image: c.NodeImage,
			ExtraPortMappings: []v1alpha4.PortMapping{
				{ContainerPort: variant.WebNodePort, HostPort: int32(e.WebPort), ListenAddress: "127.0.0.1", Protocol: v1alpha4.PortMappingProtocolTCP},
				{ContainerPort: variant.GatewayNodePort, HostPort: int32(e.GatewayPort), ListenAddress: "127.0.0.1", Protocol: v1alpha4.PortMappingProtocolTCP},
			},
		}
		if k == 0 {
			n.Role, n.Labels = v1alpha4.ControlPlaneRole, cpLabels
		}
		cfg.Nodes = append(cfg.Nodes, n)
	}
	return cfg
}

// String describes c in one line for progress output.
func (c Config) String() string {
	return fmt.Sprintf("%q: %d node(s), kube-proxy %s, image %s, %s",
		c.Name, c.Nodes, c.KubeProxyMode, c.NodeImage, c.portsString())
}

// portsString describes the host port layout: "127.0.0.1:30080,30082,30084→30080
// (web), 127.0.0.1:30081,30083,30085→30081 (gateway), one per node".
func (c Config) portsString() string {
	var web, gw []string
	for _, e := range c.Entries() {
		web = append(web, strconv.Itoa(e.WebPort))
		gw = append(gw, strconv.Itoa(e.GatewayPort))
	}
	return fmt.Sprintf("127.0.0.1:%s→%d (web), 127.0.0.1:%s→%d (gateway), one per node",
		strings.Join(web, ","), variant.WebNodePort, strings.Join(gw, ","), variant.GatewayNodePort)
}
