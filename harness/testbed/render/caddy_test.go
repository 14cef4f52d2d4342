package render_test

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	"github.com/droprun/droprun/harness/frontlog"
	"github.com/droprun/droprun/harness/testbed/render"
	"github.com/droprun/droprun/harness/variant"
)

// TestCaddy: Caddy finds the web pods by a headless Service's DNS name
// (the web Service's selector, the pods' port), looks it up every second,
// and reads its config from the ConfigMap it mounts.
func TestCaddy(t *testing.T) {
	web := render.Service("ns", "shop", map[string]string{"app": "shop"}, intstr.FromInt32(9090), variant.WebNodePort)
	objs := render.Caddy("ns", "droprun/caddy:v2.11.9", web, 9090, 0)
	if len(objs) != 4 {
		t.Fatalf("%d objects, want the headless Service, ConfigMap, Deployment and Service", len(objs))
	}
	headless := objs[0].(*corev1ac.ServiceApplyConfiguration)
	if *headless.Name != "shop"+variant.DNSSuffix || *headless.Spec.ClusterIP != "None" ||
		headless.Spec.Selector["app"] != "shop" || *headless.Spec.Ports[0].Port != 9090 {
		t.Errorf("headless Service %s: %+v, want shop-dns, no cluster IP, shop's pods on 9090", *headless.Name, headless.Spec)
	}
	cfg := caddyConfig(t, objs)
	web0 := cfg.Apps.HTTP.Servers["web"]
	if !cfg.Admin.Disabled || len(web0.Listen) != 1 || web0.Listen[0] != ":8000" || len(web0.Routes) != 1 {
		t.Fatalf("config %+v: want one server on :8000, no admin endpoint", cfg)
	}
	h := web0.Routes[0].Handle
	proxy := h[len(h)-1]
	up, _ := proxy["dynamic_upstreams"].(map[string]any)
	if proxy["handler"] != "reverse_proxy" || up["source"] != "a" || up["name"] != "shop-dns.ns.svc.cluster.local." ||
		up["port"] != "9090" || up["refresh"] != frontlog.CaddyRefresh.String() {
		t.Errorf("reverse proxy %v: want dynamic A upstreams of shop-dns.ns.svc.cluster.local.:9090 every %s", proxy, frontlog.CaddyRefresh.String())
	}
	// Caddy's error log, which says why it failed each request, goes to
	// stdout with the access log, which droprun reads.
	errorLog := false
	for _, l := range cfg.Logging.Logs {
		if l.Writer.Output == "stdout" && slices.Contains([]string{"", "DEBUG", "INFO", "WARN", "ERROR"}, l.Level) && !slices.Contains(l.Exclude, frontlog.CaddyErrorLogger) &&
			(l.Include == nil || slices.Contains(l.Include, frontlog.CaddyErrorLogger)) {
			errorLog = true
		}
	}
	if !errorLog {
		t.Errorf("no log of Caddy's writes %s to stdout: %+v", frontlog.CaddyErrorLogger, cfg.Logging.Logs)
	}
	d := objs[2]
	b, err := render.YAML(d)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"image: droprun/caddy:v2.11.9", "imagePullPolicy: Never", "--config", "/etc/caddy/caddy.json", "automountServiceAccountToken: false"} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("Caddy's Deployment lacks %q:\n%s", want, b)
		}
	}
	if svc := objs[3].(*corev1ac.ServiceApplyConfiguration); *svc.Spec.Ports[0].NodePort != variant.GatewayNodePort {
		t.Errorf("Caddy's Service on node port %d, want %d", *svc.Spec.Ports[0].NodePort, variant.GatewayNodePort)
	}
}

// caddyJSON is the part of Caddy's config the tests read.
type caddyJSON struct {
	Admin   struct{ Disabled bool } `json:"admin"`
	Logging struct {
		Logs map[string]struct {
			Writer           struct{ Output string } `json:"writer"`
			Level            string                  `json:"level"`
			Include, Exclude []string
		} `json:"logs"`
	} `json:"logging"`
	Apps struct {
		HTTP struct {
			Servers map[string]struct {
				Listen []string `json:"listen"`
				Routes []struct {
					Handle []map[string]any `json:"handle"`
				} `json:"routes"`
			} `json:"servers"`
		} `json:"http"`
	} `json:"apps"`
}

// caddyConfig reads the config in the ConfigMap among Caddy's objects.
func caddyConfig(t *testing.T, objs []any) caddyJSON {
	t.Helper()
	var cfg caddyJSON
	if err := json.Unmarshal([]byte(objs[1].(*corev1ac.ConfigMapApplyConfiguration).Data["caddy.json"]), &cfg); err != nil {
		t.Fatalf("Caddy's config: %v", err)
	}
	return cfg
}

// TestFrontRetries: traffic.frontRetries N makes Caddy's reverse proxy
// resend N times and log how many it did; with none it is not told to
// retry.
func TestFrontRetries(t *testing.T) {
	for _, retries := range []int{0, 2} {
		web := render.Service("ns", "shop", map[string]string{"app": "shop"}, intstr.FromInt32(9090), variant.WebNodePort)
		h := caddyConfig(t, render.Caddy("ns", "droprun/caddy:v2.11.9", web, 9090, retries)).Apps.HTTP.Servers["web"].Routes[0].Handle
		proxy := h[len(h)-1]
		lb, _ := proxy["load_balancing"].(map[string]any)
		logged := false
		for _, x := range h {
			logged = logged || x["handler"] == "log_append" && x["key"] == frontlog.CaddyRetriesKey && x["value"] == "{http.reverse_proxy.retries}"
		}
		switch {
		case retries == 0 && (lb != nil || logged):
			t.Errorf("no retries, yet Caddy's proxy has load_balancing %v (resends logged: %v)", lb, logged)
		case retries > 0 && (lb["retries"] != float64(retries) || !logged || proxy["handler"] != "reverse_proxy"):
			t.Errorf("%d retries: Caddy's proxy %v, resends logged: %v; want load_balancing retries %d and the resends in the access log", retries, proxy, logged, retries)
		}
	}
}
