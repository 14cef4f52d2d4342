package scenario

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/droprun/droprun/harness/imageref"
	"github.com/droprun/droprun/harness/traffic"
	"github.com/droprun/droprun/harness/variant"

	"github.com/droprun/droprun/harness/path"
)

// MaxRate is the highest request rate a scenario may ask for. One client on
// a 2-core machine sharing it with the cluster holds about 3,000 new
// connections per second (../shared/ENVIRONMENT.md); above 20,000 no
// single machine measures honestly.
const MaxRate = 20000

// MaxFrontRetries is the most traffic.frontRetries may ask for: a front
// that resends a refused request more often than there are pods to send
// it to is retrying in a loop, not measuring a fix.
const MaxFrontRetries = 5

// AppShutdownTimeout is the bookshop app's --shutdown-timeout default: the
// longest Shutdown waits for in-flight requests after the drain delay.
const AppShutdownTimeout = 10 * time.Second

// Validate checks a defaulted scenario and returns every problem found.
func (s *Scenario) Validate() []FieldError {
	var v validator
	if s.APIVersion != APIVersion {
		v.add("apiVersion", fmt.Sprintf("is %q", s.APIVersion), "set apiVersion: "+APIVersion)
	}
	if s.Kind != Kind {
		v.add("kind", fmt.Sprintf("is %q", s.Kind), "set kind: "+Kind)
	}
	if s.Metadata.Name == "" {
		v.add("metadata.name", "is required", "name the scenario, e.g. name: my-rollout-test")
	} else if msgs := validation.IsDNS1123Label(s.Metadata.Name); len(msgs) > 0 {
		v.add("metadata.name", fmt.Sprintf("%q is not a DNS label: %s", s.Metadata.Name, msgs[0]), "use lower-case letters, digits and '-'")
	}
	if msgs := validation.IsDNS1123Label(s.Namespace); len(msgs) > 0 {
		v.add("namespace", fmt.Sprintf("%q is not a valid namespace: %s", s.Namespace, msgs[0]), "use lower-case letters, digits and '-'")
	}
	s.validateCluster(&v)
	if *s.Rollouts < 0 {
		v.add("rollouts", fmt.Sprintf("is %d", *s.Rollouts), "use 0 for a control run with no rollout, or a positive count")
	}
	s.validateTraffic(&v)
	s.validateService(&v)
	s.validateVariants(&v)
	return dedupe(v.errs)
}

// kindNameRE is kind's own rule for a cluster name
// (sigs.k8s.io/kind/pkg/internal/apis/config): the name becomes container
// and file names, so it holds no '/'.
var kindNameRE = regexp.MustCompile(`^[a-z0-9.-]+$`)

type validator struct{ errs []FieldError }

func (v *validator) add(path, msg, fix string) {
	v.errs = append(v.errs, FieldError{Path: path, Msg: msg, Fix: fix})
}

func (s *Scenario) validateCluster(v *validator) {
	c := s.Cluster
	if c.Kind != nil && c.Existing != nil {
		v.add("cluster", "sets both kind and existing", "choose one: a kind cluster droprun manages, or an existing cluster")
	}
	if k := c.Kind; k != nil {
		if !kindNameRE.MatchString(k.Name) {
			v.add("cluster.kind.name", fmt.Sprintf("%q is not a kind cluster name", k.Name), "use lower-case letters, digits, '.' and '-' (kind's rule), e.g. "+DefaultClusterName)
		}
		if k.Nodes < 1 || k.Nodes > 10 {
			v.add("cluster.kind.nodes", fmt.Sprintf("is %d", k.Nodes), "use 1 (control plane only) to 10; 3 (the default) is a control plane and 2 workers")
		}
		switch k.KubeProxyMode {
		case "iptables", "nftables", "ipvs":
		default:
			v.add("cluster.kind.kubeProxyMode", fmt.Sprintf("%q is not a kube-proxy mode", k.KubeProxyMode), "use iptables, nftables or ipvs")
		}
		if err := imageref.CheckNode(k.NodeImage); err != nil {
			v.add("cluster.kind.nodeImage", err.Error(), "use auto (droprun's cached image, else kind's published one when a registry serves it, else droprun's built offline), or an image with an explicit tag or digest such as "+imageref.DefaultNodeImage)
		}
		checkPort(v, "cluster.kind.hostPort", k.HostPort)
		checkPort(v, "cluster.kind.gatewayHostPort", k.GatewayHostPort)
		if k.Nodes >= 1 && k.Nodes <= 10 {
			checkPortLayout(v, k)
		}
	}
	if e := c.Existing; e != nil {
		if e.Kubeconfig == "" {
			v.add("cluster.existing.kubeconfig", "is required", "give the path of the kubeconfig file for the cluster")
		}
		if e.URL != "" {
			if msg, fix := checkTrafficURL(e.URL); msg != "" {
				v.add("cluster.existing.url", fmt.Sprintf("%q %s", e.URL, msg), fix)
			}
		}
	}
}

