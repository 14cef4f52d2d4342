package cluster

import "context"

// A Provider gives a run its cluster. It is chosen once, from the
// scenario, as kind chooses its docker or podman provider once:
// KindProvider creates or finds droprun's kind cluster, ExistingProvider
// connects to one the user names. What a cluster's nodes let droprun do
// besides the API is each provider's to offer or not (the capabilities in
// nodes.go).
type Provider interface {
	// Open returns the cluster with every node Ready.
	Open(ctx context.Context) (*Cluster, error)
}

// The providers' names, as the clusters they open record them
// (Cluster.Provider).
const (
	ProviderKind     = "kind"
	ProviderExisting = "existing"
)

// KindProvider is droprun's kind cluster of Config: created (or reused
// when its config matches, Kind.Up) when Create is set, else found running
// (Kind.Connect).
type KindProvider struct {
	Kind   *Kind
	Config Config
	Create bool
}

func (p KindProvider) Open(ctx context.Context) (*Cluster, error) {
	open := p.Kind.Connect
	if p.Create {
		open = p.Kind.Up
	}
	cl, err := open(ctx, p.Config)
	if err != nil {
		return nil, err
	}
	cl.Entries = p.Config.Entries()
	return cl, nil
}

// ExistingProvider is a cluster the user names by kubeconfig and context
// (Existing: a context other than a kind cluster's needs AllowContext).
type ExistingProvider struct {
	Kubeconfig, Context, AllowContext string
	// Trusted lets the kubeconfig run an exec credential plugin.
	Trusted bool
}

func (p ExistingProvider) Open(ctx context.Context) (*Cluster, error) {
	return Existing(ctx, p.Kubeconfig, p.Context, p.AllowContext, p.Trusted)
}
