package scenario

import (
	"io/fs"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/droprun/droprun/harness/path"
	"github.com/droprun/droprun/harness/traffic"
)

// APIVersion and Kind identify a scenario file. A file with any other values
// is rejected, so the format can change under a new version without old
// files being misread.
const (
	APIVersion = "droprun/v1alpha1"
	Kind       = "Scenario"
)

// Scenario is one experiment: a cluster, an app under test in one or more
// shutdown variants, the number of rollouts per variant, and the traffic
// that flows through all of them. Every field except metadata.name and
// variants has a default; see Default.
type Scenario struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Metadata   Metadata `json:"metadata"`

	// Cluster says where the rollouts happen: a kind cluster droprun
	// creates, or an existing cluster the user names explicitly.
	Cluster Cluster `json:"cluster"`

	// Namespace is the only namespace droprun writes to. Droprun creates
	// it before the run and deletes it afterwards, except with
	// app.custom.service (kept, see CustomApp.Service); a namespace the
	// user created and labelled for droprun is kept, and only droprun's
	// objects in it are deleted. Default "droprun".
	Namespace string `json:"namespace,omitempty"`

	// App is the application under test: bookshop (the default) or the
	// user's own Deployment.
	App App `json:"app"`

	// Defaults are the workload settings every variant starts from.
	Defaults Workload `json:"defaults"`

	// Variants are measured one after another, in this order.
	Variants []Variant `json:"variants"`

	// Rollouts is the number of rollouts per variant (v1→v2→v1…).
	// Zero means a control run: traffic only, no rollout at all.
	Rollouts *int `json:"rollouts,omitempty"`

	// Traffic is the load that runs during every variant.
	Traffic Traffic `json:"traffic"`

	// Output is the directory a run's results go under. Default "results".
	// Unlike the file paths above it is relative to the directory droprun
	// runs in, not to the scenario file.
	Output string `json:"output,omitempty"`

	// files is where Manifest paths are read: nil for the OS file system,
	// or the fs.FS that LoadFS read the scenario from.
	files fs.FS
}

// Metadata names and describes a scenario.
type Metadata struct {
	// Name is a DNS label; it names the results directory.
	Name string `json:"name"`
	// Description is free text shown in reports.
	Description string `json:"description,omitempty"`
}

// Cluster selects and configures the cluster. Kind and Existing are
// mutually exclusive; with neither, a kind cluster with defaults is used.
type Cluster struct {
	Kind     *KindCluster     `json:"kind,omitempty"`
	Existing *ExistingCluster `json:"existing,omitempty"`
}

// KindCluster is a cluster droprun creates (or reuses) through the kind
// library.
type KindCluster struct {
	// Name of the kind cluster. Default "droprun".
	Name string `json:"name,omitempty"`
	// Nodes is the total node count: 1 control plane plus Nodes-1 workers.
	// Default 3: a control plane and 2 workers.
	Nodes int `json:"nodes,omitempty"`
	// KubeProxyMode is iptables (default), nftables or ipvs. ipvs needs
	// the ip_vs module in the host kernel the kind nodes share: validate
	// and run refuse it where that is missing (droprun doctor says).
	KubeProxyMode string `json:"kubeProxyMode,omitempty"`
	// NodeImage is the kind node image. Default auto: droprun's own image
	// when the local engine has it up to date, else kind's published image
	// when a registry serves it (with kind's own CNI), else droprun's image
	// built offline. An image reference (explicit tag or digest) is used as
	// given, pulled when missing.
	NodeImage string `json:"nodeImage,omitempty"`
	// NodeImageAllowed says the user consented to NodeImage on the
	// command line (--allow-node-image, or cluster up's --node-image).
	// Never read from a file: an image other than droprun's or kind's
	// (imageref.KnownNode) runs privileged as every node, so a scenario
	// alone cannot choose one.
	NodeImageAllowed bool `json:"-"`
	// HostPort is the port on 127.0.0.1 mapped to the web Service's
	// NodePort 30080 on the control plane; node k (1 = first worker) gets
	// HostPort+2k, so traffic can enter through every node. Default 30080.
	HostPort int `json:"hostPort,omitempty"`
	// GatewayHostPort is the same for the gateway's NodePort 30081: node k
	// gets GatewayHostPort+2k. Default 30081.
	GatewayHostPort int `json:"gatewayHostPort,omitempty"`
}

