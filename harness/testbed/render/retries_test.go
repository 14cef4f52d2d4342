package render_test

import (
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	networkingv1ac "k8s.io/client-go/applyconfigurations/networking/v1"
	"sigs.k8s.io/yaml"

	"github.com/droprun/droprun/harness/frontlog"
	"github.com/droprun/droprun/harness/testbed/render"
	"github.com/droprun/droprun/harness/variant"
)

// TestFrontRetries: traffic.frontRetries N makes Traefik's router go
// through a retry middleware of N+1 attempts (Traefik counts the first
// try) and Caddy's reverse proxy resend N times, logging how many it did;
// with none, neither front is told to retry.
func TestFrontRetries(t *testing.T) {
	for _, retries := range []int{0, 2} {
		var ingress *networkingv1ac.IngressApplyConfiguration
		var dynamic map[string]string
		for _, o := range render.Traefik("ns", "droprun/traefik:v3.6.12", "web", retries) {
			switch o := o.(type) {
			case *networkingv1ac.IngressApplyConfiguration:
				ingress = o
			case *corev1ac.ConfigMapApplyConfiguration:
				dynamic = o.Data
			}
		}
		mw := ingress.Annotations["traefik.ingress.kubernetes.io/router.middlewares"]
		var file struct {
			HTTP struct {
				Middlewares map[string]struct {
					Retry struct{ Attempts int } `json:"retry"`
				} `json:"middlewares"`
			} `json:"http"`
		}
		if err := yaml.Unmarshal([]byte(dynamic["retry.yaml"]), &file); err != nil {
			t.Fatalf("Traefik's retry.yaml %q: %v", dynamic["retry.yaml"], err)
		}
		switch name, _, _ := strings.Cut(mw, "@"); {
		case retries == 0 && (mw != "" || dynamic["retry.yaml"] != ""):
			t.Errorf("no retries, yet the Ingress names middleware %q and the file holds %q", mw, dynamic["retry.yaml"])
		case retries > 0 && (!strings.HasSuffix(mw, "@file") || file.HTTP.Middlewares[name].Retry.Attempts != retries+1):
			t.Errorf("%d retries: the Ingress names %q, the file %q: want a file middleware of %d attempts", retries, mw, dynamic["retry.yaml"], retries+1)
		}
		if dynamic["api.yaml"] == "" {
			t.Errorf("%d retries: the API's router is gone from the dynamic config", retries)
		}

		web := render.Service("ns", "shop", map[string]string{"app": "shop"}, intstr.FromInt32(9090), variant.WebNodePort)
		cm := render.Caddy("ns", "droprun/caddy:v2.11.9", web, 9090, retries)[1].(*corev1ac.ConfigMapApplyConfiguration)
		var cfg struct {
			Apps struct {
				HTTP struct {
					Servers map[string]struct {
						Routes []struct {
							Handle []map[string]any `json:"handle"`
						} `json:"routes"`
					} `json:"servers"`
				} `json:"http"`
			} `json:"apps"`
		}
		if err := json.Unmarshal([]byte(cm.Data["caddy.json"]), &cfg); err != nil {
			t.Fatal(err)
		}
		h := cfg.Apps.HTTP.Servers["web"].Routes[0].Handle
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
