package attack

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/droprun/droprun/harness/traffic"
)

// TestProbeClient: a probe keeps to its targets as an attack does: it
// refuses an unnamed host before sending anything, follows no redirect,
// and dials nothing but the targets' addresses.
func TestProbeClient(t *testing.T) {
	if _, _, err := ProbeClient([]traffic.Target{{URL: "http://shop.example.com/version"}}, nil, time.Second, ""); err == nil || !strings.Contains(err.Error(), "--allow-target shop.example.com:80") {
		t.Errorf("unnamed host: err = %v", err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://127.0.0.1:1/elsewhere", http.StatusFound)
	}))
	defer srv.Close()
	c, done, err := ProbeClient([]traffic.Target{{URL: srv.URL + "/version"}}, nil, time.Second, "")
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	resp, err := c.Get(srv.URL + "/version")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		t.Errorf("status %d, want the redirect itself (302), not where it points", resp.StatusCode)
	}
	if _, err := c.Get("http://127.0.0.1:1/elsewhere"); err == nil || !strings.Contains(err.Error(), "refusing to dial") {
		t.Errorf("GET of an address that is no target: err = %v, want the dialer's refusal", err)
	}
}