// checkTrafficURL checks the URL load is sent to on an existing cluster:
// http://127.0.0.1:PORT, or scheme://HOST[:PORT] (http or https) for a
// load balancer or ingress. A request carries no credentials, and the
// request path is traffic.path, appended to the URL, so the URL has no
// path, query or fragment of its own. Whether load may go to a HOST beyond
// 127.0.0.1 is the run's decision, not the file's: only --allow-target
// HOST[:PORT] allows it (traffic.CheckURL, at run time). It returns what is
// wrong and the fix, or "" when the URL is fine.
func checkTrafficURL(raw string) (msg, fix string) {
	const loopback = "droprun's loopback target is written 127.0.0.1: forward the Service to a port on 127.0.0.1 (e.g. a NodePort mapped to a host port) and write http://127.0.0.1:PORT"
	u, err := url.Parse(raw)
	if err != nil {
		return "is not a URL: " + cleanURLError(err), "write it as http://127.0.0.1:PORT, or as your load balancer's http(s)://HOST[:PORT]"
	}
	remote := u.Hostname() != "127.0.0.1" && u.Hostname() != "" && !loopbackAlias(u.Hostname())
	if u.Scheme != "http" && !(remote && u.Scheme == "https") {
		return fmt.Sprintf("is not an http URL (scheme %q)", u.Scheme), "write it as http://127.0.0.1:PORT; the NodePort answers plain HTTP (a load balancer's URL may be https)"
	}
	if u.Opaque != "" || u.Host == "" {
		return "has no host", "write it as http://127.0.0.1:PORT"
	}
	if u.User != nil {
		return "has credentials in it", "remove the user:password@ part; droprun sends no credentials"
	}
	if h := u.Hostname(); h != "127.0.0.1" && !remote {
		return fmt.Sprintf("is not on 127.0.0.1 (host %q)", h), loopback
	}
	port, err := strconv.Atoi(u.Port())
	if (u.Port() != "" || !remote) && (err != nil || port < 1 || port > 65535) {
		return fmt.Sprintf("has no port between 1 and 65535 (port %q)", u.Port()), "write it as http://127.0.0.1:PORT with the host port the Service is reached on"
	}
	want := fmt.Sprintf("http://127.0.0.1:%d", port)
	if remote {
		want = u.Scheme + "://" + strings.ToLower(u.Hostname())
		if strings.Contains(u.Hostname(), ":") {
			want = u.Scheme + "://[" + strings.ToLower(u.Hostname()) + "]"
		}
		if u.Port() != "" {
			want += ":" + strconv.Itoa(port)
		}
	}
	if u.Path != "" || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return "has a path, query or fragment", fmt.Sprintf("write %s and put the request path in traffic.path, which is appended to it", want)
	}
	if raw != want {
		return "is not written plainly", "write it as " + want
	}
	return "", ""
}

// loopbackAlias reports whether host names loopback (or the unspecified
// address) other than as 127.0.0.1: localhost, ::1, 127.0.0.2, 127.0.0.1.
func loopbackAlias(host string) bool {
	h := strings.ToLower(host)
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true
	}
	ip := net.ParseIP(strings.TrimSuffix(h, "."))
	return ip != nil && (ip.IsLoopback() || ip.IsUnspecified())
}