// ExistingCluster is a cluster droprun does not own. droprun works only in
// its own namespace there, and refuses a context that is not a kind cluster
// (as its nodes' provider IDs show, whatever the context is called) unless
// the user names it with --allow-context.
type ExistingCluster struct {
	// Kubeconfig is the kubeconfig file, relative to the scenario file
	// (to the working directory for a shipped scenario).
	Kubeconfig string `json:"kubeconfig"`
	Context    string `json:"context,omitempty"`
	// URL is where traffic is sent, with traffic.path appended to it:
	// http://127.0.0.1:PORT, or the http(s) URL of a load balancer or
	// ingress in front of the cluster (scheme://HOST[:PORT], no path),
	// which droprun sends load to only when the run names its host with
	// --allow-target HOST[:PORT]. Default http://127.0.0.1:30080.
	URL string `json:"url,omitempty"`
	// Trusted says the user vouches for the kubeconfig: they named it on
	// the command line (--kubeconfig) or passed --trust-kubeconfig. Never
	// read from a file: a kubeconfig a scenario names may not run a
	// credential plugin or send a file outside its directory as a token
	// (cluster.CheckKubeconfig).
	Trusted bool `json:"-"`
}

// App is the application under test. With Custom unset it is bookshop.
type App struct {
	Custom *CustomApp `json:"custom,omitempty"`
	// Service is the web Service droprun creates in front of the app.
	// Default {type: NodePort}; absent when app.custom.service names the
	// user's own.
	Service *AppService `json:"service,omitempty"`
}

// Service types app.service.type may name.
const (
	ServiceNodePort     = "NodePort"
	ServiceLoadBalancer = "LoadBalancer"
)

// AppService shapes the web Service droprun creates.
type AppService struct {
	// Type is NodePort (the default: kind's host ports reach node port
	// 30080 on every node) or LoadBalancer (the same node port, plus a
	// cloud load balancer on a cluster that provisions one; point
	// cluster.existing.url at it and name its host with --allow-target).
	Type string `json:"type,omitempty"`
}

// CustomApp is the user's own service: each variant names a Deployment
// manifest, and rollouts alternate between two images of one container.
type CustomApp struct {
	// Images are the two images rollouts alternate between, e.g.
	// ["myapp:1.4.0", "myapp:1.4.1"]. They must already be loadable by
	// the cluster (droprun loads archives named in ImageArchives).
	Images []string `json:"images"`
	// ImageArchives are image tarballs loaded into every kind node,
	// relative to the scenario file (to the working directory for a
	// shipped scenario).
	ImageArchives []string `json:"imageArchives,omitempty"`
	// Container is the name of the container whose image changes.
	Container string `json:"container"`
	// Port is the container port the Service targets. Default 8080.
	Port int `json:"port,omitempty"`
	// Service names the user's own Service or Ingress in front of the
	// pods, on an existing cluster: droprun then creates no Service and
	// sends traffic to cluster.existing.url. It must be in droprun's
	// namespace (a Service selects pods of its own namespace only). With
	// it set, droprun keeps that namespace after the run, deleting only
	// the Deployments its variants applied, so the next run finds the
	// Service again.
	Service string `json:"service,omitempty"`
	// Metrics, when set, is the app's own request counter droprun reads
	// from each pod for the pods' view; without it a custom app has none.
	Metrics *CustomMetrics `json:"metrics,omitempty"`
	// PrivilegedAllowed says the user consented, with `droprun run
	// --allow-privileged`, to manifests asking for more than the Pod
	// Security baseline (Privileges). Never read from the file.
	PrivilegedAllowed bool `json:"-"`
}

