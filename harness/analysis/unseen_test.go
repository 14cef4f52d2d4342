package analysis

import (
	"strings"
	"testing"
)

// TestUnseenHop: a run whose client sent beyond this machine (the user's
// own load balancer or ingress) says its per-hop times are unavailable,
// naming the host; one to 127.0.0.1 (droprun's own fronts) says nothing.
func TestUnseenHop(t *testing.T) {
	for _, u := range []string{"http://127.0.0.1:30081/version", "http://localhost:8080/", "http://[::1]:30080/", "", "::not a url"} {
		if got := unseenHop(u); got != "" {
			t.Errorf("unseenHop(%q) = %q, want nothing unseen", u, got)
		}
	}
	for _, u := range []string{"https://shop.example.com/version", "http://203.0.113.7:8080/"} {
		got := unseenHop(u)
		host := strings.TrimSuffix(strings.SplitN(strings.SplitN(u, "//", 2)[1], "/", 2)[0], "/")
		if !strings.HasPrefix(got, "per-hop times unavailable") || !strings.Contains(got, host) {
			t.Errorf("unseenHop(%q) = %q, want per-hop times unavailable, naming %s", u, got, host)
		}
	}
}
