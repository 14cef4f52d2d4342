package testbed

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"

	"github.com/droprun/droprun/harness/cluster"
	"github.com/droprun/droprun/harness/path"
	"github.com/droprun/droprun/harness/scenario"
	"github.com/droprun/droprun/harness/traffic"
)

func testScenario(t *testing.T, target string) *scenario.Scenario {
	t.Helper()
	sc := &scenario.Scenario{APIVersion: scenario.APIVersion, Kind: scenario.Kind, Metadata: scenario.Metadata{Name: "t"},
		Variants: []scenario.Variant{{Variant: "no-prestop"}}, Traffic: scenario.Traffic{Target: target}}
	sc.Default()
	if errs := sc.Validate(); len(errs) > 0 {
		t.Fatal(errs)
	}
	return sc
}

// TestTargetsKind: one target per node, control plane first, on the web or
// the gateway ports per the scenario's target.
func TestTargetsKind(t *testing.T) {
	for _, tc := range []struct {
		target string
		want   []traffic.Target
	}{
		{path.NodePort.Name, []traffic.Target{
			{Node: "droprun-control-plane", URL: "http://127.0.0.1:30080/version"},
			{Node: "droprun-worker", URL: "http://127.0.0.1:30082/version"},
			{Node: "droprun-worker2", URL: "http://127.0.0.1:30084/version"},
		}},
		{path.Gateway.Name, []traffic.Target{
			{Node: "droprun-control-plane", URL: "http://127.0.0.1:30081/version"},
			{Node: "droprun-worker", URL: "http://127.0.0.1:30083/version"},
			{Node: "droprun-worker2", URL: "http://127.0.0.1:30085/version"},
		}},
	} {
		sc := testScenario(t, tc.target)
		cfg := KindConfig(sc.Cluster.Kind)
		tb := &Testbed{Scenario: sc, Entries: cfg.Entries()}
		got := tb.Targets()
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: Targets() = %+v\nwant %+v", tc.target, got, tc.want)
		}
		if tb.TargetURL() != tc.want[0].URL {
			t.Errorf("%s: TargetURL() = %q, want the first target's", tc.target, tb.TargetURL())
		}
		if err := (traffic.Config{Targets: got, Rate: 1}).Validate(); err != nil {
			t.Errorf("%s: traffic refuses the targets: %v", tc.target, err)
		}
	}
}

// TestTargetsExisting: an existing cluster has one target, the user's URL,
// with no node name.
func TestTargetsExisting(t *testing.T) {
	sc := testScenario(t, path.NodePort.Name)
	tb := &Testbed{Scenario: sc, URL: "http://127.0.0.1:31000"}
	if got, want := tb.Targets(), []traffic.Target{{URL: "http://127.0.0.1:31000/version"}}; !slices.Equal(got, want) {
		t.Errorf("Targets() = %+v, want %+v", got, want)
	}
	tb.Scenario = testScenario(t, path.Gateway.Name)
	if got := tb.TargetURL(); got != "http://127.0.0.1:30081/version" {
		t.Errorf("gateway TargetURL() = %q", got)
	}
}

func port(t *testing.T, srv *httptest.Server) int {
	t.Helper()
	_, p, err := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.Atoi(p)
	return n
}

// TestWaitAnsweringWaitsForEveryNode: it returns once every node's host
// port has answered 200, not when the first one does.
func TestWaitAnsweringWaitsForEveryNode(t *testing.T) {
	cp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Bookshop-Pod", "web-a")
		w.Write([]byte(`{"pod":"web-a","version":"v1"}`))
	}))
	defer cp.Close()
	var calls atomic.Int32
	worker := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) < 3 {
			http.Error(w, "not yet", http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte(`{"pod":"web-b","version":"v1"}`))
	}))
	defer worker.Close()
	sc := testScenario(t, path.NodePort.Name)
	tb := &Testbed{Scenario: sc, Entries: []cluster.Entry{
		{Node: "t-control-plane", WebPort: port(t, cp)},
		{Node: "t-worker", WebPort: port(t, worker)},
	}}
	a, err := tb.WaitAnswering(t.Context(), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if a.Pod != "web-a" || a.Version != "v1" {
		t.Errorf("answer %+v, want the control plane's", a)
	}
	if n := calls.Load(); n < 3 {
		t.Errorf("returned after %d request(s) to the worker, before it answered 200", n)
	}

	// A node that never answers is named, with why.
	dead := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no", http.StatusBadGateway)
	}))
	defer dead.Close()
	tb.Entries = append(tb.Entries, cluster.Entry{Node: "t-worker2", WebPort: port(t, dead)})
	_, err = tb.WaitAnswering(t.Context(), 600*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "1 of 3 target(s)") || !strings.Contains(err.Error(), "(node t-worker2): status 502") {
		t.Errorf("err = %v", err)
	}
}

// proxyAnswer is a fake API server's answer to a service proxy request.
type proxyAnswer struct {
	body []byte
	err  error
}

func (p proxyAnswer) DoRaw(context.Context) ([]byte, error)         { return p.body, p.err }
func (p proxyAnswer) Stream(context.Context) (io.ReadCloser, error) { return nil, p.err }

// TestWaitAnsweringInside: on an existing cluster whose load comes from
// generator pods, the Service is awaited through the API server's service
// proxy (this machine may not reach it), until it answers; one that never
// does is named with the last error.
func TestWaitAnsweringInside(t *testing.T) {
	sc := &scenario.Scenario{APIVersion: scenario.APIVersion, Kind: scenario.Kind, Metadata: scenario.Metadata{Name: "t"},
		Cluster:  scenario.Cluster{Existing: &scenario.ExistingCluster{Kubeconfig: "/dev/null"}},
		Variants: []scenario.Variant{{Variant: "no-prestop"}}, Traffic: scenario.Traffic{Target: path.ClusterIP.Name,
			Generators: &scenario.Generators{From: scenario.FromPods, Count: 3, Image: "reg.example/droprun-generator:abc"}}}
	sc.Default()
	c := fake.NewClientset()
	var calls atomic.Int32
	c.AddProxyReactor("services", func(a k8stesting.Action) (bool, rest.ResponseWrapper, error) {
		g := a.(k8stesting.ProxyGetAction)
		if g.GetName() != "web" || g.GetPort() != "80" || g.GetPath() != sc.Traffic.Path {
			return true, proxyAnswer{err: fmt.Errorf("proxied to %s:%s%s", g.GetName(), g.GetPort(), g.GetPath())}, nil
		}
		if calls.Add(1) < 3 {
			return true, proxyAnswer{err: errors.New("the server is currently unable to handle the request")}, nil
		}
		return true, proxyAnswer{body: []byte(`{"pod":"web-a","version":"v1"}`)}, nil
	})
	tb := &Testbed{Scenario: sc, Cluster: &cluster.Cluster{Client: c}}
	a, err := tb.WaitAnswering(t.Context(), 10*time.Second)
	if err != nil || a.Pod != "web-a" || calls.Load() != 3 {
		t.Fatalf("answer %+v, %v after %d asks; want web-a's on the third", a, err, calls.Load())
	}
	calls.Store(-1 << 20) // never answers now
	_, err = tb.WaitAnswering(t.Context(), 600*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "did not answer") || !strings.Contains(err.Error(), "unable to handle the request") {
		t.Errorf("err = %v", err)
	}
}
