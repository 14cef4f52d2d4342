package observe

import (
	"bytes"
	"context"
	"errors"
	"io"
	"maps"
	"os"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	restclient "k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"

	"github.com/droprun/droprun/harness/appmetrics"
)

// testdata/bookshop-metrics.txt is the /metrics of the real bookshop binary
// (go build ./apps/bookshop; --shutdown drain) after 5 GET and 1 POST
// /version, 2 GET /nope, 1 /healthz and 1 /metrics, then SIGTERM and one
// /readyz while draining. testdata/termination-message.json is the
// termination log that binary wrote in mode none after 3 /version, 1
// /nope, 1 /readyz, 1 /healthz and 1 /metrics, killed by SIGTERM with one
// /version?delay=5s in flight. Capture them again if the app's metrics
// change.

func equalCounts(a, b appmetrics.Counts) bool {
	return maps.EqualFunc(a, b, func(x, y map[string]int) bool { return maps.Equal(x, y) })
}

func TestParseBookshopMetrics(t *testing.T) {
	text, err := os.ReadFile("testdata/bookshop-metrics.txt")
	if err != nil {
		t.Fatal(err)
	}
	s, err := parseMetrics(text)
	if err != nil {
		t.Fatal(err)
	}
	want := appmetrics.Counts{
		"version": {"200": 6},
		"other":   {"404": 2},
		"healthz": {"200": 1},
		"metrics": {"200": 1},
		"readyz":  {"503": 1},
	}
	if !equalCounts(s.counts, want) || s.inFlight != 0 {
		t.Errorf("parsed %v, in flight %d; want %v, 0", s.counts, s.inFlight, want)
	}
	if s.counts.Total() != 11 || s.counts.Without(appmetrics.ProbeHandlers...).Total() != 8 || s.counts.Class(2) != 8 || s.counts.Class(4) != 2 {
		t.Errorf("total %d, answered %d, 2xx %d, 4xx %d; want 11, 8, 8, 2",
			s.counts.Total(), s.counts.Without(appmetrics.ProbeHandlers...).Total(), s.counts.Class(2), s.counts.Class(4))
	}
	if got := s.counts.ByCode(); !maps.Equal(got, map[string]int{"200": 8, "404": 2, "503": 1}) {
		t.Errorf("by code %v", got)
	}
}

func TestParseMetrics(t *testing.T) {
	// A bookshop that has answered nothing has no counter series yet.
	s, err := parseMetrics([]byte("# TYPE bookshop_http_requests_in_flight gauge\nbookshop_http_requests_in_flight 3\n"))
	if err != nil || s.counts.Total() != 0 || s.inFlight != 3 {
		t.Errorf("fresh app: %v, %d, %v; want no counts, 3 in flight", s.counts, s.inFlight, err)
	}
	// Without TYPE lines every sample is untyped; values are still read.
	s, err = parseMetrics([]byte(`bookshop_http_requests_total{handler="version",code="200"} 4` + "\n" +
		`bookshop_http_requests_total{handler="version",code="502"} 1e+00` + "\n"))
	if err != nil || !equalCounts(s.counts, appmetrics.Counts{"version": {"200": 4, "502": 1}}) {
		t.Errorf("untyped: %v, %v", s.counts, err)
	}
	if _, err := parseMetrics([]byte("<html>502 Bad Gateway</html>\n")); err == nil {
		t.Error("an HTML error page parsed as metrics")
	}
}

