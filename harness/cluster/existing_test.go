package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// TestExistingKubeconfigRead: a user's kubeconfig is read at most once and
// at most 1 MiB of it, and paths inside it stay relative to the file, as
// clientcmd.LoadFromFile has them.
func TestExistingKubeconfigRead(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, bytes.Repeat([]byte("# padding\n"), 2<<20/10), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Existing(t.Context(), big, "", "", false); err == nil || !strings.Contains(err.Error(), big+" is larger than 1 MiB, the most droprun reads from a kubeconfig") {
		t.Errorf("2 MiB kubeconfig: err = %v", err)
	}
	if _, err := os.Stat("/dev/zero"); err == nil {
		if _, err := Existing(t.Context(), "/dev/zero", "", "", false); err == nil || !strings.Contains(err.Error(), "is larger than 1 MiB") {
			t.Errorf("/dev/zero: err = %v", err)
		}
	}
	kc := filepath.Join(dir, "kubeconfig")
	err := os.WriteFile(kc, []byte(`apiVersion: v1
kind: Config
current-context: kind-ca
clusters:
- name: kind-ca
  cluster: {server: "https://127.0.0.1:40000", certificate-authority: ca.crt}
contexts:
- name: kind-ca
  context: {cluster: kind-ca, user: u}
users:
- name: u
  user: {token: x}
`), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Existing(t.Context(), kc, "", "", false); err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "ca.crt")) {
		t.Errorf("missing ca.crt beside the kubeconfig: err = %v, want it to name %s", err, filepath.Join(dir, "ca.crt"))
	}
}

// providerNode is a node named name with providerID; kind v0.33.0 registers it (provider ID
// kind://docker/CLUSTER/NODE); other nodes get providerID as given.
func providerNode(name, providerID string) corev1.Node {
	return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{ProviderID: providerID}}
}

