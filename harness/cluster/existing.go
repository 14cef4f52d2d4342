package cluster

import (
	"fmt"
	"net"
	"net/url"
	"strings"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/droprun/droprun/harness/scenario"
)

// Existing connects to a cluster droprun does not own. Guard rails: the
// context must look like a kind cluster (named kind-*, API server on
// loopback) unless allowContext names it explicitly, so a run can never
// wander into a production context by accident. droprun then works only in
// its own namespace there.
func Existing(kubeconfig, context, allowContext string) (*Cluster, error) {
	raw, err := loadKubeconfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	if context == "" {
		context = raw.CurrentContext
	}
	ctx, ok := raw.Contexts[context]
	if !ok {
		return nil, fmt.Errorf("kubeconfig %s has no context %q (it has: %s)", kubeconfig, context, strings.Join(contextNames(raw.Contexts), ", "))
	}
	server := ""
	if c, ok := raw.Clusters[ctx.Cluster]; ok {
		server = c.Server
	}
	if !LooksLikeKind(context, server) && allowContext != context {
		return nil, fmt.Errorf("context %q (server %s) is not a kind cluster: droprun deletes and recreates workloads in its namespace there; if that is what you want, pass --allow-context %s", context, server, context)
	}
	// The client is built from the config just read and checked, not from
	// a second read of the file, which could hold something else by now.
	rc, err := clientcmd.NewNonInteractiveClientConfig(*raw, context, &clientcmd.ConfigOverrides{},
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: kubeconfig}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s, context %q: %w", kubeconfig, context, err)
	}
	setRateLimit(rc)
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	return &Cluster{Name: context, Kubeconfig: kubeconfig, Client: client}, nil
}

// loadKubeconfig reads a user's kubeconfig, at most scenario.MaxFileSize
// bytes, as clientcmd.LoadFromFile does: paths inside it (certificate
// files) are relative to the file.
func loadKubeconfig(path string) (*clientcmdapi.Config, error) {
	data, err := scenario.ReadFile(path, "kubeconfig")
	if err != nil {
		return nil, fmt.Errorf("reading kubeconfig: %w", err)
	}
	cfg, err := clientcmd.Load(data)
	if err != nil {
		return nil, fmt.Errorf("reading kubeconfig %s: %w", path, err)
	}
	for _, c := range cfg.Clusters {
		c.LocationOfOrigin = path
	}
	for _, a := range cfg.AuthInfos {
		a.LocationOfOrigin = path
	}
	for _, c := range cfg.Contexts {
		c.LocationOfOrigin = path
	}
	if err := clientcmd.ResolveLocalPaths(cfg); err != nil {
		return nil, fmt.Errorf("reading kubeconfig %s: %w", path, err)
	}
	return cfg, nil
}

// LooksLikeKind reports whether a context is a local kind cluster: kind
// names its contexts kind-<name> and serves the API on 127.0.0.1.
func LooksLikeKind(context, server string) bool {
	if !strings.HasPrefix(context, "kind-") {
		return false
	}
	u, err := url.Parse(server)
	if err != nil {
		return false
	}
	ip := net.ParseIP(u.Hostname())
	return u.Hostname() == "localhost" || (ip != nil && ip.IsLoopback())
}

func contextNames[V any](m map[string]V) []string {
	var n []string
	for k := range m {
		n = append(n, k)
	}
	return n
}