// CustomMetrics names a request counter in the app's Prometheus endpoint,
// scraped from each pod through the API server's pod proxy. A pod's last
// scrape before it exits can miss its final requests, so for a custom app
// the pods' view is a lower bound, not exact like bookshop's exit totals.
type CustomMetrics struct {
	// Port is the container port serving the metrics. Default app.custom.port.
	Port int `json:"port,omitempty"`
	// Path is the metrics path. Default /metrics.
	Path string `json:"path,omitempty"`
	// Counter is the metric family counting the app's responses, e.g.
	// http_requests_total. A histogram or summary (or its _count series)
	// counts its observations.
	Counter string `json:"counter"`
	// CodeLabel is the label holding the HTTP status code, so the pods'
	// 2xx can be set beside the client's. Default code.
	CodeLabel string `json:"codeLabel,omitempty"`
	// Match keeps only the series with these label values, e.g.
	// {path: version} to leave out probes and scrapes.
	Match map[string]string `json:"match,omitempty"`
}

// Variant is one shutdown behaviour to measure.
type Variant struct {
	// Name labels the variant's rows in results. Default: the variant.
	Name string `json:"name,omitempty"`
	// Variant is one of the built-in bookshop variants (see
	// variant.Names). Empty for a custom app.
	Variant string `json:"variant,omitempty"`
	// From, when set, is the variant the Deployment runs before the first
	// rollout. The first rollout switches to Variant and is reported as its
	// own row: this is how "the trap" is measured (the rollout that adds a
	// fix is run under the old pods' rules).
	From string `json:"from,omitempty"`
	// Manifest is a Deployment manifest for a custom app, relative to the
	// scenario file. Every variant's manifest names the same Deployment
	// (metadata.name): droprun rolls that one from variant to variant.
	Manifest string `json:"manifest,omitempty"`
	// Sweep measures the entry once per value of one workload field: Load
	// expands the entry into one variant per value (see SweepSpec).
	Sweep *SweepSpec `json:"sweep,omitempty"`
	// Workload overrides the scenario's defaults for this variant; its
	// fields sit directly in the variant's entry.
	Workload

	// entry is 1 + the index, in the file's variants list, of the entry
	// this variant was expanded from (0 for a scenario built in code: the
	// variant's own index); it puts problems at the file's paths.
	entry int
}

// Workload holds the Deployment settings a scenario can tune. Unset
// (nil) fields fall back to the scenario's defaults and then to
// Kubernetes' own defaults.
type Workload struct {
	Replicas                      *int32              `json:"replicas,omitempty"`
	MaxSurge                      *intstr.IntOrString `json:"maxSurge,omitempty"`
	MaxUnavailable                *intstr.IntOrString `json:"maxUnavailable,omitempty"`
	MinReadySeconds               *int32              `json:"minReadySeconds,omitempty"`
	TerminationGracePeriodSeconds *int64              `json:"terminationGracePeriodSeconds,omitempty"`
	// PreStopSeconds is the length of the preStop sleep for the variants
	// that have one. Default 5.
	PreStopSeconds *int64 `json:"preStopSeconds,omitempty"`
	// DrainDelay is how long the graceful-drain app keeps serving after
	// SIGTERM. Default 5s.
	DrainDelay *Duration `json:"drainDelay,omitempty"`
	// IdleTimeout is how long the bookshop app keeps an idle kept-alive
	// connection open before it closes it (its --idle-timeout,
	// http.Server.IdleTimeout). Default 0s: until the client closes it.
	// Shorter than the client's (traffic.idleTimeout), the app closes
	// connections the client is about to reuse.
	IdleTimeout *Duration `json:"idleTimeout,omitempty"`
	// Flavour is the bookshop image flavour: standard (has /bin/sleep) or
	// distroless (has not). Default: the variant's own.
	Flavour   string     `json:"flavour,omitempty"`
	Readiness *Probe     `json:"readiness,omitempty"`
	Resources *Resources `json:"resources,omitempty"`
}