// validateService checks app.service and app.custom.service: droprun's
// Service is NodePort or LoadBalancer; the user's own Service or Ingress
// is named only on an existing cluster whose URL reaches it, and then
// droprun creates none (so there is nothing for its gateway to forward to).
func (s *Scenario) validateService(v *validator) {
	own := ""
	if c := s.App.Custom; c != nil {
		own = c.Service
	}
	if own == "" {
		if svc := s.App.Service; svc != nil && svc.Type != ServiceNodePort && svc.Type != ServiceLoadBalancer {
			v.add("app.service.type", fmt.Sprintf("%q is not a Service type droprun creates", svc.Type), "use NodePort (the default) or LoadBalancer")
		}
		return
	}
	if msgs := validation.IsDNS1123Subdomain(own); len(msgs) > 0 {
		v.add("app.custom.service", fmt.Sprintf("%q is not a Service or Ingress name: %s", own, msgs[0]), "name your Service or Ingress in droprun's namespace, e.g. service: shop")
	}
	if s.App.Service != nil {
		v.add("app.service", "is set but app.custom.service names your own Service or Ingress", "remove app.service: droprun creates no Service when you bring your own")
	}
	if e := s.Cluster.Existing; e == nil || e.URL == "" {
		v.add("app.custom.service", "needs cluster.existing.url", "set cluster.existing (kubeconfig and url) to the URL your Service or Ingress is reached on; on a kind cluster leave app.custom.service out and droprun creates the Service")
	}
	if p, ok := path.Lookup(s.Traffic.Target); ok && p.Proxy != nil {
		v.add("traffic.target", fmt.Sprintf("is %s but app.custom.service brings your own Service", p.Name), "use traffic.target: "+path.NodePort.Name+", which sends traffic to cluster.existing.url directly")
	}
}

// cleanURLError drops the operation and the URL from a url.Parse error;
// the caller quotes the URL already.
func cleanURLError(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err.Error()
	}
	return err.Error()
}

func checkPort(v *validator, path string, p int) {
	if p < 1 || p > 65535 {
		v.add(path, fmt.Sprintf("%d is not a port", p), "use a free TCP port between 1024 and 65535")
	}
}

// checkPortLayout checks the host ports of every node: node k (0 = control
// plane) gets hostPort+2k (web) and gatewayHostPort+2k (gateway). They must
// all be ports, and no web port may be a gateway port.
func checkPortLayout(v *validator, k *KindCluster) {
	last := 2 * (k.Nodes - 1)
	for _, f := range []struct {
		path string
		base int
	}{{"cluster.kind.hostPort", k.HostPort}, {"cluster.kind.gatewayHostPort", k.GatewayHostPort}} {
		if f.base >= 1 && f.base <= 65535 && f.base+last > 65535 {
			v.add(f.path, fmt.Sprintf("%d puts the host port of node %d (of %d) at %d, past 65535", f.base, k.Nodes-1, k.Nodes, f.base+last),
				fmt.Sprintf("node k uses %s+2k: use at most %d with %d nodes", f.path[len("cluster.kind."):], 65535-last, k.Nodes))
		}
	}
	// Web port of node i = gateway port of node j when the bases differ by
	// an even amount smaller than 2×nodes.
	d := k.GatewayHostPort - k.HostPort
	if d%2 != 0 || d <= -2*k.Nodes || d >= 2*k.Nodes {
		return
	}
	i, j := max(d/2, 0), max(-d/2, 0) // HostPort+2i == GatewayHostPort+2j
	web, gw := make([]string, k.Nodes), make([]string, k.Nodes)
	for n := range k.Nodes {
		web[n], gw[n] = strconv.Itoa(k.HostPort+2*n), strconv.Itoa(k.GatewayHostPort+2*n)
	}
	v.add("cluster.kind.gatewayHostPort", fmt.Sprintf("%d collides with hostPort %d: port %d would be node %d's web port and node %d's gateway port (web ports %s, gateway ports %s)",
		k.GatewayHostPort, k.HostPort, k.HostPort+2*i, i, j, strings.Join(web, ", "), strings.Join(gw, ", ")),
		fmt.Sprintf("node k uses hostPort+2k and gatewayHostPort+2k: use gatewayHostPort %d (hostPort+1, the default layout) or one at least %d away from hostPort", k.HostPort+1, 2*k.Nodes))
}

