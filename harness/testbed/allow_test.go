package testbed

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/droprun/droprun/harness/path"
	"github.com/droprun/droprun/harness/scenario"
	"github.com/droprun/droprun/harness/traffic"
)

func allowTargets(t *testing.T, names ...string) []traffic.AllowTarget {
	t.Helper()
	var out []traffic.AllowTarget
	for _, n := range names {
		a, err := traffic.ParseAllowTarget(n)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, a)
	}
	return out
}

// TestCheckAllow: a URL beyond 127.0.0.1 is used only when --allow-target
// names its host (and port); a name that is not the URL's host, or one on
// kind, is an error. Validation only: nothing is sent anywhere.
func TestCheckAllow(t *testing.T) {
	existing := func(url string) *scenario.Scenario {
		sc := testScenario(t, path.NodePort.Name)
		sc.Cluster = scenario.Cluster{Existing: &scenario.ExistingCluster{Kubeconfig: "/k", URL: url}}
		return sc
	}
	tests := []struct {
		name  string
		sc    *scenario.Scenario
		allow []string
		want  string // "" = allowed
	}{
		{"loopback, nothing named", existing("http://127.0.0.1:31000"), nil, ""},
		{"default URL", existing(""), nil, ""},
		{"load balancer named", existing("https://shop.example.com"), []string{"shop.example.com"}, ""},
		{"load balancer and port named", existing("https://shop.example.com"), []string{"shop.example.com:443"}, ""},
		{"load balancer not named", existing("https://shop.example.com"), nil,
			`cluster.existing.url: traffic: URL "https://shop.example.com": host must be 127.0.0.1`},
		{"says what to pass", existing("http://203.0.113.7:8080"), nil, "--allow-target 203.0.113.7:8080"},
		{"another port named", existing("http://shop.example.com:8080"), []string{"shop.example.com:80"}, "--allow-target shop.example.com:8080"},
		{"a second name that is not the URL's", existing("https://shop.example.com"), []string{"shop.example.com", "shop.example.org"},
			"--allow-target shop.example.org does not name cluster.existing.url https://shop.example.com (host shop.example.com, port 443)"},
		{"a name on a loopback URL", existing("http://127.0.0.1:31000"), []string{"shop.example.com"}, "--allow-target shop.example.com does not name"},
		{"on kind", testScenario(t, path.NodePort.Name), []string{"shop.example.com"}, "applies to an existing cluster's url only"},
	}
	for _, tc := range tests {
		err := CheckAllow(tc.sc, allowTargets(t, tc.allow...))
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.want)
		}
	}
}

// TestWaitAnsweringRefusesUnnamedHost: the probe before a run goes through
// the same check as the load: a target beyond 127.0.0.1 that the user did
// not name is refused before any request.
func TestWaitAnsweringRefusesUnnamedHost(t *testing.T) {
	tb := &Testbed{Scenario: testScenario(t, path.NodePort.Name), URL: "http://shop.example.com"}
	if _, err := tb.WaitAnswering(t.Context(), 0); err == nil || !strings.Contains(err.Error(), "--allow-target shop.example.com:80") {
		t.Errorf("err = %v", err)
	}
}

// TestCheckOwnService: app.custom.service must name a Service or an Ingress
// in droprun's namespace; when it is missing the error says how to create it.
func TestCheckOwnService(t *testing.T) {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "droprun"}}
	ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: "shop-ing", Namespace: "droprun"}}
	c := fake.NewClientset(svc, ing)
	for _, name := range []string{"shop", "shop-ing"} {
		if err := checkOwnService(t.Context(), c, "droprun", name); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	err := checkOwnService(t.Context(), c, "other", "shop")
	if err == nil || !strings.Contains(err.Error(), `app.custom.service "shop": namespace other has no Service or Ingress of that name`) ||
		!strings.Contains(err.Error(), "kubectl label namespace other app.kubernetes.io/managed-by=droprun") {
		t.Errorf("missing Service: err = %v", err)
	}
}
