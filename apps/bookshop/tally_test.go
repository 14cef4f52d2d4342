package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// A request that ends after the seal is cut, not counted; one that starts
// after it is refused an answer; the sealed reading counts the first as in
// flight and neither as answered.
func TestTallySealCutsWhatItDoesNotCount(t *testing.T) {
	tl := newTally()
	started, release := make(chan struct{}), make(chan struct{})
	srv := httptest.NewServer(tl.wrap("version", true, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("slow") != "" {
			close(started)
			<-release
		}
		io.WriteString(w, "v1\n")
	})))
	defer srv.Close()

	if err := fetch(srv.URL); err != nil {
		t.Fatalf("before the seal: %v", err)
	}
	slow := make(chan error, 1)
	go func() { slow <- fetch(srv.URL + "?slow=1") }()
	<-started
	sealed := tl.read(true)
	close(release)
	if err := <-slow; err == nil {
		t.Error("a request answered after the seal reached the client")
	}
	if err := fetch(srv.URL); err == nil {
		t.Error("a request started after the seal was answered")
	}
	if sealed.total != 1 || sealed.byHandlerCode["version"]["200"] != 1 || sealed.inFlight != 1 || !sealed.sealed {
		t.Errorf("sealed reading %+v; want 1 answered, 1 in flight, sealed", sealed)
	}
	if later := tl.read(false); later.total != 1 || later.inFlight != 1 {
		t.Errorf("reading after the seal %+v; want the sealed counts unchanged", later)
	}
}

// /metrics exposes the tally under the names scrapers read, and the status
// code a handler wrote.
func TestTallyCollects(t *testing.T) {
	tl := newTally()
	h := tl.wrap("version", true, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/gone" {
			http.Error(w, "gone", http.StatusGone)
		}
	}))
	for _, path := range []string{"/", "/", "/gone"} {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, path, nil))
	}
	want := `
# HELP bookshop_http_requests_in_flight HTTP requests being served, not counting scrapes of /metrics.
# TYPE bookshop_http_requests_in_flight gauge
bookshop_http_requests_in_flight 0
# HELP bookshop_http_requests_total HTTP requests answered, by status code and handler.
# TYPE bookshop_http_requests_total counter
bookshop_http_requests_total{code="200",handler="version"} 2
bookshop_http_requests_total{code="410",handler="version"} 1
`
	if err := testutil.CollectAndCompare(tl, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
}

// fetch GETs url and reads the whole body.
func fetch(url string) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, err = io.ReadAll(resp.Body)
	return err
}