func (s *Scenario) validateTraffic(v *validator) {
	t := s.Traffic
	if t.Rate <= 0 || t.Rate > MaxRate {
		v.add("traffic.rate", fmt.Sprintf("is %d requests/s", t.Rate),
			fmt.Sprintf("use a rate between 1 and %d; this project's 2-core machines hold about 3000 new connections/s", MaxRate))
	}
	if _, ok := path.Lookup(t.Target); !ok {
		var uses []string
		for _, name := range path.Names() {
			p, _ := path.Lookup(name)
			uses = append(uses, fmt.Sprintf("%s (drops show as %s)", p.Name, p.Drop))
		}
		v.add("traffic.target", fmt.Sprintf("%q is not a target", t.Target), "use "+strings.Join(uses, " or "))
	}
	switch p, _ := path.Lookup(t.Target); {
	case t.FrontRetries < 0 || t.FrontRetries > MaxFrontRetries:
		v.add("traffic.frontRetries", fmt.Sprintf("is %d", t.FrontRetries), fmt.Sprintf("give 1 to %d resends, or leave it out for none", MaxFrontRetries))
	case t.FrontRetries > 0 && p.Proxy != nil && p.Proxy.NoRetries != "":
		v.add("traffic.frontRetries", fmt.Sprintf("is %d with target %s, whose %s", t.FrontRetries, p.Name, p.Proxy.NoRetries), "use target caddy, which logs its resends, or leave it out")
	case t.FrontRetries > 0 && (p.Proxy == nil || !p.Proxy.Retries):
		v.add("traffic.frontRetries", fmt.Sprintf("is %d with target %s, which droprun cannot make resend", t.FrontRetries, cmp.Or(t.Target, path.NodePort.Name)), "use target caddy, or leave it out")
	}
	if err := traffic.CheckPath(t.Path); err != nil {
		v.add("traffic.path", err.Error(), "use an absolute path such as /version, nothing else (no query, no second URL)")
	}
	proto, known := traffic.ForWire(t.Wire, t.KeepAlive)
	switch {
	case !known:
		v.add("traffic.protocol", fmt.Sprintf("%q is not a protocol droprun speaks", t.Wire), "use one of "+strings.Join(traffic.Wires(), ", ")+" (http1 is the default; keepAlive chooses its connections)")
	case proto.Multiplexed() && t.KeepAlive:
		v.add("traffic.keepAlive", "is set with protocol "+t.Wire, "leave it out: "+t.Wire+" always keeps its connections (traffic.connections says how many)")
	case proto.Multiplexed() && t.Target != path.NodePort.Name:
		v.add("traffic.protocol", fmt.Sprintf("%s with target %s", t.Wire, t.Target), "use target nodeport: "+t.Wire+" goes to the pods directly, and the fronts here answer the client over HTTP/1.1 only")
	case !proto.ReusesConnections() && t.Connections != 0:
		v.add("traffic.connections", fmt.Sprintf("is %d with a new connection per request", t.Connections), "leave it out, or set keepAlive: true for a fleet of that many kept-alive clients")
	case t.IdleTimeout != nil && t.IdleTimeout.Duration != 0 && !proto.IdleTimed():
		v.add("traffic.idleTimeout", fmt.Sprintf("is %s with %s", t.IdleTimeout, proto.Text()), "leave it out: the client's idle timeout applies with keepAlive: true or protocol h2c")
	case t.Connections < 0 || t.Connections > traffic.MaxConnections:
		v.add("traffic.connections", fmt.Sprintf("is %d", t.Connections), fmt.Sprintf("give 1 to %d connections per target, or leave it out for %d", traffic.MaxConnections, traffic.DefaultConnections))
	case proto == traffic.ProtocolGRPC && t.Path != traffic.GRPCPath:
		v.add("traffic.path", fmt.Sprintf("is %s with protocol grpc", t.Path), "leave it out: every gRPC request is a call of "+traffic.GRPCPath)
	case proto == traffic.ProtocolGRPC && t.Method != traffic.DefaultMethod:
		v.add("traffic.method", fmt.Sprintf("is %s with protocol grpc", t.Method), "leave it out: a gRPC call is what it is, whatever the method")
	}
	if t.Arrivals != string(traffic.ArrivalsConstant) && t.Arrivals != string(traffic.ArrivalsPoisson) {
		v.add("traffic.arrivals", fmt.Sprintf("%q is not a way to space requests", t.Arrivals), fmt.Sprintf("use %s (one every 1/rate, the default) or %s (at random, rate on average)", traffic.ArrivalsConstant, traffic.ArrivalsPoisson))
	}
	if !slices.Contains(traffic.Methods(), t.Method) {
		v.add("traffic.method", fmt.Sprintf("%q is not a method droprun sends", t.Method), "use one of "+strings.Join(traffic.Methods(), ", "))
	}
	if t.Timeout.Duration <= 0 {
		v.add("traffic.timeout", "must be positive", "use a short timeout such as 2s")
	}
	for _, f := range []struct {
		path string
		d    *Duration
	}{{"traffic.control", t.Control}, {"traffic.between", t.Between}, {"traffic.settle", t.Settle}, {"traffic.balance", t.Balance}, {"traffic.idleTimeout", t.IdleTimeout}} {
		if f.d != nil && f.d.Duration < 0 {
			v.add(f.path, "is negative", "use a duration of 0s or more")
		}
	}
	if t.Control.Duration < t.Timeout.Duration {
		v.add("traffic.control", fmt.Sprintf("%s is shorter than traffic.timeout (%s)", t.Control, t.Timeout),
			"a control window must outlast one request timeout to say anything; use at least 5s")
	}
	if t.MaxWorkers < 1 || t.MaxWorkers > traffic.WorkerCap {
		v.add("traffic.maxWorkers", fmt.Sprintf("is %d", t.MaxWorkers), fmt.Sprintf("leave it out for the default, or give a bound from 1 to %d (one connection each)", traffic.WorkerCap))
	}
	s.validateGenerators(v)
	if *s.Rollouts == 0 && s.Traffic.Control.Duration == 0 {
		v.add("traffic.control", "is 0s in a control run (rollouts: 0)", "a control run measures only the control window: give it a duration")
	}
}

