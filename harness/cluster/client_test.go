package cluster

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
)

// writeKubeconfig writes a kubeconfig whose kind-test context points at server.
func writeKubeconfig(t *testing.T, server string) string {
	t.Helper()
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	err := os.WriteFile(kc, []byte(`apiVersion: v1
kind: Config
current-context: kind-test
clusters:
- name: kind-test
  cluster: {server: "`+server+`"}
contexts:
- name: kind-test
  context: {cluster: kind-test, user: u}
users:
- name: u
  user: {token: x}
`), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	return kc
}

// captureStderr runs f with os.Stderr redirected and returns what was
// written to it.
func captureStderr(t *testing.T, f func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	saved := os.Stderr
	os.Stderr = w
	done := make(chan []byte)
	go func() { b, _ := io.ReadAll(r); done <- b }()
	func() {
		defer func() { os.Stderr = saved }()
		f()
	}()
	w.Close()
	return string(<-done)
}

// Both ways droprun builds a client (a kind cluster's, an existing one's)
// get its rate limit, not client-go's QPS 5.
func TestClientRateLimit(t *testing.T) {
	kc := writeKubeconfig(t, "https://127.0.0.1:40000")
	kind, err := clientFor(kc, "")
	if err != nil {
		t.Fatal(err)
	}
	existing, _, err := connectExisting(kc, "", true)
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]kubernetes.Interface{"kind": kind, "existing": existing.Client} {
		rl := c.CoreV1().RESTClient().GetRateLimiter()
		if rl == nil || rl.QPS() != ClientQPS {
			t.Errorf("%s client: rate limiter %v, want QPS %d", name, rl, ClientQPS)
		}
	}
}

// A line client-go logs (here an API warning, logged like its throttling
// notice through klog.FromContext) reaches the writer given to
// RouteClientLogs and not stderr; restore puts the previous writer back.
func TestRouteClientLogs(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Warning", `299 - "droprun test warning"`)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"kind":"Namespace","apiVersion":"v1","metadata":{"name":"droprun"}}`)
	}))
	defer srv.Close()
	client, err := clientFor(writeKubeconfig(t, srv.URL), "")
	if err != nil {
		t.Fatal(err)
	}

	var buf bytes.Buffer
	var restore func()
	stderr := captureStderr(t, func() {
		restore = RouteClientLogs(&buf)
		if _, err := client.CoreV1().Namespaces().Get(context.Background(), "droprun", metav1.GetOptions{}); err != nil {
			t.Errorf("get: %v", err)
		}
		klog.Warningf("watch of %s ended", "pods")
		klog.ErrorS(errors.New("boom"), "scrape failed")
		klog.V(3).Info("below klog's verbosity")
	})
	if stderr != "" {
		t.Errorf("stderr got %q, want nothing", stderr)
	}
	got := buf.String()
	for _, want := range []string{"droprun test warning", "watch of pods ended", `"scrape failed" err="boom"`} {
		if !strings.Contains(got, want) {
			t.Errorf("routed log lacks %q:\n%s", want, got)
		}
	}
	for _, line := range strings.Split(strings.TrimSuffix(got, "\n"), "\n") {
		if !strings.HasPrefix(line, clientLogPrefix) {
			t.Errorf("line %q lacks the %q prefix", line, clientLogPrefix)
		}
	}
	if strings.Contains(got, "below klog's verbosity") {
		t.Errorf("a V(3) line was written:\n%s", got)
	}

	restore()
	buf.Reset()
	stderr = captureStderr(t, func() { klog.Info("after restore") })
	if !strings.Contains(stderr, clientLogPrefix) || !strings.Contains(stderr, "after restore") || buf.Len() != 0 {
		t.Errorf("after restore: stderr %q, writer %q; want the line on stderr", stderr, buf.String())
	}
}