// Probe tunes the readiness probe (an HTTP GET of /readyz for bookshop).
type Probe struct {
	InitialDelaySeconds *int32 `json:"initialDelaySeconds,omitempty"`
	PeriodSeconds       *int32 `json:"periodSeconds,omitempty"`
	TimeoutSeconds      *int32 `json:"timeoutSeconds,omitempty"`
	SuccessThreshold    *int32 `json:"successThreshold,omitempty"`
	FailureThreshold    *int32 `json:"failureThreshold,omitempty"`
}

// Resources are the container's requests and limits, as Kubernetes
// quantities, e.g. {cpu: 50m, memory: 32Mi}.
type Resources struct {
	Requests map[string]string `json:"requests,omitempty"`
	Limits   map[string]string `json:"limits,omitempty"`
}

// Traffic is the vegeta load that runs from the control window before the
// first rollout until the settle window after the last.
type Traffic struct {
	// Rate is requests per second. Default 1000.
	Rate int `json:"rate,omitempty"`
	// KeepAlive reuses connections. Default false: a new TCP connection per
	// request, as curl does, which exposes the routing race. With
	// keep-alive, Go's client retries some failed requests on a new
	// connection behind droprun's back; droprun counts them as masked.
	KeepAlive bool `json:"keepAlive,omitempty"`
	// Wire is the protocol the client speaks (traffic.protocol): "http1"
	// (the default; keepAlive says a new connection per request or kept
	// alive ones), "h2c", HTTP/2 over cleartext with prior knowledge,
	// every request a stream on one of Connections long-lived connections
	// per target, or "grpc", every request a unary call of the gRPC
	// health service's Check on one of Connections channels per target.
	// Bookshop serves HTTP/1.1 and h2c on its HTTP port and gRPC on its
	// gRPC port, which the web Service targets under protocol grpc. h2c
	// and grpc go to the pods directly (target nodeport): the fronts here
	// answer HTTP/1.1.
	Wire string `json:"protocol,omitempty"`
	// Connections is, with protocol h2c or grpc, how many connections the
	// client keeps to each target, a fleet of HTTP/2 clients or gRPC
	// channels (each connection is routed to one pod once, when it
	// opens). Default 4. With keepAlive it is a fleet of that many
	// HTTP/1.1 clients taking turns, each with its own connection to each
	// target, idle between its turns; default none: one client, whose
	// pool reuses the connection it last returned.
	Connections int `json:"connections,omitempty"`
	// IdleTimeout is, with keepAlive or protocol h2c, how long the client
	// keeps an idle connection before it closes it (net/http's
	// IdleConnTimeout). Default 90s, net/http's own.
	IdleTimeout *Duration `json:"idleTimeout,omitempty"`
	// Arrivals is how the client spaces its requests: "constant" (the
	// default), one every 1/rate, or "poisson", at random with rate as
	// the mean, as independent callers' requests come: the gaps between
	// one connection's requests then vary continuously.
	Arrivals string `json:"arrivals,omitempty"`
	// Method is the HTTP method of every request. Default GET.
	Method string `json:"method,omitempty"`
	// Timeout per request. Default 2s.
	Timeout *Duration `json:"timeout,omitempty"`
	// Target is "nodeport" (direct: a dead pod shows as 000), "gateway"
	// (through an in-cluster reverse proxy to the web Service: a dead
	// upstream shows as 502), "traefik" (through Traefik Proxy as an
	// ingress controller, which sends to pod IPs from its own endpoint
	// list) or "caddy" (through Caddy's reverse proxy, which finds the
	// pods' IPs by DNS). Default nodeport. See harness/path.
	Target string `json:"target,omitempty"`
	// FrontRetries is, through Caddy (target caddy), how many times the
	// front resends a request to a pod picked again when the pod it
	// picked did not take it (a failed dial; a GET also when its
	// connection failed): Caddy's load_balancing retries, which its
	// access log counts. Default 0: each request is sent once, and every
	// refusal is the client's 502. With retries, a request the front
	// resent and then answered is counted apart as masked by the front's
	// retries (not a drop: the client was served), and a drop says how
	// often the front resent it. Not through Traefik: its retry
	// middleware leaves no trace in its access log.
	FrontRetries int `json:"frontRetries,omitempty"`
	// Path is the HTTP path requested. Default /version; with protocol
	// grpc it is the one method called, /grpc.health.v1.Health/Check
	// (traffic.GRPCPath), and may only be that.
	Path string `json:"path,omitempty"`
	// Control is the steady-state window before the first rollout of each
	// variant. Default 10s.
	Control *Duration `json:"control,omitempty"`
	// Between is the traffic time after one rollout completes and before
	// the next starts. Default 10s.
	Between *Duration `json:"between,omitempty"`
	// Settle is added to a rollout's window after its old pods are gone.
	// Default 5s.
	Settle *Duration `json:"settle,omitempty"`
	// Balance is how long after each rollout completes the pods' own
	// counters are read for connection balance: each new pod's share of
	// what the pods answered over that span, against an even share. The
	// next rollout waits for it. Default 30s when connections outlive a
	// request (keepAlive, h2c, grpc), 0s (off) with a new connection per
	// request, which the nodes route afresh every time.
	Balance *Duration `json:"balance,omitempty"`
	// MaxWorkers bounds vegeta's concurrent requests. Default 2×rate×timeout,
	// at least 100, at most traffic.WorkerCap (10,000; more is an error).
	MaxWorkers int `json:"maxWorkers,omitempty"`
	// Generators says where the load is sent from: droprun's own process
	// on the host (the default) or generator pods inside the cluster.
	Generators *Generators `json:"generators,omitempty"`
}