// validateGenerators checks traffic.generators and the paths only
// generator pods can send on.
func (s *Scenario) validateGenerators(v *validator) {
	t := s.Traffic
	p, known := path.Lookup(t.Target)
	g := t.Generators
	if g == nil || g.From == FromHost {
		if known && p.Inside {
			v.add("traffic.target", fmt.Sprintf("%s begins inside the cluster", p.Name), "send from generator pods: traffic.generators: {from: pods}")
		}
		if g != nil && (g.Count != 0 || g.Placement != "" || g.Image != "" || g.Resources != nil) {
			v.add("traffic.generators", "sets count, placement, image or resources with from: host", "leave them out, or set from: pods")
		}
		return
	}
	if g.From != FromPods {
		v.add("traffic.generators.from", fmt.Sprintf("%q is not where load can come from", g.From), "use host (droprun's own client, the default) or pods (generator pods inside the cluster)")
		return
	}
	if proto := t.Protocol(); proto.Multiplexed() {
		v.add("traffic.protocol", fmt.Sprintf("%s with generator pods", t.Wire), "use http1: generator pods send HTTP/1.1 only so far")
	}
	switch {
	case g.Count < 1 || g.Count > MaxGenerators:
		v.add("traffic.generators.count", fmt.Sprintf("is %d", g.Count), fmt.Sprintf("give 1 to %d generators (on kind the default is one per node)", MaxGenerators))
	case g.Count > t.Rate:
		v.add("traffic.generators.count", fmt.Sprintf("%d generators share %d requests/s", g.Count, t.Rate), "give each generator at least 1 request/s: fewer generators or a higher rate")
	}
	for _, e := range g.Resources.problems() {
		v.add("traffic.generators.resources."+e.Path, e.Msg, e.Fix)
	}
	switch g.Placement {
	case PlacementOnePerNode:
		if k := s.Cluster.Kind; k != nil && g.Count > k.Nodes {
			v.add("traffic.generators.count", fmt.Sprintf("%d generators one per node on %d nodes", g.Count, k.Nodes), fmt.Sprintf("use at most %d, or placement: any", k.Nodes))
		}
	case PlacementAny:
	default:
		v.add("traffic.generators.placement", fmt.Sprintf("%q is not a placement", g.Placement), "use one-per-node (the default) or any")
	}
	switch {
	case s.Cluster.Existing != nil && g.Image == "":
		v.add("traffic.generators.image", "is required on an existing cluster", "build it with `droprun image generator`, push it where your nodes pull from, and name it here")
	case s.Cluster.Existing == nil && g.Image != "":
		v.add("traffic.generators.image", "is set on droprun's kind cluster", "leave it out: the run builds the generator and loads it into the nodes")
	case g.Image != "":
		if err := imageref.Check(g.Image); err != nil {
			v.add("traffic.generators.image", err.Error(), "name an image with a tag or digest, e.g. registry.example/droprun-generator:0123456789ab")
		}
	}
}

