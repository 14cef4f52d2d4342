package cluster

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/droprun/droprun/harness/runfile"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// ReachTimeout bounds the first request to an existing cluster's API
// server (listing its nodes), so an unreachable server fails in seconds
// with its address instead of hanging the run.
const ReachTimeout = 15 * time.Second

// KindProviderIDPrefix starts the spec.providerID kind gives every node it
// creates: kind://<docker|podman|nerdctl>/<cluster>/<node> (the kubelet's
// provider-id flag in kind v0.33.0's kubeadm config,
// pkg/cluster/internal/kubeadm/config.go). kind sets no node label of its
// own, so the provider ID is what tells a kind node apart.
const KindProviderIDPrefix = "kind://"

// Existing connects to a cluster droprun does not own. Guard rail: droprun
// deletes and recreates workloads in its namespace there, so the cluster
// must be a kind cluster, as its nodes say (every node's provider ID is
// kind's: KindNodes), unless allowContext names the context explicitly. The
// context's name and server address prove nothing: a kind-* context can
// tunnel to a real cluster. The nodes are listed before anything is
// written, within ReachTimeout; an unreachable API server is reported with
// its address and what to check.
func Existing(ctx context.Context, kubeconfig, kubeContext, allowContext string, trusted bool) (*Cluster, error) {
	cl, server, err := connectExisting(kubeconfig, kubeContext, trusted)
	if err != nil {
		return nil, err
	}
	if err := checkExisting(ctx, cl, server, allowContext); err != nil {
		return nil, err
	}
	return cl, nil
}

// connectExisting builds the client of kubeconfig's context (the current
// one when context is empty) and returns it with the context's API server
// address. It does not talk to the server. An untrusted kubeconfig (named
// by a scenario) must pass CheckKubeconfig, and client-go is told to run
// no credential plugin of it either.
func connectExisting(kubeconfig, kubeContext string, trusted bool) (*Cluster, string, error) {
	raw, err := loadKubeconfig(kubeconfig)
	if err != nil {
		return nil, "", err
	}
	if !trusted {
		if err := checkKubeconfig(kubeconfig, raw); err != nil {
			return nil, "", err
		}
		for _, a := range raw.AuthInfos {
			if a.Exec != nil {
				a.Exec.PluginPolicy = clientcmdapi.PluginPolicy{PolicyType: clientcmdapi.PluginPolicyDenyAll}
			}
		}
	}
	if kubeContext == "" {
		kubeContext = raw.CurrentContext
	}
	kctx, ok := raw.Contexts[kubeContext]
	if !ok {
		return nil, "", fmt.Errorf("kubeconfig %s has no context %q (it has: %s)", kubeconfig, kubeContext, strings.Join(contextNames(raw.Contexts), ", "))
	}
	server := ""
	if c, ok := raw.Clusters[kctx.Cluster]; ok {
		server = c.Server
	}
	// The client is built from the config just read, not from a second
	// read of the file, which could hold something else by now.
	rc, err := clientcmd.NewNonInteractiveClientConfig(*raw, kubeContext, &clientcmd.ConfigOverrides{},
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: kubeconfig}).ClientConfig()
	if err != nil {
		return nil, "", fmt.Errorf("kubeconfig %s, context %q: %w", kubeconfig, kubeContext, err)
	}
	setRateLimit(rc)
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, "", err
	}
	return &Cluster{Name: kubeContext, Kubeconfig: kubeconfig, Client: client, Provider: ProviderExisting}, server, nil
}

// checkExisting lists cl's nodes (within ReachTimeout) and refuses the
// cluster unless they are kind's or allowContext names cl's context. A
// server that does not answer is an error even for an allowed context.
func checkExisting(ctx context.Context, cl *Cluster, server, allowContext string) error {
	ctx, cancel := context.WithTimeout(ctx, ReachTimeout)
	defer cancel()
	allowed := allowContext != "" && allowContext == cl.Name
	refuse := func(why string) error {
		return fmt.Errorf("context %q (server %s) is not a kind cluster: %s; droprun deletes and recreates workloads in its namespace there: if that is what you want, pass --allow-context %s", cl.Name, server, why, cl.Name)
	}
	nodes, err := cl.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	switch {
	case apierrors.IsForbidden(err):
		// A user confined to namespaces may not list nodes: the cluster
		// answers, but cannot show it is kind.
		if allowed {
			return nil
		}
		return refuse("its nodes cannot be listed with these credentials (" + string(apierrors.ReasonForError(err)) + "), so nothing shows it is kind")
	case err != nil:
		return fmt.Errorf("cannot reach the API server %s of context %q (kubeconfig %s; waited at most %s): %w; check that the cluster is running, that this machine can reach that address (VPN, firewall, a tunnel that is down), and that the credentials are current: `kubectl --kubeconfig %s --context %s get nodes` should list the nodes",
			server, cl.Name, cl.Kubeconfig, ReachTimeout, err, cl.Kubeconfig, cl.Name)
	}
	if allowed {
		return nil
	}
	if why := KindNodes(nodes.Items); why != "" {
		return refuse(why)
	}
	return nil
}

