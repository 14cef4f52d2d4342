package variant

// Reserved are the names of the objects droprun renders beside the web
// Deployment: a custom app's Deployment may take none of them (it would be
// replaced by, or replace, droprun's own).
var Reserved = []string{GatewayName, TraefikName, CaddyName, GeneratorsName}

// Names and ports of the objects droprun renders.
const (
	WebName = "web"
	// ServicePortName names the web Service's one port.
	ServicePortName = "http"
	GatewayName     = "gateway"
	// TraefikName names the Traefik front's Deployment, Service,
	// ServiceAccount, Role and RoleBinding; the web Service's Ingress is
	// named WebName.
	TraefikName = "traefik"
	// TraefikAPIPort serves Traefik's /ping and its API (the servers it
	// sends to), inside the cluster only; the API answers only a request
	// with FrontTokenParam set to the token in Secret FrontTokenSecret.
	TraefikAPIPort = 9000
	// FrontTokenSecret is the Secret holding, under FrontTokenKey, the
	// token a front's API wants in query parameter FrontTokenParam: made
	// once per namespace, kept across runs.
	FrontTokenSecret = "droprun-front-token"
	FrontTokenKey    = "token"
	FrontTokenParam  = "droprun-token"
	// CaddyName names the Caddy front's Deployment, Service and
	// ConfigMap; the headless Service whose DNS names the web pods is the
	// web Service's name with DNSSuffix.
	CaddyName = "caddy"
	DNSSuffix = "-dns"
	// GeneratorsName names the generator pods' Job.
	GeneratorsName = "droprun-generators"
	ContainerName  = "web"
	ContainerPort  = 8080
	// GRPCPortName and GRPCContainerPort are bookshop's gRPC port, which
	// the web Service targets under traffic.protocol grpc.
	GRPCPortName      = "grpc"
	GRPCContainerPort = 9090
	ServicePort       = 80
	WebNodePort       = 30080
	// GatewayNodePort is the node port of the front a run deploys (the
	// gateway, Traefik or Caddy: one per run), which kind maps to the host's
	// gateway ports.
	GatewayNodePort = 30081
	// AppGOMAXPROCS is the bookshop container's GOMAXPROCS.
	AppGOMAXPROCS = "1"

	// LabelVariant is set on the pod template to the built-in variant the
	// template was rendered from (the trap's first pods say no-prestop).
	LabelVariant = "droprun.dev/variant"
	// LabelRow is set on the pod template to the name of the scenario's
	// variant entry, the row its results are reported under.
	LabelRow = "droprun.dev/row"
	// AnnotationChangeCause is what `kubectl rollout history` shows.
	AnnotationChangeCause = "kubernetes.io/change-cause"
	// LabelManagedBy marks every object droprun owns.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// ManagedBy is the value of LabelManagedBy.
	ManagedBy = "droprun"
)
