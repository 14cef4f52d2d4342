package main

import (
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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

// The sealed tally is exact by construction: many handlers run at once, a
// seal comes at a random moment and then the process's connections close
// (as its death would close them). Over thousands of trials the sealed
// total equals the responses the clients received, every time.
func TestTallySealIsExact(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: thousands of sealed servers")
	}
	rng := rand.New(rand.NewPCG(5, 19))
	const trials, clients = 2000, 8
	for trial := range trials {
		tl := newTally()
		delays := make([]time.Duration, clients)
		for i := range delays {
			delays[i] = time.Duration(rng.IntN(2000)) * time.Microsecond
		}
		srv := httptest.NewServer(tl.wrap("version", true, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			i, _ := strconv.Atoi(r.URL.Query().Get("i"))
			time.Sleep(delays[i])
			io.WriteString(w, "v1\n")
		})))
		client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 5 * time.Second}
		var wg sync.WaitGroup
		var got atomic.Int64
		for i := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				resp, err := client.Get(srv.URL + "?i=" + strconv.Itoa(i))
				if err != nil {
					return
				}
				defer resp.Body.Close()
				if b, err := io.ReadAll(resp.Body); err == nil && resp.StatusCode == 200 && string(b) == "v1\n" {
					got.Add(1)
				}
			}()
		}
		time.Sleep(time.Duration(rng.IntN(3000)) * time.Microsecond)
		sealed := tl.read(true)
		if !tl.waitSent(time.Second) {
			t.Fatalf("trial %d: counted responses still unwritten after a second", trial)
		}
		srv.CloseClientConnections()
		wg.Wait()
		srv.Close()
		if int64(sealed.total) != got.Load() {
			t.Fatalf("trial %d: the sealed tally counts %d responses, the clients received %d", trial, sealed.total, got.Load())
		}
	}
}

// A counted response not yet written keeps the wait from succeeding (the
// process then writes "sealed": false); once written, it succeeds.
func TestTallyWaitSent(t *testing.T) {
	tl := newTally()
	if !tl.begin(true) || !tl.end(true, handlerCode{"version", "200"}) {
		t.Fatal("not counted")
	}
	tl.read(true)
	if tl.waitSent(10 * time.Millisecond) {
		t.Error("the wait succeeded with a counted response unwritten")
	}
	tl.written()
	if !tl.waitSent(10 * time.Millisecond) {
		t.Error("the wait failed with every counted response written")
	}
}

// A handler that writes nothing: the client gets net/http's empty 200, and
// the tally counts a 200.
func TestTallyEmptyHandler(t *testing.T) {
	tl := newTally()
	srv := httptest.NewServer(tl.wrap("version", true, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if r := tl.read(false); resp.StatusCode != 200 || r.byHandlerCode["version"]["200"] != 1 || r.inFlight != 0 {
		t.Errorf("client got %d; tally %+v", resp.StatusCode, r)
	}
}

// A handler that flushes (the gateway's proxy, for a response of unknown
// length) still sends nothing before it is counted: a seal while it runs
// cuts it whole.
func TestTallyFlushHoldsTheResponse(t *testing.T) {
	tl := newTally()
	flushed, release := make(chan struct{}), make(chan struct{})
	srv := httptest.NewServer(tl.wrap("proxy", true, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "partial")
		if err := http.NewResponseController(w).Flush(); err != nil {
			t.Errorf("flush: %v", err)
		}
		close(flushed)
		<-release
	})))
	defer srv.Close()
	got := make(chan error, 1)
	go func() {
		resp, err := http.Get(srv.URL)
		if err == nil {
			resp.Body.Close()
		}
		got <- err
	}()
	<-flushed
	tl.read(true)
	close(release)
	if err := <-got; err == nil {
		t.Error("the client got the headers of a response flushed before the seal and cut by it")
	}
}