func (s *Scenario) validateVariants(v *validator) {
	custom := s.App.Custom != nil
	if custom {
		c := s.App.Custom
		if len(c.Images) != 2 {
			v.add("app.custom.images", fmt.Sprintf("has %d images", len(c.Images)), "give exactly two images; rollouts alternate between them")
		}
		if c.Container == "" {
			v.add("app.custom.container", "is required", "name the container whose image the rollouts change")
		}
		checkPort(v, "app.custom.port", c.Port)
		if c.Metrics != nil {
			validateCustomMetrics(v, c.Metrics)
		}
	}
	if len(s.Variants) == 0 {
		v.add("variants", "is empty", "list at least one variant, e.g. - variant: no-prestop")
	}
	seen := map[string]int{}
	for i, vr := range s.Variants {
		p := s.entryPath(i)
		if j, dup := seen[vr.Name]; dup {
			v.add(p+".name", fmt.Sprintf("%q is also the name of %s", vr.Name, s.entryPath(j)), "give each variant a unique name")
		}
		seen[vr.Name] = i
		// A sweep's rows are named NAME@FIELD=VALUE; its entry's name was
		// checked when it was expanded.
		if msgs := validation.IsDNS1123Label(vr.Name); vr.Name != "" && vr.Sweep == nil && len(msgs) > 0 {
			v.add(p+".name", fmt.Sprintf("%q is not a DNS label", vr.Name), "use lower-case letters, digits and '-'")
		}
		if custom {
			if vr.Manifest == "" {
				v.add(p+".manifest", "is required for a custom app", "give the path of the variant's Deployment manifest")
			}
			if vr.Variant != "" || vr.From != "" {
				v.add(p+".variant", "built-in variants apply only to bookshop", "remove variant/from, or remove app.custom")
			}
		} else {
			if vr.Manifest != "" {
				v.add(p+".manifest", "is set but the app is bookshop", "set app.custom to measure your own Deployment, or remove manifest")
			}
			checkVariantName(v, p+".variant", vr.Variant, true)
			checkVariantName(v, p+".from", vr.From, false)
			if vr.From != "" && *s.Rollouts == 0 {
				v.add(p+".from", "needs at least one rollout", "set rollouts to 1 or more; the first rollout switches from "+vr.From+" to "+vr.Variant)
			}
		}
		before := len(v.errs)
		s.validateWorkload(v, i, s.Effective(i))
		if vr.Sweep != nil {
			// A problem at a swept value names the row it would be.
			swept := s.sweptPath(i, vr.Sweep.Field)
			for k := before; k < len(v.errs); k++ {
				if v.errs[k].Path == swept {
					v.errs[k].Msg += fmt.Sprintf(" (in %s)", vr.Name)
				}
			}
		}
	}
}

func checkVariantName(v *validator, path, name string, required bool) {
	if name == "" {
		if required {
			v.add(path, "is required", "use one of: "+variant.NameList())
		}
		return
	}
	if _, ok := variant.Lookup(name); !ok {
		v.add(path, fmt.Sprintf("%q is not a variant", name), "use one of: "+variant.NameList())
	}
}