func TestKindNodes(t *testing.T) {
	kind := []corev1.Node{
		providerNode("droprun-control-plane", "kind://docker/droprun/droprun-control-plane"),
		providerNode("droprun-worker", "kind://docker/droprun/droprun-worker"),
	}
	tests := []struct {
		name  string
		nodes []corev1.Node
		want  string // "" = kind
	}{
		{"kind", kind, ""},
		{"kind on podman", []corev1.Node{providerNode("n", "kind://podman/c/n")}, ""},
		{"none", nil, "it has no nodes"},
		{"one cloud node", append(slices.Clone(kind), providerNode("ip-10-0-1-5", "aws:///eu-west-1a/i-0abc")),
			`node "ip-10-0-1-5" has provider ID "aws:///eu-west-1a/i-0abc" (kind's nodes have kind://PROVIDER/CLUSTER/NODE)`},
		{"no provider ID", []corev1.Node{providerNode("bare", "")}, `node "bare" has no provider ID (kind's nodes have kind://PROVIDER/CLUSTER/NODE)`},
		{"kind prefix, wrong shape", []corev1.Node{providerNode("n", "kind://docker/n")}, `node "n" has provider ID "kind://docker/n" (kind's nodes have kind://PROVIDER/CLUSTER/NODE)`},
		{"two kind clusters", append(slices.Clone(kind), providerNode("other-worker", "kind://docker/other/other-worker")),
			`its nodes belong to two kind clusters, "droprun" and "other" (node "other-worker")`},
	}
	for _, tc := range tests {
		if got := KindNodes(tc.nodes); got != tc.want {
			t.Errorf("%s: KindNodes = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestExistingByNodes: whether an existing cluster is kind is read from
// its nodes, not from the context's name; --allow-context still lets any
// cluster through, but never one that does not answer.
func TestExistingByNodes(t *testing.T) {
	kindNodes := []runtime.Object{
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "lab-control-plane"}, Spec: corev1.NodeSpec{ProviderID: "kind://docker/lab/lab-control-plane"}},
	}
	cloudNodes := []runtime.Object{
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "gke-pool-1"}, Spec: corev1.NodeSpec{ProviderID: "gce://proj/europe-west1-b/gke-pool-1"}},
	}
	forbidden := func() *fake.Clientset {
		c := fake.NewClientset()
		c.PrependReactor("list", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewForbidden(corev1.Resource("nodes"), "", errors.New("user cannot list nodes"))
		})
		return c
	}
	tests := []struct {
		name, context, allow string
		client               *fake.Clientset
		want                 string // "" = accepted
	}{
		{"kind-named, cloud nodes", "kind-tunnel", "", fake.NewClientset(cloudNodes...),
			`context "kind-tunnel" (server https://10.1.2.3:6443) is not a kind cluster: node "gke-pool-1" has provider ID "gce://proj/europe-west1-b/gke-pool-1"`},
		{"kind-named, cloud nodes, allowed", "kind-tunnel", "kind-tunnel", fake.NewClientset(cloudNodes...), ""},
		{"cloud nodes, another context allowed", "prod", "other", fake.NewClientset(cloudNodes...), "pass --allow-context prod"},
		{"any name, kind nodes", "lab", "", fake.NewClientset(kindNodes...), ""},
		{"no nodes", "kind-empty", "", fake.NewClientset(), "is not a kind cluster: it has no nodes; droprun deletes"},
		{"nodes forbidden", "team", "", forbidden(), "its nodes cannot be listed with these credentials (Forbidden), so nothing shows it is kind"},
		{"nodes forbidden, allowed", "team", "team", forbidden(), ""},
	}
	for _, tc := range tests {
		cl := &Cluster{Name: tc.context, Kubeconfig: "/k", Client: tc.client}
		err := checkExisting(t.Context(), cl, "https://10.1.2.3:6443", tc.allow)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, or(tc.want, "nil"))
		}
		if tc.want != "" && err != nil && !strings.Contains(err.Error(), "--allow-context "+tc.context) {
			t.Errorf("%s: the refusal does not say what to pass: %v", tc.name, err)
		}
	}
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// TestExistingOverHTTP: the whole path, kubeconfig to node list, against an
// API server stand-in on 127.0.0.1: a kind-* context whose nodes are not
// kind's is refused, one whose nodes are is accepted, and an API server
// that is down or hangs is named with what to check, within ctx.
func TestExistingOverHTTP(t *testing.T) {
	serve := func(nodes ...corev1.Node) *httptest.Server {
		return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/api/v1/nodes" {
				http.NotFound(w, r)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(&corev1.NodeList{TypeMeta: metav1.TypeMeta{Kind: "NodeList", APIVersion: "v1"}, Items: nodes})
		}))
	}
	cloud := serve(providerNode("ip-10-0-1-5", "aws:///eu-west-1a/i-0abc"))
	defer cloud.Close()
	if _, err := Existing(t.Context(), writeKubeconfig(t, cloud.URL), "", "", false); err == nil ||
		!strings.Contains(err.Error(), `context "kind-test" (server `+cloud.URL+`) is not a kind cluster: node "ip-10-0-1-5"`) {
		t.Errorf("kind-named context on cloud nodes: err = %v", err)
	}
	kind := serve(providerNode("test-control-plane", "kind://docker/test/test-control-plane"))
	defer kind.Close()
	if cl, err := Existing(t.Context(), writeKubeconfig(t, kind.URL), "", "", false); err != nil || cl.Name != "kind-test" {
		t.Errorf("kind nodes: %+v, %v", cl, err)
	}
	// Through its provider: recorded as existing, no node capability
	// (droprun does not enter an existing cluster's nodes, kind or not).
	cl, err := ExistingProvider{Kubeconfig: writeKubeconfig(t, kind.URL)}.Open(t.Context())
	if err != nil || cl.Provider != ProviderExisting || cl.Conntrack() != nil || cl.Exec() != nil || cl.Containers() != nil || cl.Images() != nil {
		t.Errorf("ExistingProvider.Open: %+v, %v; want provider %q and no node capability", cl, err, ProviderExisting)
	}
	if _, err := Existing(t.Context(), writeKubeconfig(t, kind.URL), "nope", "", false); err == nil || !strings.Contains(err.Error(), `no context "nope" (it has: kind-test)`) {
		t.Errorf("missing context: %v", err)
	}

	// Down: nothing listens on the port any more.
	down := serve()
	downURL := down.URL
	down.Close()
	_, err = Existing(t.Context(), writeKubeconfig(t, downURL), "", "kind-test", false)
	if err == nil || !strings.Contains(err.Error(), "cannot reach the API server "+downURL+` of context "kind-test"`) ||
		!strings.Contains(err.Error(), "kubectl --kubeconfig") {
		t.Errorf("API server down, context allowed: err = %v", err)
	}

	// Hangs: the request ends with ctx, and the error names the server.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
		}
	}()
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = Existing(ctx, writeKubeconfig(t, "http://"+l.Addr().String()), "", "", false)
	if err == nil || !strings.Contains(err.Error(), "cannot reach the API server http://"+l.Addr().String()) {
		t.Errorf("hanging API server: err = %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("a hanging API server held Existing for %s, past its context's 300ms", d)
	}
}

// TestCheckKubeconfig: a token file beside the kubeconfig is fine, one
// outside it or a credential plugin is refused unless trusted.
func TestCheckKubeconfig(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("token", "t\n")
	outside := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(outside, []byte("t\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	kc := func(user string) string {
		return "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: \"http://127.0.0.1:1\"}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\nusers: [{name: u, user: " + user + "}]\n"
	}
	beside := write("beside.kubeconfig", kc("{tokenFile: token}"))
	far := write("far.kubeconfig", kc("{tokenFile: "+outside+"}"))
	plugin := write("exec.kubeconfig", kc("{exec: {apiVersion: client.authentication.k8s.io/v1, command: /bin/true, interactiveMode: Never}}"))
	// A link beside the kubeconfig to a file outside it is outside.
	if err := os.Symlink(outside, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	linked := write("link.kubeconfig", kc("{tokenFile: link}"))
	if err := CheckKubeconfig(beside); err != nil {
		t.Errorf("a token file beside the kubeconfig: %v", err)
	}
	for _, p := range []string{far, plugin, linked} {
		if err := CheckKubeconfig(p); !errors.Is(err, ErrUntrustedKubeconfig) {
			t.Errorf("%s: %v, want ErrUntrustedKubeconfig", filepath.Base(p), err)
		}
		if _, _, err := connectExisting(p, "", false); !errors.Is(err, ErrUntrustedKubeconfig) {
			t.Errorf("%s, untrusted: connect = %v, want ErrUntrustedKubeconfig", filepath.Base(p), err)
		}
		if _, _, err := connectExisting(p, "", true); err != nil {
			t.Errorf("%s, trusted: connect = %v", filepath.Base(p), err)
		}
	}
}
