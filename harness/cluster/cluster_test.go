package cluster

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"sigs.k8s.io/kind/pkg/apis/config/v1alpha4"
	"sigs.k8s.io/yaml"
)

var testConfig = Config{Name: "t", Nodes: 3, KubeProxyMode: "nftables", NodeImage: "droprun/node:test", HostPort: 31080, GatewayHostPort: 31081}

func TestKindConfig(t *testing.T) {
	k := KindConfig(testConfig)
	if len(k.Nodes) != 3 || k.Nodes[0].Role != v1alpha4.ControlPlaneRole || k.Nodes[1].Role != v1alpha4.WorkerRole || k.Nodes[2].Role != v1alpha4.WorkerRole {
		t.Fatalf("nodes %+v", k.Nodes)
	}
	for i, n := range k.Nodes {
		if n.Image != "droprun/node:test" {
			t.Errorf("node %d image %q: every node must name the image or kind pulls its default", i, n.Image)
		}
	}
	// Every node maps a web and a gateway port: node k at +2k.
	for i, n := range k.Nodes {
		pm := n.ExtraPortMappings
		web, gw := int32(31080+2*i), int32(31081+2*i)
		if len(pm) != 2 || pm[0].HostPort != web || pm[0].ContainerPort != 30080 || pm[0].ListenAddress != "127.0.0.1" || pm[0].Protocol != v1alpha4.PortMappingProtocolTCP ||
			pm[1].HostPort != gw || pm[1].ContainerPort != 30081 || pm[1].ListenAddress != "127.0.0.1" {
			t.Errorf("node %d port mappings %+v, want 127.0.0.1:%d→30080 and 127.0.0.1:%d→30081", i, pm, web, gw)
		}
	}
	for i, n := range k.Nodes[1:] {
		if len(n.Labels) != 0 {
			t.Errorf("worker %d labels %v: only the control plane carries the config hash", i+1, n.Labels)
		}
	}
	if k.Networking.KubeProxyMode != "nftables" {
		t.Errorf("kube-proxy mode %q", k.Networking.KubeProxyMode)
	}
	if k.Nodes[0].Labels[LabelConfig] != testConfig.Hash() {
		t.Errorf("control plane labels %v", k.Nodes[0].Labels)
	}
	if len(k.KubeadmConfigPatches) != 2 || !strings.Contains(k.KubeadmConfigPatches[0], "failCgroupV1: false") || !strings.Contains(k.KubeadmConfigPatches[1], "metricsBindAddress: 0.0.0.0:10249") {
		t.Errorf("patches %v", k.KubeadmConfigPatches)
	}
	// kind reads the config as YAML: it must round-trip.
	y, err := yaml.Marshal(k)
	if err != nil || !strings.Contains(string(y), "apiVersion: kind.x-k8s.io/v1alpha4") {
		t.Errorf("yaml %s %v", y, err)
	}
	one := testConfig
	one.Nodes = 1
	if n := len(KindConfig(one).Nodes); n != 1 {
		t.Errorf("1-node config has %d nodes", n)
	}
}

// TestEntries: node k is named as kind names it and gets HostPort+2k and
// GatewayHostPort+2k.
func TestEntries(t *testing.T) {
	c := Config{Name: "droprun", Nodes: 4, HostPort: 30080, GatewayHostPort: 30081}
	want := []Entry{
		{"droprun-control-plane", 30080, 30081},
		{"droprun-worker", 30082, 30083},
		{"droprun-worker2", 30084, 30085},
		{"droprun-worker3", 30086, 30087},
	}
	if got := c.Entries(); !slices.Equal(got, want) {
		t.Errorf("Entries() = %+v\nwant %+v", got, want)
	}
	c.Nodes = 1
	if got := c.Entries(); len(got) != 1 || got[0] != want[0] {
		t.Errorf("1 node: %+v", got)
	}
	if got := (Config{}).Entries(); len(got) != 0 {
		t.Errorf("0 nodes: %+v", got)
	}
}

// TestNodeName: the names kind gives (its namer in
// pkg/cluster/internal/providers/common numbers a role's second node 2).
func TestNodeName(t *testing.T) {
	for k, want := range map[int]string{0: "t-control-plane", 1: "t-worker", 2: "t-worker2", 10: "t-worker10"} {
		if got := NodeName("t", k); got != want {
			t.Errorf("NodeName(t, %d) = %q, want %q", k, got, want)
		}
	}
}

func TestString(t *testing.T) {
	got := testConfig.String()
	for _, want := range []string{`"t": 3 node(s)`, "127.0.0.1:31080,31082,31084→30080 (web)", "127.0.0.1:31081,31083,31085→30081 (gateway)"} {
		if !strings.Contains(got, want) {
			t.Errorf("String() = %q, want it to contain %q", got, want)
		}
	}
}

func TestHashChangesWithConfig(t *testing.T) {
	other := testConfig
	other.Nodes = 2
	if testConfig.Hash() == other.Hash() {
		t.Error("different node counts gave the same hash")
	}
	other = testConfig
	other.GatewayHostPort = 31091
	if testConfig.Hash() == other.Hash() {
		t.Error("different host ports gave the same hash")
	}
	if testConfig.Hash() != testConfig.Hash() || len(testConfig.Hash()) != 16 {
		t.Error("hash is not stable")
	}
	// A cluster from before every node had host ports (only the control
	// plane mapped them) carried the hash of the bare Config: it must
	// not match, or that cluster would be reused.
	b, _ := json.Marshal(testConfig)
	sum := sha256.Sum256(b)
	if old := hex.EncodeToString(sum[:])[:16]; testConfig.Hash() == old {
		t.Error("the hash is the one of the single-mapping layout")
	}
}

