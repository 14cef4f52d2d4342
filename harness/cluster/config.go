package cluster

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"sigs.k8s.io/kind/pkg/apis/config/v1alpha4"

	"github.com/droprun/droprun/harness/scenario"
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
	// would be pulled.
	NodeImage string
	// HostPort on 127.0.0.1 reaches the web Service's NodePort (30080);
	// GatewayHostPort reaches the gateway's (30081).
	HostPort, GatewayHostPort int
}

// FromScenario returns the cluster config of a defaulted scenario's kind
// block.
func FromScenario(k *scenario.KindCluster) Config {
	return Config{
		Name:            k.Name,
		Nodes:           k.Nodes,
		KubeProxyMode:   k.KubeProxyMode,
		NodeImage:       k.NodeImage,
		HostPort:        k.HostPort,
		GatewayHostPort: k.GatewayHostPort,
	}
}

// LabelConfig is a node label on the control plane holding the hash of the
// Config the cluster was created with, so a later run can tell whether an
// existing cluster of the same name is the one it asks for.
const LabelConfig = "droprun.dev/config"

// Hash identifies a Config; two clusters with the same hash are
// interchangeable for droprun.
func (c Config) Hash() string {
	b, _ := json.Marshal(c)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])[:16]
}

// kubeletPatch lets the kubelet (≥ 1.35) run on a cgroup v1 host, which
// this project's machines are; it changes nothing on cgroup v2.
const kubeletPatch = `kind: KubeletConfiguration
failCgroupV1: false
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
// that carries the host port mappings (a NodePort answers on every node) and
// Nodes-1 workers, all on NodeImage.
func KindConfig(c Config) *v1alpha4.Cluster {
	cp := v1alpha4.Node{
		Role:   v1alpha4.ControlPlaneRole,
		Image:  c.NodeImage,
		Labels: map[string]string{LabelConfig: c.Hash()},
		ExtraPortMappings: []v1alpha4.PortMapping{
			{ContainerPort: variant.WebNodePort, HostPort: int32(c.HostPort), ListenAddress: "127.0.0.1", Protocol: v1alpha4.PortMappingProtocolTCP},
			{ContainerPort: variant.GatewayNodePort, HostPort: int32(c.GatewayHostPort), ListenAddress: "127.0.0.1", Protocol: v1alpha4.PortMappingProtocolTCP},
		},
	}
	cfg := &v1alpha4.Cluster{
		TypeMeta:             v1alpha4.TypeMeta{Kind: "Cluster", APIVersion: "kind.x-k8s.io/v1alpha4"},
		Name:                 c.Name,
		Nodes:                []v1alpha4.Node{cp},
		Networking:           v1alpha4.Networking{KubeProxyMode: v1alpha4.ProxyMode(c.KubeProxyMode)},
		KubeadmConfigPatches: []string{kubeletPatch, kubeProxyPatch},
	}
	for range c.Nodes - 1 {
		cfg.Nodes = append(cfg.Nodes, v1alpha4.Node{Role: v1alpha4.WorkerRole, Image: c.NodeImage})
	}
	return cfg
}

// String describes c in one line for progress output.
func (c Config) String() string {
	return fmt.Sprintf("%q: %d node(s), kube-proxy %s, image %s, 127.0.0.1:%d→30080, 127.0.0.1:%d→30081",
		c.Name, c.Nodes, c.KubeProxyMode, c.NodeImage, c.HostPort, c.GatewayHostPort)
}