// validateWorkload checks variant i's effective workload. Problems are
// reported at the field the value came from: the variant's entry, or the
// scenario's defaults when the variant inherits it.
func (s *Scenario) validateWorkload(v *validator, i int, w Workload) {
	vr := s.Variants[i]
	p := s.entryPath(i)
	at := func(field string, inVariant, inDefaults bool) string {
		if swept := s.sweptPath(i, field); swept != "" {
			return swept
		}
		if !inVariant && inDefaults {
			return "defaults." + field
		}
		return p + "." + field
	}
	d := s.Defaults
	if *w.Replicas < 1 {
		v.add(at("replicas", vr.Replicas != nil, d.Replicas != nil), fmt.Sprintf("is %d", *w.Replicas), "use 1 or more; the default is 2")
	}
	surge, errS := intstr.GetScaledValueFromIntOrPercent(w.MaxSurge, int(*w.Replicas), true)
	unavail, errU := intstr.GetScaledValueFromIntOrPercent(w.MaxUnavailable, int(*w.Replicas), false)
	if errS != nil {
		v.add(at("maxSurge", vr.MaxSurge != nil, d.MaxSurge != nil), errS.Error(), "use a count such as 1 or a percentage such as 25%")
	}
	if errU != nil {
		v.add(at("maxUnavailable", vr.MaxUnavailable != nil, d.MaxUnavailable != nil), errU.Error(), "use a count such as 0 or a percentage such as 25%")
	}
	if errS == nil && errU == nil && surge == 0 && unavail == 0 {
		v.add(at("maxSurge", vr.MaxSurge != nil, d.MaxSurge != nil), "and maxUnavailable both resolve to 0", "let one of them be at least 1, or the rollout cannot move")
	}
	grace := *w.TerminationGracePeriodSeconds
	if grace < 1 {
		v.add(at("terminationGracePeriodSeconds", vr.TerminationGracePeriodSeconds != nil, d.TerminationGracePeriodSeconds != nil), fmt.Sprintf("is %d", grace), "use at least 1; Kubernetes' default is 30")
	}
	if *w.PreStopSeconds < 0 {
		v.add(at("preStopSeconds", vr.PreStopSeconds != nil, d.PreStopSeconds != nil), "is negative", "use a sleep of 0 to 10 seconds (0: the hook runs and returns at once)")
	}
	info, _ := variant.Lookup(vr.Variant)
	if info.Protocol != "" && s.Traffic.Wire != info.Protocol {
		v.add(p+".variant", fmt.Sprintf("%s sets how the app's %s server stops, and traffic.protocol is %s", info.Name, info.Protocol, s.Traffic.Wire),
			fmt.Sprintf("set traffic.protocol: %s, or measure %s's HTTP side with its own variant (graceful-drain, naive-shutdown)", info.Protocol, info.Name))
	}
	if info.PreStop != variant.PreStopNone && *w.PreStopSeconds >= grace {
		v.add(at("preStopSeconds", vr.PreStopSeconds != nil, d.PreStopSeconds != nil), fmt.Sprintf("%d is not less than terminationGracePeriodSeconds (%d)", *w.PreStopSeconds, grace),
			"the sleep is spent inside the grace period and the kubelet kills the container at its end, mid-hook; raise terminationGracePeriodSeconds well above the sleep")
	}
	if w.DrainDelay.Duration < 0 {
		v.add(at("drainDelay", vr.DrainDelay != nil, d.DrainDelay != nil), "is negative", "use a delay such as 5s")
	}
	switch {
	case w.IdleTimeout.Duration < 0:
		v.add(at("idleTimeout", vr.IdleTimeout != nil, d.IdleTimeout != nil), "is negative", "use a timeout such as 5s, or 0s to keep idle connections open")
	case w.IdleTimeout.Duration > 0 && s.App.Custom != nil:
		v.add(at("idleTimeout", vr.IdleTimeout != nil, d.IdleTimeout != nil), "sets the bookshop app's idle timeout, and the app is your own",
			"leave it out: your app's idle timeout is set in its own manifest or code")
	}
	if info.Shutdown.Drains() {
		need := w.DrainDelay.Duration + AppShutdownTimeout
		if need >= time.Duration(grace)*time.Second {
			v.add(at("drainDelay", vr.DrainDelay != nil, d.DrainDelay != nil), fmt.Sprintf("%s plus the app's %s shutdown timeout is not less than terminationGracePeriodSeconds (%d)", w.DrainDelay, AppShutdownTimeout, grace),
				"the app must exit well inside the grace period: shorten drainDelay or raise terminationGracePeriodSeconds")
		}
	}
	switch w.Flavour {
	case "", "standard", "distroless":
	default:
		v.add(at("flavour", vr.Flavour != "", d.Flavour != ""), fmt.Sprintf("%q is not an image flavour", w.Flavour), "use standard (has /bin/sleep) or distroless (has not)")
	}
	if r := w.Readiness; r != nil {
		for _, f := range []struct {
			name string
			val  *int32
		}{{"periodSeconds", r.PeriodSeconds}, {"timeoutSeconds", r.TimeoutSeconds}, {"successThreshold", r.SuccessThreshold}, {"failureThreshold", r.FailureThreshold}} {
			if f.val != nil && *f.val < 1 {
				v.add(at("readiness."+f.name, vr.Readiness != nil, d.Readiness != nil), fmt.Sprintf("is %d", *f.val), "use 1 or more")
			}
		}
		if r.InitialDelaySeconds != nil && *r.InitialDelaySeconds < 0 {
			v.add(at("readiness.initialDelaySeconds", vr.Readiness != nil, d.Readiness != nil), "is negative", "use 0 or more")
		}
	}
	for _, e := range w.Resources.problems() {
		v.add(at("resources."+e.Path, vr.Resources != nil, d.Resources != nil), e.Msg, e.Fix)
	}
}

