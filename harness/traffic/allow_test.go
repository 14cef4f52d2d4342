package traffic

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestParseAllowTarget(t *testing.T) {
	tests := []struct {
		in   string
		want AllowTarget
		err  string
	}{
		{"shop.example.com", AllowTarget{Host: "shop.example.com"}, ""},
		{"Shop.Example.com:8080", AllowTarget{Host: "shop.example.com", Port: "8080"}, ""},
		{"203.0.113.7:80", AllowTarget{Host: "203.0.113.7", Port: "80"}, ""},
		{"[2001:db8::1]:443", AllowTarget{Host: "2001:db8::1", Port: "443"}, ""},
		{"[2001:db8::1]", AllowTarget{Host: "2001:db8::1"}, ""},
		{"", AllowTarget{}, "is empty"},
		{"http://shop.example.com", AllowTarget{}, "no scheme, path or user"},
		{"shop.example.com/api", AllowTarget{}, "no scheme, path or user"},
		{"shop.example.com:0", AllowTarget{}, `no port between 1 and 65535 (port "0")`},
		{"shop.example.com:080", AllowTarget{}, `no port between 1 and 65535`},
		{"shop.example.com:http", AllowTarget{}, `no port between 1 and 65535`},
		{"2001:db8::1", AllowTarget{}, "IPv6 address goes in brackets"},
		{":80", AllowTarget{}, "has no host"},
		{"127.0.0.1:30080", AllowTarget{}, "needs no permission"},
		{"localhost:30080", AllowTarget{}, "names loopback"},
		{"[::1]:30080", AllowTarget{}, "names loopback"},
		{"127.0.0.2", AllowTarget{}, "names loopback"},
		{"0.0.0.0:80", AllowTarget{}, "names loopback"},
	}
	for _, tc := range tests {
		got, err := ParseAllowTarget(tc.in)
		if tc.err == "" {
			if err != nil || got != tc.want {
				t.Errorf("ParseAllowTarget(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
			}
			if again, err := ParseAllowTarget(got.String()); err != nil || again != got {
				t.Errorf("ParseAllowTarget(%q.String() = %q) = %+v, %v", tc.in, got.String(), again, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "HOST:PORT") {
			t.Errorf("ParseAllowTarget(%q) = %+v, %v; want an error containing %q and the form to use", tc.in, got, err, tc.err)
		}
	}
}

// TestProbeClient: a probe keeps to its targets as an attack does: it
// refuses an unnamed host before sending anything, follows no redirect,
// and dials nothing but the targets' addresses.
func TestProbeClient(t *testing.T) {
	if _, _, err := ProbeClient([]Target{{URL: "http://shop.example.com/version"}}, nil, time.Second, ""); err == nil || !strings.Contains(err.Error(), "--allow-target shop.example.com:80") {
		t.Errorf("unnamed host: err = %v", err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://127.0.0.1:1/elsewhere", http.StatusFound)
	}))
	defer srv.Close()
	c, done, err := ProbeClient([]Target{{URL: srv.URL + "/version"}}, nil, time.Second, "")
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