func TestParseTerminationMessage(t *testing.T) {
	b, err := os.ReadFile("testdata/termination-message.json")
	if err != nil {
		t.Fatal(err)
	}
	m, err := parseTerminationMessage(string(b))
	if err != nil {
		t.Fatal(err)
	}
	want := appmetrics.Counts{"version": {"200": 3}, "other": {"404": 1}, "readyz": {"200": 1}, "healthz": {"200": 1}, "metrics": {"200": 1}}
	if *m.Requests != 7 || m.InFlight != 1 || m.Exit != "killed" || m.Signal != "SIGTERM" ||
		!equalCounts(m.ByHandler, want) || !maps.Equal(m.ByCode, map[string]int{"200": 6, "404": 1}) {
		t.Errorf("parsed %+v", m)
	}
	if m.ByHandler.Total() != *m.Requests {
		t.Errorf("by handler sums to %d, requests %d", m.ByHandler.Total(), *m.Requests)
	}

	for _, bad := range []string{"Error: listen tcp :8080: bind: address already in use", `{"exit":"clean"}`} {
		if _, err := parseTerminationMessage(bad); err == nil {
			t.Errorf("%q parsed as bookshop's termination message", bad)
		}
	}
}

// fakeResponse is what a proxy reactor answers.
type fakeResponse struct {
	body []byte
	err  error
}

func (r fakeResponse) DoRaw(context.Context) ([]byte, error) { return r.body, r.err }
func (r fakeResponse) Stream(context.Context) (io.ReadCloser, error) {
	return io.NopCloser(bytes.NewReader(r.body)), r.err
}

// serveProxy makes client answer pod proxy GETs with respond.
func serveProxy(client *fake.Clientset, respond func(k8stesting.ProxyGetAction) ([]byte, error)) {
	client.AddProxyReactor("pods", func(a k8stesting.Action) (bool, restclient.ResponseWrapper, error) {
		b, err := respond(a.(k8stesting.ProxyGetAction))
		return true, fakeResponse{b, err}, nil
	})
}

func TestProxyScraper(t *testing.T) {
	client := fake.NewClientset()
	var got []string
	serveProxy(client, func(a k8stesting.ProxyGetAction) ([]byte, error) {
		got = append(got, strings.Join([]string{a.GetNamespace(), a.GetScheme(), a.GetName(), a.GetPort(), a.GetPath()}, " "))
		if a.GetName() == "web-dying" {
			return nil, errors.New("connection refused")
		}
		return []byte("bookshop_http_requests_total 1\n"), nil
	})
	s := ProxyScraper{Client: client, Port: 8080, Path: "/metrics"}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "droprun", Name: "web-1"}}
	b, err := s.Scrape(context.Background(), pod)
	if err != nil || string(b) != "bookshop_http_requests_total 1\n" {
		t.Errorf("scrape = %q, %v", b, err)
	}
	pod.Name = "web-dying"
	if _, err := s.Scrape(context.Background(), pod); err == nil || !strings.Contains(err.Error(), "droprun/web-dying:8080/metrics") {
		t.Errorf("scrape of a dying pod: %v, want an error naming it", err)
	}
	want := []string{"droprun http web-1 8080 /metrics", "droprun http web-dying 8080 /metrics"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("proxy requests %q, want %q", got, want)
	}
}

// stream is a pod-proxy response of n bytes of metrics text.
type stream struct{ n int64 }

func (s stream) DoRaw(context.Context) ([]byte, error) {
	return nil, errors.New("DoRaw reads it whole")
}
func (s stream) Stream(context.Context) (io.ReadCloser, error) {
	return io.NopCloser(io.LimitReader(repeat('#'), s.n)), nil
}

type repeat byte

func (r repeat) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(r)
	}
	return len(p), nil
}

// TestReadBounded: a scrape up to MaxScrape is read whole; one byte more
// is an error, read no further than the limit.
func TestReadBounded(t *testing.T) {
	b, err := readBounded(t.Context(), stream{MaxScrape})
	if err != nil || len(b) != MaxScrape {
		t.Fatalf("a scrape of exactly %d bytes: %d bytes, %v", MaxScrape, len(b), err)
	}
	if _, err := readBounded(t.Context(), stream{1 << 40}); err == nil || !strings.Contains(err.Error(), "exceed 16 MiB") {
		t.Errorf("an endless scrape: %v, want the limit's error", err)
	}
}
