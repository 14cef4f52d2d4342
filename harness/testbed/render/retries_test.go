package render_test

import (
	"encoding/json"
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	"github.com/droprun/droprun/harness/frontlog"
	"github.com/droprun/droprun/harness/testbed/render"
	"github.com/droprun/droprun/harness/variant"
)

// TestFrontRetries: traffic.frontRetries N makes Caddy's reverse proxy
// resend N times and log how many it did; with none it is not told to
// retry.
func TestFrontRetries(t *testing.T) {
	for _, retries := range []int{0, 2} {
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
