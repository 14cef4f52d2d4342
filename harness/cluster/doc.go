// Package cluster gives droprun a cluster to measure on: a kind cluster it
// creates, reuses and deletes through the kind library (never the kind
// binary), or an existing cluster the user names explicitly.
//
// A kind cluster is 1 control plane plus workers (3 nodes by default: the
// control plane and 2 workers), on the node image nodeimage.Selector chooses
// (droprun's own, or kind's published one where a registry serves it; a
// node image that is not droprun's gets the containerd setting this
// host needs, Config.RestrictOOMScoreAdj). Every node has two
// 127.0.0.1 host ports, one to the web NodePort (30080) and one to the
// gateway's (30081): node k (0 = control plane, 1 = <name>-worker,
// 2 = <name>-worker2...) gets HostPort+2k and GatewayHostPort+2k, by
// default 30080/30081, 30082/30083, 30084/30085 (Config.Entries). Load can
// then enter through every node, as a cloud load balancer with
// externalTrafficPolicy: Cluster spreads it, instead of leaving one node's
// kube-proxy to decide every request. Its kubeconfig is written to
// droprun's own directory, never into ~/.kube/config. kind's wait covers
// only the control plane and returns nil on timeout, so Up waits for every
// node itself.
//
// An existing cluster (Existing) is taken for kind only when its nodes say
// so: every node's provider ID is kind://PROVIDER/CLUSTER/NODE (KindNodes).
// A context's name proves nothing (a kind-* context can tunnel to a real
// cluster); any other cluster needs --allow-context NAME.
//
// Either way a Provider, chosen once (KindProvider, ExistingProvider),
// opens a Cluster: its API client, and what droprun can do inside its
// nodes as capabilities the provider offers or not (nodes.go: conntrack,
// exec for the rule watch and the listener probe, the nodes' containers
// for the rig, image loading): a kind cluster offers all, an existing one
// none. Only a kind cluster can be deleted (Cluster.Down); harness/testbed,
// which asked for it, is the one that does. The package knows neither
// scenarios nor the container engine: testbed turns a scenario into a
// Config and hands Kind the engine's checks (Host).
package cluster
