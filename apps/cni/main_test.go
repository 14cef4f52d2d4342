package main

import (
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"
)

func loadNodes(t *testing.T) []node {
	t.Helper()
	body, err := os.ReadFile("testdata/nodes.json")
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := parseNodeList(body)
	if err != nil {
		t.Fatal(err)
	}
	return nodes
}

func TestParseNodeList(t *testing.T) {
	nodes := loadNodes(t)
	if len(nodes) != 4 {
		t.Fatalf("got %d nodes, want 4", len(nodes))
	}
	if got := nodes[1].PodCIDRs; !reflect.DeepEqual(got, []string{"10.244.1.0/24", "fd00:10:244:1::/64"}) {
		t.Errorf("worker podCIDRs = %v", got)
	}
	if got := nodes[2].PodCIDRs; !reflect.DeepEqual(got, []string{"10.244.2.0/24"}) {
		t.Errorf("podCIDR fallback = %v", got)
	}
	if got := nodes[1].internalIPv4(); got != "172.18.0.2" {
		t.Errorf("worker InternalIP = %q, want the IPv4 one", got)
	}
	if _, err := parseNodeList([]byte(`{"kind":"Status","message":"forbidden"}`)); err == nil {
		t.Error("a Status instead of a NodeList: want an error")
	}
}

func TestDesiredRoutes(t *testing.T) {
	nodes := loadNodes(t)
	got := desiredRoutes(nodes, "kind-worker")
	want := map[string]string{"10.244.0.0/24": "172.18.0.3", "10.244.2.0/24": "172.18.0.4"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("routes from kind-worker = %v, want %v (self and nodes without a podCIDR skipped)", got, want)
	}
}

func TestRenderConflist(t *testing.T) {
	b, err := renderConflist("10.244.1.0/24", 1450)
	if err != nil {
		t.Fatal(err)
	}
	var conf struct {
		CNIVersion string `json:"cniVersion"`
		Name       string `json:"name"`
		Plugins    []struct {
			Type   string `json:"type"`
			IPMasq *bool  `json:"ipMasq"`
			MTU    int    `json:"mtu"`
			IPAM   struct {
				Type   string                `json:"type"`
				Ranges [][]map[string]string `json:"ranges"`
				Routes []map[string]string   `json:"routes"`
			} `json:"ipam"`
			Capabilities map[string]bool `json:"capabilities"`
		} `json:"plugins"`
	}
	if err := json.Unmarshal(b, &conf); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, b)
	}
	if conf.CNIVersion != "1.0.0" || len(conf.Plugins) != 2 {
		t.Fatalf("conf = %+v", conf)
	}
	ptp := conf.Plugins[0]
	if ptp.Type != "ptp" || ptp.IPMasq == nil || *ptp.IPMasq || ptp.MTU != 1450 {
		t.Errorf("ptp plugin = %+v", ptp)
	}
	if ptp.IPAM.Type != "host-local" || ptp.IPAM.Ranges[0][0]["subnet"] != "10.244.1.0/24" || ptp.IPAM.Routes[0]["dst"] != "0.0.0.0/0" {
		t.Errorf("ipam = %+v", ptp.IPAM)
	}
	if pm := conf.Plugins[1]; pm.Type != "portmap" || !pm.Capabilities["portMappings"] {
		t.Errorf("portmap plugin = %+v", pm)
	}
	if _, err := renderConflist("not-a-cidr", 1500); err == nil {
		t.Error("bad CIDR: want an error")
	}
	if b, _ := renderConflist("10.244.1.0/24", 0); !strings.Contains(string(b), `"mtu": 1500`) {
		t.Error("mtu 0: want the default 1500")
	}
}

func TestMasqRules(t *testing.T) {
	got := masqRules("10.244.0.0/16")
	want := `*nat
:DROPRUN-MASQ - [0:0]
-A DROPRUN-MASQ -d 10.244.0.0/16 -m comment --comment "droprun-cni: pod to pod" -j RETURN
-A DROPRUN-MASQ -m comment --comment "droprun-cni: leaving the pod range" -j MASQUERADE
COMMIT
`
	if got != want {
		t.Errorf("masqRules:\n%s\nwant:\n%s", got, want)
	}
	jump := strings.Join(masqJump("10.244.0.0/16"), " ")
	if !strings.HasPrefix(jump, "-s 10.244.0.0/16 ") || !strings.HasSuffix(jump, "-j DROPRUN-MASQ") {
		t.Errorf("masqJump = %s", jump)
	}
}

func TestConfigFromEnv(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	c, err := configFromEnv(env(map[string]string{
		"NODE_NAME": "kind-worker", "POD_SUBNET": "10.244.0.0/16", "CONTROL_PLANE_ENDPOINT": "kind-control-plane:6443",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if c.apiURL != "https://kind-control-plane:6443" || c.podSubnet.String() != "10.244.0.0/16" || c.confDir != "/etc/cni/net.d" {
		t.Errorf("config = %+v", c)
	}
	c, err = configFromEnv(env(map[string]string{
		"NODE_NAME": "n", "POD_SUBNET": "10.244.0.0/16,fd00:10:244::/56",
		"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443",
	}))
	if err != nil || c.apiURL != "https://10.96.0.1:443" || c.podSubnet.String() != "10.244.0.0/16" {
		t.Errorf("dual-stack subnet, service env: %+v, %v", c, err)
	}
	for name, m := range map[string]map[string]string{
		"no node":   {"POD_SUBNET": "10.244.0.0/16", "CONTROL_PLANE_ENDPOINT": "x:6443"},
		"no subnet": {"NODE_NAME": "n", "CONTROL_PLANE_ENDPOINT": "x:6443"},
		"no API":    {"NODE_NAME": "n", "POD_SUBNET": "10.244.0.0/16"},
	} {
		if _, err := configFromEnv(env(m)); err == nil {
			t.Errorf("%s: want an error", name)
		}
	}
}