// KindNodes says why nodes are not a kind cluster's, or "" when they are:
// there is at least one node and every node's spec.providerID is
// kind://PROVIDER/CLUSTER/NODE, with one CLUSTER for all of them.
func KindNodes(nodes []corev1.Node) string {
	if len(nodes) == 0 {
		return "it has no nodes"
	}
	cluster := ""
	for _, n := range nodes {
		id := n.Spec.ProviderID
		rest, ok := strings.CutPrefix(id, KindProviderIDPrefix)
		parts := strings.Split(rest, "/")
		if !ok || len(parts) != 3 || slices.Contains(parts, "") {
			if id == "" {
				return fmt.Sprintf("node %q has no provider ID (kind's nodes have %sPROVIDER/CLUSTER/NODE)", n.Name, KindProviderIDPrefix)
			}
			return fmt.Sprintf("node %q has provider ID %q (kind's nodes have %sPROVIDER/CLUSTER/NODE)", n.Name, id, KindProviderIDPrefix)
		}
		if cluster == "" {
			cluster = parts[1]
		} else if parts[1] != cluster {
			return fmt.Sprintf("its nodes belong to two kind clusters, %q and %q (node %q)", cluster, parts[1], n.Name)
		}
	}
	return ""
}

// ErrUntrustedKubeconfig says a kubeconfig a scenario names would make
// droprun run a command or send a file: a scenario is data, so that
// needs the user's word (the kubeconfig on the command line, or
// --trust-kubeconfig).
var ErrUntrustedKubeconfig = errors.New("a kubeconfig named by a scenario may not run commands or send files")

// CheckKubeconfig refuses a kubeconfig, named by a scenario, that would
// make droprun run a command (a users[].user.exec credential plugin) or
// send a file outside the kubeconfig's own directory as a bearer token
// (tokenFile). It reads the file and talks to no server; its error wraps
// ErrUntrustedKubeconfig and lists every such user.
func CheckKubeconfig(path string) error {
	raw, err := loadKubeconfig(path)
	if err != nil {
		return err
	}
	return checkKubeconfig(path, raw)
}

func checkKubeconfig(path string, raw *clientcmdapi.Config) error {
	dir, err := filepath.Abs(filepath.Dir(path))
	if err != nil {
		return err
	}
	if d, err := filepath.EvalSymlinks(dir); err == nil {
		dir = d
	}
	var problems []string
	for _, name := range slices.Sorted(maps.Keys(raw.AuthInfos)) {
		a := raw.AuthInfos[name]
		if a.Exec != nil {
			problems = append(problems, fmt.Sprintf("user %q runs the credential plugin %q", name, strings.Join(append([]string{a.Exec.Command}, a.Exec.Args...), " ")))
		}
		if a.TokenFile != "" && !inside(dir, a.TokenFile) {
			problems = append(problems, fmt.Sprintf("user %q sends %s as its token, outside the kubeconfig's directory %s", name, a.TokenFile, dir))
		}
	}
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("kubeconfig %s: %w: %s; if you trust it, name it on the command line (--kubeconfig %s) or pass --trust-kubeconfig",
		path, ErrUntrustedKubeconfig, strings.Join(problems, "; "), path)
}

// inside reports whether file (links resolved) lies under dir.
func inside(dir, file string) bool {
	if f, err := filepath.EvalSymlinks(file); err == nil {
		file = f
	}
	rel, err := filepath.Rel(dir, file)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// loadKubeconfig reads a user's kubeconfig, at most runfile.MaxUserFile
// bytes, as clientcmd.LoadFromFile does: paths inside it (certificate
// files) are relative to the file.
func loadKubeconfig(path string) (*clientcmdapi.Config, error) {
	data, err := runfile.ReadUser(path, "kubeconfig")
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

func contextNames[V any](m map[string]V) []string {
	var n []string
	for k := range m {
		n = append(n, k)
	}
	return n
}
