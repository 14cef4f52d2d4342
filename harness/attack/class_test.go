package attack

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/droprun/droprun/harness/traffic"
)

// rawServer serves 127.0.0.1 with handle, one goroutine per connection.
// quit is closed when the test ends, for handlers that stall.
func rawServer(t *testing.T, handle func(c *net.TCPConn, quit <-chan struct{})) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() { handle(c.(*net.TCPConn), quit) })
		}
	})
	t.Cleanup(func() {
		close(quit)
		ln.Close()
		wg.Wait()
	})
	return "http://" + ln.Addr().String() + "/"
}

// readRequest reads one request's headers off c.
func readRequest(c net.Conn) {
	_, _ = http.ReadRequest(bufio.NewReader(c))
}

// statusServer answers every request with code, stamped with a pod header.
func statusServer(t *testing.T, code int) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(traffic.PodHeader, "pod-a")
		w.WriteHeader(code)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/"
}

// TestClassifyRealFailures drives the classifier with the errors Go and
// vegeta actually produce, from local servers that refuse, reset, close and
// stall, through a real attack.
func TestClassifyRealFailures(t *testing.T) {
	tests := []struct {
		name    string
		url     func(t *testing.T) string
		timeout time.Duration
		want    traffic.Class
	}{
		{"nothing listening", func(t *testing.T) string {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			ln.Close()
			return "http://" + ln.Addr().String() + "/"
		}, 0, traffic.ClassRefused},
		{"accept then close with SO_LINGER 0", func(t *testing.T) string {
			return rawServer(t, func(c *net.TCPConn, _ <-chan struct{}) {
				_ = c.SetLinger(0)
				c.Close()
			})
		}, 0, traffic.ClassReset},
		{"read the request then close", func(t *testing.T) string {
			return rawServer(t, func(c *net.TCPConn, _ <-chan struct{}) {
				readRequest(c)
				c.Close()
			})
		}, 0, traffic.ClassEOF},
		{"read the request then never answer", func(t *testing.T) string {
			return rawServer(t, func(c *net.TCPConn, quit <-chan struct{}) {
				readRequest(c)
				<-quit
				c.Close()
			})
		}, 150 * time.Millisecond, traffic.ClassTimeout},
		{"200", func(t *testing.T) string { return statusServer(t, 200) }, 0, traffic.Class2xx},
		{"404", func(t *testing.T) string { return statusServer(t, 404) }, 0, traffic.Class4xx},
		{"500", func(t *testing.T) string { return statusServer(t, 500) }, 0, traffic.Class5xxOther},
		{"502", func(t *testing.T) string { return statusServer(t, 502) }, 0, traffic.Class502},
		{"503", func(t *testing.T) string { return statusServer(t, 503) }, 0, traffic.Class503},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := traffic.Config{URL: tt.url(t), Rate: 50, Timeout: tt.timeout, Name: "classify"}
			recs, stats, _ := attackUntil(t, cfg, 3)
			if stats.ByClass[tt.want] != stats.Requests {
				t.Errorf("ByClass = %v, want all %d requests in %s", stats.ByClass, stats.Requests, tt.want)
			}
			for _, r := range recs {
				if r.Class != tt.want {
					t.Errorf("seq %d: class %s, want %s (code %d, error %q)", r.Seq, r.Class, tt.want, r.Code, r.Error)
				}
				if tt.want.Failed() != (r.Error != "") {
					t.Errorf("seq %d: class %s with error text %q", r.Seq, r.Class, r.Error)
				}
			}
			t.Logf("%s: code %d, error %q", tt.want, recs[0].Code, recs[0].Error)
		})
	}
}

func TestRedirectsAreNotFollowed(t *testing.T) {
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("the client followed a redirect to %s", r.URL)
	}))
	defer other.Close()
	src := httptest.NewServer(http.RedirectHandler(other.URL+"/", http.StatusFound))
	defer src.Close()

	recs, stats, _ := attackUntil(t, traffic.Config{URL: src.URL + "/", Rate: 50}, 2)
	for _, r := range recs {
		if r.Code != http.StatusFound || r.Class != traffic.ClassOther {
			t.Errorf("seq %d: code %d class %s error %q, want 302 %s", r.Seq, r.Code, r.Class, r.Error, traffic.ClassOther)
		}
	}
	if stats.ByClass[traffic.ClassOther] != stats.Requests {
		t.Errorf("ByClass = %v", stats.ByClass)
	}
}

func TestGuardDialRefusesOtherAddresses(t *testing.T) {
	called := 0
	dial := guardDial(func(context.Context, string, string) (net.Conn, error) {
		called++
		return nil, nil
	}, []string{"127.0.0.1:30080", "127.0.0.1:30082"})
	for _, addr := range []string{"10.0.0.1:30080", "127.0.0.1:30081", "127.0.0.1:30084", "example.com:80", "[::1]:30080"} {
		_, err := dial(t.Context(), "tcp", addr)
		if err == nil || !strings.Contains(err.Error(), "refusing to dial") || !strings.Contains(err.Error(), "only connects to 127.0.0.1:30080, 127.0.0.1:30082") {
			t.Errorf("dial %s: err = %v, want a refusal naming the allowed addresses", addr, err)
		}
	}
	for _, addr := range []string{"127.0.0.1:30080", "127.0.0.1:30082"} {
		if _, err := dial(t.Context(), "tcp", addr); err != nil {
			t.Errorf("dial of the allowed address %s: %v", addr, err)
		}
	}
	if called != 2 {
		t.Errorf("underlying dial called %d times, want 2 (only for the allowed addresses)", called)
	}
}