// CheckOutput refuses an output folder outside the directory droprun runs
// in (absolute, or climbing with ..): a scenario may not choose where on
// this machine a run writes. A run whose directory the user names on the
// command line (--output-dir) does not use output and skips this. It is
// not part of Validate: a recorded run's scenario.yaml, read back, is what
// that run was and is never refused for it. Its error is an *Errors.
func (s *Scenario) CheckOutput() error {
	if filepath.IsLocal(s.Output) {
		return nil
	}
	return &Errors{File: "scenario " + s.Metadata.Name, List: []FieldError{{Path: "output",
		Msg: fmt.Sprintf("%q is not a folder under the directory droprun runs in", s.Output),
		Fix: "give a relative path without .. (such as results), or name the run directory on the command line: droprun run --output-dir DIR"}}}
}

// problems are what is wrong with r (nil is fine), each at its path under
// resources: a resource other than cpu or memory, or a quantity
// Kubernetes would refuse.
func (r *Resources) problems() []FieldError {
	if r == nil {
		return nil
	}
	var out []FieldError
	for _, kind := range []string{"requests", "limits"} {
		m := r.Requests
		if kind == "limits" {
			m = r.Limits
		}
		for _, name := range slices.Sorted(maps.Keys(m)) {
			p := kind + "." + name
			if name != "cpu" && name != "memory" {
				out = append(out, FieldError{Path: p, Msg: "is not a resource droprun sets", Fix: "use cpu or memory"})
			}
			if _, err := resource.ParseQuantity(m[name]); err != nil {
				out = append(out, FieldError{Path: p, Msg: fmt.Sprintf("%q is not a quantity", m[name]), Fix: "write it like 50m (cpu) or 32Mi (memory)"})
			}
		}
	}
	return out
}

// metricName is a Prometheus metric or label name.
var metricName = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)

// validateCustomMetrics checks app.custom.metrics: the counter and labels
// must be Prometheus names, the path absolute, the port a port.
func validateCustomMetrics(v *validator, m *CustomMetrics) {
	const p = "app.custom.metrics"
	checkPort(v, p+".port", m.Port)
	if m.Path == "" || m.Path[0] != '/' || strings.ContainsAny(m.Path, "?#") {
		v.add(p+".path", fmt.Sprintf("%q is not an absolute path", m.Path), "use the path the app serves its Prometheus metrics on, such as /metrics")
	}
	switch {
	case m.Counter == "":
		v.add(p+".counter", "is required", "name the counter of the app's responses, such as http_requests_total; or remove metrics: the summary then says there is no pods' view")
	case !metricName.MatchString(m.Counter):
		v.add(p+".counter", fmt.Sprintf("%q is not a Prometheus metric name", m.Counter), "use letters, digits, '_' and ':', as in http_requests_total")
	}
	if !metricName.MatchString(m.CodeLabel) || strings.Contains(m.CodeLabel, ":") {
		v.add(p+".codeLabel", fmt.Sprintf("%q is not a Prometheus label name", m.CodeLabel), "name the label that holds the status code, such as code or status")
	}
	for _, l := range slices.Sorted(maps.Keys(m.Match)) {
		if !metricName.MatchString(l) || strings.Contains(l, ":") {
			v.add(p+".match."+l, "is not a Prometheus label name", "use letters, digits and '_', as in path")
		}
		if l == m.CodeLabel {
			v.add(p+".match."+l, "is the codeLabel", "leave the status code out of match: droprun splits the count by it to set the pods' 2xx beside the client's")
		}
	}
}