func labelled(name, hash string) *corev1.Node {
	n := node(name, corev1.ConditionTrue)
	if hash != "" {
		n.Labels = map[string]string{LabelConfig: hash}
	}
	return n
}

// TestCheckMatches: a cluster is reused only with the same config hash, node
// count and node names.
func TestCheckMatches(t *testing.T) {
	c := Config{Name: "t", Nodes: 2, KubeProxyMode: "iptables", NodeImage: "droprun/node:test", HostPort: 30080, GatewayHostPort: 30081}
	tests := []struct {
		name  string
		nodes []runtime.Object
		want  string // "" = matches
	}{
		{"same", []runtime.Object{labelled("t-control-plane", c.Hash()), labelled("t-worker", "")}, ""},
		{"old hash", []runtime.Object{labelled("t-control-plane", "0123456789abcdef"), labelled("t-worker", "")}, `config "0123456789abcdef"`},
		{"node count", []runtime.Object{labelled("t-control-plane", c.Hash())}, "(1 nodes"},
		{"node names", []runtime.Object{labelled("t-control-plane", c.Hash()), labelled("other", "")}, "no node named t-worker"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := checkMatches(t.Context(), fake.NewClientset(tc.nodes...), c)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "droprun cluster down --name t") {
				t.Errorf("err = %v, want it to contain %q and the fix", err, tc.want)
			}
		})
	}
}

func node(name string, ready corev1.ConditionStatus) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Status:     corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready, Reason: "KubeletNotReady", Message: "cni not initialized"}}},
	}
}

// TestWaitNodesReady: the wait returns once every node turns Ready, not
// when the first one does.
func TestWaitNodesReady(t *testing.T) {
	client := fake.NewClientset(node("cp", corev1.ConditionTrue), node("w1", corev1.ConditionFalse))
	lists := 0
	client.PrependReactor("list", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
		lists++
		if lists == 2 {
			n := node("w1", corev1.ConditionTrue)
			if _, err := client.Tracker().Get(corev1.SchemeGroupVersion.WithResource("nodes"), "", "w1"); err == nil {
				_ = client.Tracker().Update(corev1.SchemeGroupVersion.WithResource("nodes"), n, "")
			}
		}
		return false, nil, nil
	})
	if err := WaitNodesReady(context.Background(), client, 2, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if lists < 2 {
		t.Errorf("returned after %d list(s), before w1 was Ready", lists)
	}
}

func TestWaitNodesReadyTimeoutNamesTheNode(t *testing.T) {
	client := fake.NewClientset(node("cp", corev1.ConditionTrue), node("w1", corev1.ConditionFalse))
	err := WaitNodesReady(context.Background(), client, 2, 1500*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "w1 (KubeletNotReady: cni not initialized)") {
		t.Fatalf("err = %v", err)
	}
	err = WaitNodesReady(context.Background(), client, 3, 1500*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "2 of 3 nodes registered") {
		t.Fatalf("err = %v", err)
	}
}

func TestPortFree(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	if err := portFree(port); err == nil || !strings.Contains(err.Error(), "is taken") {
		t.Errorf("held port: %v", err)
	}
	l.Close()
	if err := portFree(port); err != nil {
		t.Errorf("released port: %v", err)
	}
}

func TestParseConntrackDeleted(t *testing.T) {
	for in, want := range map[string]int{
		"conntrack v1.4.7 (conntrack-tools): 375 flow entries have been deleted.\n": 375,
		"conntrack v1.4.7 (conntrack-tools): 0 flow entries have been deleted.\n":   0,
	} {
		if got, ok := parseConntrackDeleted(in); !ok || got != want {
			t.Errorf("%q: got %d %v", in, got, ok)
		}
	}
	if _, ok := parseConntrackDeleted("conntrack: command not found"); ok {
		t.Error("parsed an error as a count")
	}
}

// TestCheckOwned: a kind cluster is droprun's when a node carries
// LabelConfig; one without it, or one whose API fails, is not shown to be
// and is refused (cluster down needs --force).
func TestCheckOwned(t *testing.T) {
	ctx := context.Background()
	if err := checkOwned(ctx, fake.NewClientset(labelled("t-control-plane", "abc"), labelled("t-worker", "")), "t"); err != nil {
		t.Errorf("droprun's cluster: %v, want nil", err)
	}
	err := checkOwned(ctx, fake.NewClientset(labelled("t-control-plane", ""), labelled("t-worker", "")), "t")
	if !errors.Is(err, ErrNotDroprun) || !strings.Contains(err.Error(), LabelConfig) {
		t.Errorf("a cluster without the label: %v, want ErrNotDroprun naming %s", err, LabelConfig)
	}
	broken := fake.NewClientset()
	broken.PrependReactor("list", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("connection refused")
	})
	if err := checkOwned(ctx, broken, "t"); !errors.Is(err, ErrNotDroprun) || !strings.Contains(err.Error(), "does not answer") {
		t.Errorf("a cluster whose API fails: %v, want ErrNotDroprun saying it does not answer", err)
	}
}
