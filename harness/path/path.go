package path

import (
	"slices"
	"time"

	"github.com/droprun/droprun/harness/frontlog"
	"github.com/droprun/droprun/harness/traffic"
	"github.com/droprun/droprun/harness/variant"
)

// Path is one way from the client to a web pod.
type Path struct {
	// Name is the scenario's traffic.target.
	Name string
	// NodePort is the node port the client's connections reach: on kind,
	// each node's host ports lead to it (cluster.Entry.HostPort).
	NodePort int32
	// Proxy is the hop between that node port and the web Service; nil
	// when the node port is the web Service's own.
	Proxy *Proxy
	// Inside is set for a path that begins inside the cluster (a
	// Service's ClusterIP): only generator pods can send on it, and the
	// node whose rules route a request is the sending pod's.
	Inside bool
	// Drop is what the client sees of a request a dead pod dropped:
	// "000" (no response) direct, "502" through a proxy; validation's
	// advice names it.
	Drop string
}

// Proxy is an in-cluster hop that takes the client's connection and opens
// its own toward a web pod.
type Proxy struct {
	// Name is its Deployment's and Service's name.
	Name string
	// Header is the response header in which the proxy names the pod that
	// handled a request (traffic.Record.Via): it joins a request to that
	// pod's node. Empty for a proxy that names none.
	Header string
	// PicksPod is true for a front that picks the web pod itself, from
	// its own list of endpoints, and connects to the pod's IP: no
	// kube-proxy rules choose after it. False for one that connects to
	// the web Service (the gateway), whose node's rules choose.
	PicksPod bool
	// AccessLog makes a reader of one front pod's log for the requests
	// it handled, for a front that logs every request with its
	// X-Request-Id header and the upstream it chose (nil for one that
	// does not): the client then gives every request an ID
	// (traffic.Config.RequestIDs), and a run records the lines
	// (frontlog.jsonl).
	AccessLog func() frontlog.AccessLog
	// API is the front's own account of the pod IPs it sends new
	// requests to, read every 20 ms while a run lasts (observe's
	// FrontServers); nil for a front without one.
	API *FrontAPI
	// LogServers makes a reader of one front pod's log for the pod IPs
	// it sends new requests to, for a front whose log says so (Caddy's
	// DNS refreshes); nil for one whose log does not.
	LogServers func() frontlog.ServersLog
	// RoundRobin is set for a front that picks its pods in turn, every
	// pod once a round, and applies a new list of pods no more often than
	// every RoundRobin (Traefik: weighted round robin, every weight 1, a
	// new configuration at most every providersThrottleDuration, 2 s).
	// Within that time a pod it still has is picked at least once in any
	// 3n-2 of its picks, n the most pods it had: the analysis places its
	// stop of sending to a pod by the picks of the others (zero: it
	// cannot).
	RoundRobin time.Duration
	// Retries is set for a front droprun can configure to resend a
	// request when the pod it picked did not take it
	// (traffic.frontRetries: Caddy's load_balancing retries) and whose
	// access log then says how many times it resent each request
	// (frontlog.Line.Retries). NoRetries, for a front that can resend
	// but whose log would not say so, is why droprun does not ask it to.
	Retries   bool
	NoRetries string
	// Image is the image the front runs, and Source the Go main package
	// at a module version it is built from (image.BuildGo); both empty
	// for the gateway, which is bookshop.
	Image, Source string
}

// FrontAPI is where a front pod says which pods it sends to: its API at
// Port and Path, whose answer Servers reads as those pods' IPs. Token says
// the API answers only requests with the front's token
// (variant.FrontTokenParam, from Secret variant.FrontTokenSecret).
type FrontAPI struct {
	Port    int
	Path    string
	Servers func(body []byte) ([]string, error)
	Token   bool
}

// The paths droprun knows.
var (
	NodePort = Path{Name: "nodeport", NodePort: variant.WebNodePort, Drop: "000"}
	// ClusterIP is the east-west path: a pod sends to the web Service's
	// DNS name, and its own node's kube-proxy rules pick the web pod.
	ClusterIP = Path{Name: "clusterip", Inside: true, Drop: "000"}
	Gateway   = Path{Name: "gateway", NodePort: variant.GatewayNodePort, Drop: "502",
		Proxy: &Proxy{Name: variant.GatewayName, Header: traffic.ViaHeader}}
	// Traefik is Traefik Proxy v3 as a Kubernetes ingress controller: it
	// watches the web Service's Ingress and EndpointSlices in droprun's
	// namespace and sends to pod IPs itself. v3.6.12 is the newest
	// release that builds from the Go module proxy: v3.7 replaces a
	// module of its own with a directory its module zip leaves out.
	Traefik = Path{Name: "traefik", NodePort: variant.GatewayNodePort, Drop: "502",
		Proxy: &Proxy{Name: variant.TraefikName, PicksPod: true, AccessLog: func() frontlog.AccessLog { return frontlog.TraefikAccess{} },
			API:        &FrontAPI{Port: variant.TraefikAPIPort, Path: "/api/http/services", Servers: frontlog.TraefikServers, Token: true},
			RoundRobin: 2 * time.Second,
			NoRetries:  "retry middleware leaves no trace in its access log (Traefik v3.6 gives it no access-log listener): droprun could not tell a resend from a first try",
			Image:      "droprun/traefik:v3.6.12", Source: "github.com/traefik/traefik/v3/cmd/traefik@v3.6.12"}}
	// Caddy is Caddy's reverse proxy, discovering the web pods by DNS: a
	// headless Service's name, looked up again every second (dynamic A
	// upstreams). Its log says when each lookup changed what it sends to.
	Caddy = Path{Name: "caddy", NodePort: variant.GatewayNodePort, Drop: "502",
		Proxy: &Proxy{Name: variant.CaddyName, PicksPod: true, AccessLog: func() frontlog.AccessLog { return &frontlog.CaddyAccess{} },
			LogServers: func() frontlog.ServersLog { return &frontlog.CaddyServers{} }, Retries: true,
			Image: "droprun/caddy:v2.11.9", Source: "github.com/caddyserver/caddy/v2/cmd/caddy@v2.11.9"}}
)

var all = []Path{NodePort, ClusterIP, Gateway, Traefik, Caddy}

// Lookup returns the path named name ("" is NodePort, the default).
func Lookup(name string) (Path, bool) {
	if name == "" {
		return NodePort, true
	}
	i := slices.IndexFunc(all, func(p Path) bool { return p.Name == name })
	if i < 0 {
		return Path{}, false
	}
	return all[i], true
}

// All returns every path, the default first.
func All() []Path { return slices.Clone(all) }

// Names lists the paths' names, the default first.
func Names() []string {
	out := make([]string, len(all))
	for i, p := range all {
		out[i] = p.Name
	}
	return out
}

// RoutingNode returns the node whose kube-proxy rules chose the web pod for
// one request: on a direct path the node it entered through; through a
// proxy, the node of the proxy pod that handled it (rec.Via, looked up in
// podNode, pod name → node). "" when the data does not say: a request
// through a proxy that got no response names no proxy pod, and through a
// front that picks the pod itself no kube-proxy rules chose it.
func (p Path) RoutingNode(entry string, rec traffic.Record, podNode map[string]string) string {
	if p.Proxy == nil {
		return entry
	}
	if rec.Via == "" || p.Proxy.PicksPod {
		return ""
	}
	return podNode[rec.Via]
}