// Where traffic.generators.from sends from.
const (
	FromHost = "host"
	FromPods = "pods"
)

// Placements of generator pods.
const (
	PlacementOnePerNode = "one-per-node"
	PlacementAny        = "any"
)

// MaxGenerators bounds traffic.generators.count.
const MaxGenerators = 1000

// Generators says where a run's load is sent from.
type Generators struct {
	// From is "host" (the default: droprun's own client) or "pods":
	// Count generator pods inside the cluster, one Indexed Job, each
	// sending its share of traffic.rate with droprun's own client
	// (docs/generators.md).
	From string `json:"from,omitempty"`
	// Count is how many generator pods share the rate. Default: one per
	// node of the kind cluster; required on an existing cluster.
	Count int `json:"count,omitempty"`
	// Placement is "one-per-node" (the default: at most one generator a
	// node) or "any" (wherever the scheduler puts them).
	Placement string `json:"placement,omitempty"`
	// Image is the generator image on an existing cluster, pushed where
	// its nodes pull from (`droprun image generator` builds it). On
	// droprun's kind cluster it is built and loaded by the run: leave it
	// out.
	Image string `json:"image,omitempty"`
	// Resources are each generator container's requests and limits.
	// Default none.
	Resources *Resources `json:"resources,omitempty"`
}

// FromPods reports whether the load comes from generator pods.
func (t Traffic) FromPods() bool { return t.Generators != nil && t.Generators.From == FromPods }

// Versions are the two bookshop versions rollouts alternate between.
var Versions = [2]string{"v1", "v2"}

// Index returns the position of the variant named name, or -1.
func (s *Scenario) Index(name string) int {
	for i, v := range s.Variants {
		if v.Name == name {
			return i
		}
	}
	return -1
}

// Protocol is how the client talks to the targets: HTTP/1.1 over a new
// connection per request, or over kept-alive connections (keepAlive),
// HTTP/2 streams (protocol h2c) or gRPC calls (protocol grpc); see
// traffic.ForWire. A name validation would refuse gives HTTP/1.1.
func (t Traffic) Protocol() traffic.Protocol {
	p, ok := traffic.ForWire(t.Wire, t.KeepAlive)
	if !ok {
		return traffic.HTTP1(t.KeepAlive)
	}
	return p
}

// Path is the way the scenario's requests take (traffic.target); NodePort
// for a target validation would refuse.
func (s *Scenario) Path() path.Path {
	p, ok := path.Lookup(s.Traffic.Target)
	if !ok {
		return path.NodePort
	}
	return p
}
