package attack

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/droprun/droprun/harness/traffic"
	"github.com/droprun/droprun/internal/citest"
)

// guard bounds every wait in these tests; nothing waits for it to pass.
const guard = 15 * time.Second

// wait fails the test if ch is not closed within guard.
func wait(t testing.TB, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(guard):
		t.Fatalf("timed out after %s waiting for %s", guard, what)
	}
}

// attackUntil runs an attack until n results have been observed, stops it,
// and returns every observed record, the stats and the results file.
func attackUntil(t *testing.T, cfg traffic.Config, n int) ([]traffic.Record, traffic.Stats, []byte) {
	t.Helper()
	return attackWith(t, cfg, n, (&net.Dialer{}).DialContext)
}

// attackWith is attackUntil with the client's connections dialed by dial.
func attackWith(t *testing.T, cfg traffic.Config, n int, dial dialFunc) ([]traffic.Record, traffic.Stats, []byte) {
	t.Helper()
	var (
		buf    bytes.Buffer
		got    []traffic.Record
		enough = make(chan struct{})
	)
	a, err := start(t.Context(), cfg, &buf, func(r traffic.Record) {
		got = append(got, r)
		if len(got) == n {
			close(enough)
		}
	}, dial)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-enough:
	case <-time.After(guard):
		a.Stop()
		t.Fatalf("fewer than %d results after %s", n, guard)
	}
	stats, err := a.Stop()
	if err != nil {
		t.Fatal(err)
	}
	if uint64(len(got)) != stats.Requests {
		t.Fatalf("observed %d results, Stats.Requests = %d", len(got), stats.Requests)
	}
	return got, stats, buf.Bytes()
}

// sameRecord compares records, times by instant (a decoded time has no
// monotonic reading).
func sameRecord(a, b traffic.Record) bool {
	return a.Seq == b.Seq && a.Time.Equal(b.Time) && a.Latency == b.Latency && a.Code == b.Code &&
		a.Class == b.Class && a.Error == b.Error && a.Pod == b.Pod && a.URL == b.URL &&
		a.Hidden == b.Hidden && a.HiddenError == b.HiddenError && a.Retries == b.Retries
}

func TestAttackRecordsEveryResult(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(traffic.PodHeader, "pod-a")
		w.Header().Set("X-Bookshop-Version", "v1")
		w.Header().Set("X-Other", "dropped")
		io.WriteString(w, `{"pod":"pod-a","version":"v1"}`)
	}))
	defer srv.Close()

	const rate = 200
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	var (
		buf      bytes.Buffer
		observed []traffic.Record
	)
	a, err := Start(ctx, traffic.Config{URL: srv.URL + "/version", Rate: rate, Name: "records"}, &buf, func(r traffic.Record) {
		observed = append(observed, r)
	})
	if err != nil {
		t.Fatal(err)
	}
	wait(t, a.Done(), "the attack to end with its context")
	stats, err := a.Stop()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("stats: %+v", stats)

	if got := math.Abs(stats.AchievedRate-rate) / rate; got > 0.10 {
		t.Errorf("achieved %.1f req/s, asked %d: off by %.0f%%", stats.AchievedRate, rate, 100*got)
	}
	if stats.Requests < rate/2 {
		t.Fatalf("only %d requests in a 1s attack at %d/s", stats.Requests, rate)
	}
	var sum uint64
	for _, c := range traffic.Classes() {
		n, ok := stats.ByClass[c]
		if !ok {
			t.Errorf("ByClass lacks %s", c)
		}
		sum += n
	}
	if sum != stats.Requests || len(stats.ByClass) != len(traffic.Classes()) {
		t.Errorf("ByClass %v sums to %d, Requests = %d", stats.ByClass, sum, stats.Requests)
	}
	if stats.ByClass[traffic.Class2xx] != stats.Requests {
		t.Errorf("ByClass = %v, want every request 2xx", stats.ByClass)
	}
	if stats.WorkersExhausted || stats.PeakInFlight >= stats.MaxWorkers {
		t.Errorf("workers exhausted (peak %d of %d) against a fast local server", stats.PeakInFlight, stats.MaxWorkers)
	}
	if stats.MaxWorkers != 800 { // 2 × 200/s × 2s
		t.Errorf("MaxWorkers = %d, want 800", stats.MaxWorkers)
	}

	// The file holds exactly what was observed, in the same order.
	var decoded []traffic.Record
	if err := traffic.ReadResults(bytes.NewReader(buf.Bytes()), func(r traffic.Record) error {
		decoded = append(decoded, r)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if uint64(len(decoded)) != stats.Requests {
		t.Fatalf("file has %d results, Stats.Requests = %d", len(decoded), stats.Requests)
	}
	seen := make(map[uint64]bool)
	for i, r := range decoded {
		if !sameRecord(r, observed[i]) {
			t.Fatalf("result %d: file %+v, observed %+v", i, r, observed[i])
		}
		if r.Pod != "pod-a" || r.URL != srv.URL+"/version" {
			t.Fatalf("result %d: Pod = %q, URL = %q; want pod-a, %s/version", i, r.Pod, r.URL, srv.URL)
		}
		if seen[r.Seq] {
			t.Fatalf("result %d: duplicate seq %d", i, r.Seq)
		}
		seen[r.Seq] = true
	}

	// vegeta's own tools read the file: its decoder and its metrics.
	dec := vegeta.DecoderFor(bytes.NewReader(buf.Bytes()))
	if dec == nil {
		t.Fatal("vegeta.DecoderFor does not recognise the file")
	}
	var m vegeta.Metrics
	for {
		var res vegeta.Result
		if err := dec.Decode(&res); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if res.Method != "GET" || res.Attack != "records" || len(res.Body) != 0 {
			t.Fatalf("result %d: method %q attack %q body %q", res.Seq, res.Method, res.Attack, res.Body)
		}
		if _, ok := res.Headers["X-Other"]; ok || res.Headers.Get("X-Bookshop-Version") != "v1" {
			t.Fatalf("result %d: headers %v, want only X-Bookshop-*", res.Seq, res.Headers)
		}
		m.Add(&res)
	}
	m.Close()
	if m.Requests != stats.Requests || m.Success != 1 {
		t.Errorf("vegeta metrics: %d requests, success %.3f; want %d, 1", m.Requests, m.Success, stats.Requests)
	}

	again, err := a.Stop()
	if err != nil || again.Requests != stats.Requests || again.End != stats.End {
		t.Errorf("second Stop: %+v, %v", again, err)
	}
}

// failingWriter accepts limit bytes, then fails.
type failingWriter struct{ limit int }

var errDiskFull = errors.New("disk full")

func (w *failingWriter) Write(p []byte) (int, error) {
	if len(p) > w.limit {
		n := w.limit
		w.limit = 0
		return n, errDiskFull
	}
	w.limit -= len(p)
	return len(p), nil
}

func TestWriteErrorStopsTheAttack(t *testing.T) {
	// A failure keeps its body, so each result is ~1 KiB and the 64 KiB
	// buffer overflows after ~60 results.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, strings.Repeat("x", traffic.MaxBody), http.StatusInternalServerError)
	}))
	defer srv.Close()
	var observed atomic.Uint64
	a, err := Start(t.Context(), traffic.Config{URL: srv.URL + "/", Rate: 500}, &failingWriter{limit: 1000}, func(traffic.Record) {
		observed.Add(1)
	})
	if err != nil {
		t.Fatal(err)
	}
	wait(t, a.Done(), "the attack to stop itself after a write error")
	stats, err := a.Stop()
	if !errors.Is(err, errDiskFull) {
		t.Fatalf("Stop error = %v, want %v", err, errDiskFull)
	}
	if stats.Requests == 0 || observed.Load() != stats.Requests || stats.ByClass[traffic.Class5xxOther] != stats.Requests {
		t.Errorf("after a write error: %d requests, %d observed, by class %v", stats.Requests, observed.Load(), stats.ByClass)
	}
}

func TestKeepAliveAndMethod(t *testing.T) {
	tests := []struct {
		keepAlive bool
		method    string // traffic.Config.Method
		want      string // what the server sees
	}{
		{false, "", "GET"},
		{true, "", "GET"},
		{true, "POST", "POST"},
		{false, "HEAD", "HEAD"},
	}
	for _, tt := range tests {
		name := map[bool]string{false: "new connection per request", true: "keep-alive"}[tt.keepAlive] + ", " + tt.want
		t.Run(name, func(t *testing.T) {
			var mu sync.Mutex
			methods := map[string]uint64{}
			var closes, conns atomic.Uint64
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				methods[r.Method]++
				mu.Unlock()
				if r.Close {
					closes.Add(1)
				}
			}))
			srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
				if s == http.StateNew {
					conns.Add(1)
				}
			}
			srv.Start()
			defer srv.Close()

			_, stats, _ := attackUntil(t, traffic.Config{URL: srv.URL + "/", Rate: 100, Protocol: traffic.HTTP1(tt.keepAlive), Method: tt.method}, 20)
			n := stats.Requests
			if stats.ByClass[traffic.Class2xx] != n {
				t.Fatalf("ByClass = %v", stats.ByClass)
			}
			mu.Lock()
			defer mu.Unlock()
			if methods[tt.want] != n || len(methods) != 1 {
				t.Errorf("server saw %v for %d requests, want all %s", methods, n, tt.want)
			}
			if tt.keepAlive {
				if conns.Load() >= n {
					t.Errorf("%d connections for %d kept-alive requests, want reuse", conns.Load(), n)
				}
			} else if conns.Load() != n || closes.Load() != n {
				t.Errorf("%d connections and %d Connection: close for %d requests, want one new connection each", conns.Load(), closes.Load(), n)
			}
			if stats.Retried != 0 || stats.Masked != 0 {
				t.Errorf("a healthy server: Retried %d, Masked %d, want 0", stats.Retried, stats.Masked)
			}
		})
	}
}

// TestNetHTTPRetriesKeptAliveGET pins the net/http behaviour that hidden
// retries are about: a server that resets a connection when a second
// request arrives on it fails the POST (written, not idempotent), while
// net/http silently retries the GET on a new connection.
func TestNetHTTPRetriesKeptAliveGET(t *testing.T) {
	url := resettingServer(t, 2)
	for _, method := range []string{"GET", "POST"} {
		// A fresh client per method: no connection carries over.
		client := &http.Client{Transport: &http.Transport{}, Timeout: 5 * time.Second}
		defer client.CloseIdleConnections()
		var errs []error
		for range 2 {
			req, _ := http.NewRequest(method, url, nil)
			resp, err := client.Do(req)
			if err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			errs = append(errs, err)
		}
		switch method {
		case "GET":
			if errs[0] != nil || errs[1] != nil {
				t.Errorf("GET: %v; net/http no longer retries kept-alive GETs: revisit the hidden-retry tests", errs)
			}
		case "POST":
			if errs[0] != nil || errs[1] == nil {
				t.Fatalf("POST: %v, want the second to fail", errs)
			}
			if c := traffic.Classify(0, errs[1].Error()); c != traffic.ClassReset && c != traffic.ClassEOF && c != traffic.ClassIdleClosed {
				t.Errorf("reset POST classified %s (%v)", c, errs[1])
			}
		}
	}
}

func TestWorkersExhaustedIsReported(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(200 * time.Millisecond) // a slow target, not synchronisation
	}))
	defer srv.Close()
	_, stats, _ := attackUntil(t, traffic.Config{URL: srv.URL + "/", Rate: 50, MaxWorkers: 2}, 4)
	if !stats.WorkersExhausted || stats.PeakInFlight < 2 {
		t.Errorf("2 workers at 50/s on 200ms requests: exhausted %v, peak %d", stats.WorkersExhausted, stats.PeakInFlight)
	}
	if stats.AchievedRate > 0.5*stats.AskedRate {
		t.Errorf("achieved %.1f of %.0f req/s with 2 workers on 200ms requests", stats.AchievedRate, stats.AskedRate)
	}
	joined := strings.Join(stats.Suspect, "\n")
	if !strings.Contains(joined, "workers were busy") || !strings.Contains(joined, "could not hold its rate") {
		t.Errorf("Suspect = %q, want the exhausted workers and the shortfall", stats.Suspect)
	}
}

func TestSuspects(t *testing.T) {
	ok := traffic.Stats{AskedRate: 1000, AchievedRate: 990, MaxWorkers: 4000, PeakInFlight: 3, MaxLag: time.Millisecond, ClientCPU: 0.5}
	tests := []struct {
		name string
		edit func(*traffic.Stats)
		want []string // substrings, one per reason, in order
	}{
		{"clean", func(*traffic.Stats) {}, nil},
		{"shortfall", func(s *traffic.Stats) { s.AchievedRate = 900 }, []string{"achieved 900 req/s of 1000 asked (10.0% short)"}},
		{"4% short is fine", func(s *traffic.Stats) { s.AchievedRate = 960 }, nil},
		{"workers", func(s *traffic.Stats) { s.WorkersExhausted = true; s.PeakInFlight = 4000 }, []string{"all 4000 workers were busy"}},
		{"lag", func(s *traffic.Stats) { s.MaxLag = 300 * time.Millisecond }, []string{"up to 300ms behind schedule"}},
		{"cpu", func(s *traffic.Stats) { s.ClientCPU = 1.9 }, []string{"used 1.90 of 2 cores"}},
		{"cpu 1.7 of 2 is fine", func(s *traffic.Stats) { s.ClientCPU = 1.7 }, nil},
		{"all", func(s *traffic.Stats) {
			s.AchievedRate, s.WorkersExhausted, s.MaxLag, s.ClientCPU = 500, true, time.Second, 2
		}, []string{"short", "workers", "behind schedule", "cores"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := ok
			tt.edit(&s)
			got := suspects(s, 2)
			if len(got) != len(tt.want) {
				t.Fatalf("suspects = %q, want %d reasons", got, len(tt.want))
			}
			for i := range got {
				if !strings.Contains(got[i], tt.want[i]) {
					t.Errorf("reason %d = %q, want it to contain %q", i, got[i], tt.want[i])
				}
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	const refusal = "host must be 127.0.0.1: droprun only aims load at the loopback port mapping, never at private or public addresses"
	tests := []struct {
		name string
		cfg  traffic.Config
		want string // "" = valid
	}{
		{"valid", traffic.Config{URL: "http://127.0.0.1:30080/version", Rate: 1000}, ""},
		{"valid with query and timeout", traffic.Config{URL: "http://127.0.0.1:30081/version?delay=1s", Rate: 1, Timeout: time.Second}, ""},
		{"private 10/8", traffic.Config{URL: "http://10.0.0.1:30080/", Rate: 1}, refusal},
		{"private 192.168/16", traffic.Config{URL: "http://192.168.49.2:30080/", Rate: 1}, refusal},
		{"docker network 172.18/16", traffic.Config{URL: "http://172.18.0.2:30080/", Rate: 1}, refusal},
		{"public name", traffic.Config{URL: "http://example.com:80/", Rate: 1}, refusal},
		{"localhost", traffic.Config{URL: "http://localhost:30080/", Rate: 1}, refusal},
		{"other loopback address", traffic.Config{URL: "http://127.0.0.2:30080/", Rate: 1}, refusal},
		{"ipv6 loopback", traffic.Config{URL: "http://[::1]:30080/", Rate: 1}, refusal},
		{"https", traffic.Config{URL: "https://127.0.0.1:8443/", Rate: 1}, "scheme must be http"},
		{"no scheme", traffic.Config{URL: "127.0.0.1:30080", Rate: 1}, "Config.URL"},
		{"no scheme with path", traffic.Config{URL: "//127.0.0.1:30080/", Rate: 1}, "scheme must be http"},
		{"empty", traffic.Config{Rate: 1}, "scheme must be http"},
		{"no port", traffic.Config{URL: "http://127.0.0.1/", Rate: 1}, "explicit port"},
		{"port 0", traffic.Config{URL: "http://127.0.0.1:0/", Rate: 1}, "explicit port"},
		{"port 70000", traffic.Config{URL: "http://127.0.0.1:70000/", Rate: 1}, "explicit port"},
		{"unparsable", traffic.Config{URL: "http://127.0.0.1:30080/%zz", Rate: 1}, "Config.URL"},
		{"rate 0", traffic.Config{URL: "http://127.0.0.1:30080/"}, "Config.Rate 0: must be > 0"},
		{"rate negative", traffic.Config{URL: "http://127.0.0.1:30080/", Rate: -5}, "Config.Rate -5"},
		{"timeout negative", traffic.Config{URL: "http://127.0.0.1:30080/", Rate: 1, Timeout: -time.Second}, "Config.Timeout -1s"},
		{"method POST", traffic.Config{URL: "http://127.0.0.1:30080/", Rate: 1, Method: "POST"}, ""},
		{"workers at the cap", traffic.Config{URL: "http://127.0.0.1:30080/", Rate: 1, MaxWorkers: traffic.WorkerCap}, ""},
		{"workers beyond the cap", traffic.Config{URL: "http://127.0.0.1:30080/", Rate: 1, MaxWorkers: traffic.WorkerCap + 1}, "Config.MaxWorkers 10001: at most 10000"},
		{"method lower case", traffic.Config{URL: "http://127.0.0.1:30080/", Rate: 1, Method: "get"}, `Config.Method "get": want one of GET, HEAD, POST`},
		{"method unknown", traffic.Config{URL: "http://127.0.0.1:30080/", Rate: 1, Method: "BREW"}, `Config.Method "BREW"`},
		{"h2c, default connections", traffic.Config{URL: "http://127.0.0.1:30080/", Rate: 1, Protocol: traffic.ProtocolH2C}, ""},
		{"h2c, 16 connections", traffic.Config{URL: "http://127.0.0.1:30080/", Rate: 1, Protocol: traffic.ProtocolH2C, Connections: 16}, ""},
		{"h2c, too many connections", traffic.Config{URL: "http://127.0.0.1:30080/", Rate: 1, Protocol: traffic.ProtocolH2C, Connections: traffic.MaxConnections + 1}, "Config.Connections 257: want 1 to 256 per target"},
		{"h2c, negative connections", traffic.Config{URL: "http://127.0.0.1:30080/", Rate: 1, Protocol: traffic.ProtocolH2C, Connections: -1}, "Config.Connections -1"},
		{"connections kept alive", traffic.Config{URL: "http://127.0.0.1:30080/", Rate: 1, Protocol: traffic.ProtocolKeepAlive, Connections: 4}, ""},
		{"connections with a new one per request", traffic.Config{URL: "http://127.0.0.1:30080/", Rate: 1, Connections: 4}, "opens a connection per request"},
		{"idle timeout kept alive", traffic.Config{URL: "http://127.0.0.1:30080/", Rate: 1, Protocol: traffic.ProtocolKeepAlive, IdleTimeout: time.Second}, ""},
		{"idle timeout h2c", traffic.Config{URL: "http://127.0.0.1:30080/", Rate: 1, Protocol: traffic.ProtocolH2C, IdleTimeout: time.Second}, ""},
		{"idle timeout gRPC", traffic.Config{URL: "http://127.0.0.1:30080/", Rate: 1, Protocol: traffic.ProtocolGRPC, IdleTimeout: time.Second}, "only http1-keep-alive and h2c keep idle connections"},
		{"idle timeout, new connections", traffic.Config{URL: "http://127.0.0.1:30080/", Rate: 1, IdleTimeout: time.Second}, "Config.IdleTimeout 1s"},
		{"negative idle timeout", traffic.Config{URL: "http://127.0.0.1:30080/", Rate: 1, Protocol: traffic.ProtocolKeepAlive, IdleTimeout: -time.Second}, "must not be negative"},
		{"poisson arrivals", traffic.Config{URL: "http://127.0.0.1:30080/", Rate: 1, Arrivals: traffic.ArrivalsPoisson}, ""},
		{"unknown arrivals", traffic.Config{URL: "http://127.0.0.1:30080/", Rate: 1, Arrivals: "bursty"}, `Config.Arrivals "bursty": want constant or poisson`},
		{"protocol unknown", traffic.Config{URL: "http://127.0.0.1:30080/", Rate: 1, Protocol: "h3"}, `Config.Protocol "h3"`},
		{"targets", traffic.Config{Targets: []traffic.Target{{Node: "cp", URL: "http://127.0.0.1:30080/version"}, {Node: "w", URL: "http://127.0.0.1:30082/version"}}, Rate: 1}, ""},
		{"targets, one port with two paths", traffic.Config{Targets: []traffic.Target{{Node: "", URL: "http://127.0.0.1:30080/a"}, {Node: "", URL: "http://127.0.0.1:30080/b"}}, Rate: 1}, ""},
		{"targets, one private", traffic.Config{Targets: []traffic.Target{{Node: "cp", URL: "http://127.0.0.1:30080/"}, {Node: "w", URL: "http://172.18.0.3:30080/"}}, Rate: 1},
			`Config.Targets[1].URL "http://172.18.0.3:30080/": ` + refusal},
		{"targets, one localhost", traffic.Config{Targets: []traffic.Target{{Node: "cp", URL: "http://localhost:30080/"}}, Rate: 1}, "Config.Targets[0].URL"},
		{"targets, one https", traffic.Config{Targets: []traffic.Target{{Node: "cp", URL: "http://127.0.0.1:30080/"}, {Node: "w", URL: "https://127.0.0.1:30082/"}}, Rate: 1}, "Config.Targets[1].URL \"https://127.0.0.1:30082/\": scheme must be http"},
		{"targets, one without a port", traffic.Config{Targets: []traffic.Target{{Node: "cp", URL: "http://127.0.0.1/"}}, Rate: 1}, "explicit port"},
		{"targets, duplicate", traffic.Config{Targets: []traffic.Target{{Node: "a", URL: "http://127.0.0.1:30080/"}, {Node: "b", URL: "http://127.0.0.1:30082/"}, {Node: "c", URL: "http://127.0.0.1:30080/"}}, Rate: 1},
			"Config.Targets[2].URL \"http://127.0.0.1:30080/\" is also Targets[0]'s"},
		{"URL and targets", traffic.Config{URL: "http://127.0.0.1:30080/", Targets: []traffic.Target{{Node: "cp", URL: "http://127.0.0.1:30082/"}}, Rate: 1}, "both set: set one"},
		// --allow-target: validation only, nothing is sent to these hosts.
		{"allowed host, any port", traffic.Config{URL: "http://shop.example.com:8080/version", Rate: 1, Allow: []traffic.AllowTarget{{Host: "shop.example.com"}}}, ""},
		{"allowed host and port", traffic.Config{URL: "http://Shop.Example.com/version", Rate: 1, Allow: []traffic.AllowTarget{{Host: "shop.example.com", Port: "80"}}}, ""},
		{"allowed https, default port", traffic.Config{URL: "https://shop.example.com/version", Rate: 1, Allow: []traffic.AllowTarget{{Host: "shop.example.com", Port: "443"}}}, ""},
		{"allowed host, another port", traffic.Config{URL: "http://shop.example.com:8080/", Rate: 1, Allow: []traffic.AllowTarget{{Host: "shop.example.com", Port: "80"}}},
			refusal + "; to send load to shop.example.com, name it: --allow-target shop.example.com:8080"},
		{"allowed host, another host", traffic.Config{URL: "http://10.0.0.1:30080/", Rate: 1, Allow: []traffic.AllowTarget{{Host: "shop.example.com"}}}, "--allow-target 10.0.0.1:30080"},
		{"unnamed public host says what to pass", traffic.Config{URL: "https://shop.example.com/", Rate: 1}, "--allow-target shop.example.com:443"},
		{"allow does not open localhost", traffic.Config{URL: "http://localhost:30080/", Rate: 1, Allow: []traffic.AllowTarget{{Host: "localhost"}}}, refusal},
		{"allowed host with credentials", traffic.Config{URL: "http://u:p@shop.example.com/", Rate: 1, Allow: []traffic.AllowTarget{{Host: "shop.example.com"}}}, "has credentials in it"},
		{"allowed host, ftp", traffic.Config{URL: "ftp://shop.example.com/", Rate: 1, Allow: []traffic.AllowTarget{{Host: "shop.example.com"}}}, "scheme must be http"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Validate() = %v, want an error containing %q", err, tt.want)
			}
			// Start refuses it too, before sending anything.
			if a, err := Start(t.Context(), tt.cfg, io.Discard, nil); err == nil || a != nil {
				t.Fatalf("Start accepted an invalid config: %v", err)
			}
		})
	}
}

func TestConfigDefaults(t *testing.T) {
	tests := []struct {
		in      traffic.Config
		timeout time.Duration
		workers uint64
		method  string
	}{
		{traffic.Config{Rate: 1000}, 2 * time.Second, 4000, "GET"},
		{traffic.Config{Rate: 10}, 2 * time.Second, traffic.MinMaxWorkers, "GET"},
		{traffic.Config{Rate: 1000, Timeout: 500 * time.Millisecond, Protocol: traffic.ProtocolKeepAlive}, 500 * time.Millisecond, 1000, "GET"},
		{traffic.Config{Rate: 1000, Protocol: traffic.ProtocolKeepAlive, Method: "POST"}, 2 * time.Second, 4000, "POST"},
		{traffic.Config{Rate: 1000, MaxWorkers: 7}, 2 * time.Second, 7, "GET"},
		// 2 × 5,000/s × 30 s would be 300,000 connections in flight.
		{traffic.Config{Rate: 5000, Timeout: 30 * time.Second}, 30 * time.Second, traffic.WorkerCap, "GET"},
	}
	for _, tt := range tests {
		got := tt.in.WithDefaults()
		if got.Timeout != tt.timeout || got.MaxWorkers != tt.workers || got.RequestMethod() != tt.method {
			t.Errorf("%+v with defaults: timeout %s, workers %d, method %s; want %s, %d, %s",
				tt.in, got.Timeout, got.MaxWorkers, got.RequestMethod(), tt.timeout, tt.workers, tt.method)
		}
	}
}

func TestStartRefusesNilOutAndDoneContext(t *testing.T) {
	cfg := traffic.Config{URL: "http://127.0.0.1:30080/", Rate: 1}
	if _, err := Start(t.Context(), cfg, nil, nil); err == nil {
		t.Error("Start with a nil writer succeeded")
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := Start(ctx, cfg, io.Discard, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("Start with a done context: %v, want context.Canceled", err)
	}
}

// encodeResults writes results the way an Attack does.
func encodeResults(t testing.TB, results ...vegeta.Result) []byte {
	t.Helper()
	var buf bytes.Buffer
	p := pipeline{enc: vegeta.NewEncoder(&buf)}
	for i := range results {
		if _, err := p.process(&results[i]); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

func sampleResults() []vegeta.Result {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	return []vegeta.Result{
		{Seq: 0, Code: 200, Timestamp: t0, Latency: time.Millisecond, Headers: http.Header{traffic.PodHeader: {"pod-a"}, "Date": {"x"}}, Body: []byte("ok"), URL: "http://127.0.0.1:30080/version"},
		{Seq: 1, Code: 0, Timestamp: t0.Add(time.Millisecond), Latency: 2 * time.Millisecond, Error: "dial tcp 127.0.0.1:30082: connect: connection refused", URL: "http://127.0.0.1:30082/version"},
		{Seq: 2, Code: 502, Timestamp: t0.Add(2 * time.Millisecond), Latency: time.Millisecond, Error: "502 Bad Gateway", Headers: http.Header{traffic.PodHeader: {"gw"}}, Body: []byte("upstream dead"), URL: "http://127.0.0.1:30085/version"},
		{Seq: 3, Code: 200, Timestamp: t0.Add(3 * time.Millisecond), Latency: time.Millisecond, Headers: http.Header{traffic.PodHeader: {"pod-b"}}},
	}
}

func TestReadResults(t *testing.T) {
	file := encodeResults(t, sampleResults()...)
	read := func(in []byte) ([]traffic.Record, error) {
		var got []traffic.Record
		err := traffic.ReadResults(bytes.NewReader(in), func(r traffic.Record) error { got = append(got, r); return nil })
		return got, err
	}

	got, err := read(file)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		class traffic.Class
		pod   string
		err   string
		url   string
	}{
		{traffic.Class2xx, "pod-a", "", "http://127.0.0.1:30080/version"},
		{traffic.ClassRefused, "", "dial tcp 127.0.0.1:30082: connect: connection refused", "http://127.0.0.1:30082/version"},
		{traffic.Class502, "gw", "502 Bad Gateway", "http://127.0.0.1:30085/version"},
		{traffic.Class2xx, "pod-b", "", ""},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d records, want %d", len(got), len(want))
	}
	for i, w := range want {
		// Seq 3 decodes after a record with an error and a URL: a reused
		// Result would leak them.
		if got[i].Seq != uint64(i) || got[i].Class != w.class || got[i].Pod != w.pod || got[i].Error != w.err || got[i].URL != w.url {
			t.Errorf("record %d = %+v, want class %s pod %q error %q URL %q", i, got[i], w.class, w.pod, w.err, w.url)
		}
	}

	t.Run("empty input is no results", func(t *testing.T) {
		if got, err := read(nil); err != nil || len(got) != 0 {
			t.Errorf("got %v, %v", got, err)
		}
	})
	t.Run("garbage is an error", func(t *testing.T) {
		if _, err := read([]byte("\x00\x01 not results")); err == nil {
			t.Error("no error")
		}
	})
	t.Run("truncated file delivers complete results then fails", func(t *testing.T) {
		got, err := read(file[:len(file)-3])
		if !errors.Is(err, io.ErrUnexpectedEOF) || len(got) != len(want)-1 {
			t.Errorf("got %d records, %v; want %d and io.ErrUnexpectedEOF", len(got), err, len(want)-1)
		}
	})
	t.Run("an error from fn stops reading", func(t *testing.T) {
		stop := errors.New("stop")
		calls := 0
		err := traffic.ReadResults(bytes.NewReader(file), func(traffic.Record) error { calls++; return stop })
		if err != stop || calls != 1 {
			t.Errorf("err %v after %d calls", err, calls)
		}
	})
	t.Run("vegeta's JSON encoding", func(t *testing.T) {
		var buf bytes.Buffer
		enc := vegeta.NewJSONEncoder(&buf)
		for _, r := range sampleResults() {
			if err := enc.Encode(&r); err != nil {
				t.Fatal(err)
			}
		}
		got, err := read(buf.Bytes())
		if err != nil || len(got) != len(want) || got[2].Class != traffic.Class502 || got[0].Pod != "pod-a" || got[2].URL != want[2].url {
			t.Errorf("got %+v, %v", got, err)
		}
	})
	t.Run("vegeta's CSV encoding", func(t *testing.T) {
		var buf bytes.Buffer
		enc := vegeta.NewCSVEncoder(&buf)
		for _, r := range sampleResults() {
			if err := enc.Encode(&r); err != nil {
				t.Fatal(err)
			}
		}
		got, err := read(buf.Bytes())
		if err != nil || len(got) != len(want) || got[1].URL != want[1].url || got[0].Pod != "pod-a" {
			t.Errorf("got %+v, %v", got, err)
		}
	})
}

// TestRoundRobinTargets: requests go to every target in turn, each gets its
// share within one, and each result names its target in the results file.
func TestRoundRobinTargets(t *testing.T) {
	const n = 3
	var (
		targets []traffic.Target
		hits    [n]atomic.Uint64
	)
	for i := range n {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hits[i].Add(1)
			w.Header().Set(traffic.PodHeader, "pod")
		}))
		defer srv.Close()
		if !strings.HasPrefix(srv.URL, "http://127.0.0.1:") {
			t.Fatalf("test server on %s, not 127.0.0.1", srv.URL)
		}
		targets = append(targets, traffic.Target{Node: fmt.Sprintf("node-%d", i), URL: srv.URL + "/version"})
	}
	recs, stats, file := attackUntil(t, traffic.Config{Targets: targets, Rate: 300, Name: "rr"}, 100)

	byURL := map[string]uint64{}
	for _, r := range recs {
		if r.Class != traffic.Class2xx {
			t.Fatalf("seq %d: %s %q", r.Seq, r.Class, r.Error)
		}
		byURL[r.URL]++
	}
	lo, hi := stats.Requests/n, (stats.Requests+n-1)/n
	for i, tg := range targets {
		got := hits[i].Load()
		if got < lo || got > hi {
			t.Errorf("%s got %d of %d requests, want %d to %d", tg.URL, got, stats.Requests, lo, hi)
		}
		if byURL[tg.URL] != got {
			t.Errorf("%s: %d records name it, it served %d", tg.URL, byURL[tg.URL], got)
		}
	}
	if len(byURL) != n {
		t.Errorf("records name %d URLs, want %d: %v", len(byURL), n, byURL)
	}

	// The results file holds each result's URL.
	var i int
	if err := traffic.ReadResults(bytes.NewReader(file), func(r traffic.Record) error {
		if !sameRecord(r, recs[i]) {
			t.Fatalf("result %d: file %+v, observed %+v", i, r, recs[i])
		}
		i++
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if i != len(recs) {
		t.Errorf("file has %d results, observed %d", i, len(recs))
	}
}

// TestRoundRobinIsSafeConcurrently: vegeta's workers call the targeter at
// once; every target still comes out its share within one.
func TestRoundRobinIsSafeConcurrently(t *testing.T) {
	tr := roundRobin("GET", []traffic.Target{{Node: "a", URL: "http://127.0.0.1:1/"}, {Node: "b", URL: "http://127.0.0.1:2/"}, {Node: "c", URL: "http://127.0.0.1:3/"}})
	const workers, each = 8, 3000
	var counts [workers]map[string]int
	var wg sync.WaitGroup
	for w := range workers {
		counts[w] = map[string]int{}
		wg.Go(func() {
			var tgt vegeta.Target
			for range each {
				if err := tr(&tgt); err != nil {
					t.Error(err)
					return
				}
				if tgt.Method != "GET" {
					t.Errorf("method %q", tgt.Method)
				}
				counts[w][tgt.URL]++
			}
		})
	}
	wg.Wait()
	total := map[string]int{}
	for _, c := range counts {
		for u, k := range c {
			total[u] += k
		}
	}
	for _, u := range []string{"http://127.0.0.1:1/", "http://127.0.0.1:2/", "http://127.0.0.1:3/"} {
		if total[u] != workers*each/3 {
			t.Errorf("%s handed out %d times, want %d", u, total[u], workers*each/3)
		}
	}
}

// TestNonLoopbackTargetIsRefused: one bad target refuses the whole attack
// before anything is sent, even to the good ones.
func TestNonLoopbackTargetIsRefused(t *testing.T) {
	var hits atomic.Uint64
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
	defer srv.Close()
	for _, bad := range []string{"http://10.0.0.1:30080/", "http://172.18.0.2:30082/", "http://localhost:30084/", "http://[::1]:30086/"} {
		a, err := Start(t.Context(), traffic.Config{Targets: []traffic.Target{{Node: "cp", URL: srv.URL + "/"}, {Node: "w", URL: bad}}, Rate: 100}, io.Discard, nil)
		if err == nil || a != nil || !strings.Contains(err.Error(), "Config.Targets[1].URL") || !errors.Is(err, traffic.ErrNotLoopback) {
			t.Errorf("target %s: Start = %v, want a loopback refusal", bad, err)
		}
	}
	time.Sleep(50 * time.Millisecond)
	if n := hits.Load(); n != 0 {
		t.Errorf("the good target got %d requests", n)
	}
}

func TestTrimKeepsFailureBodiesAndBookshopHeaders(t *testing.T) {
	rs := sampleResults()
	p := pipeline{}
	for i := range rs {
		p.process(&rs[i])
	}
	if rs[0].Body != nil || rs[0].Headers.Get("Date") != "" || rs[0].Headers.Get(traffic.PodHeader) != "pod-a" {
		t.Errorf("2xx after trim: body %q headers %v", rs[0].Body, rs[0].Headers)
	}
	if string(rs[2].Body) != "upstream dead" {
		t.Errorf("502 after trim: body %q, want it kept", rs[2].Body)
	}
}

// TestVegetaCLIReadsResults checks that the vegeta binary's own report reads
// a results file. It skips when no vegeta binary is on PATH (install one
// with `go install github.com/tsenart/vegeta/v12@v12.13.0`, as .ci/run
// does), and fails so in CI.
func TestVegetaCLIReadsResults(t *testing.T) {
	bin, err := exec.LookPath("vegeta")
	if err != nil {
		citest.Missing(t, "no vegeta binary on PATH: go install github.com/tsenart/vegeta/v12@v12.13.0")
	}
	url := statusServer(t, 200)
	_, stats, file := attackUntil(t, traffic.Config{URL: url, Rate: 100}, 10)
	path := filepath.Join(t.TempDir(), "results.gob")
	if err := os.WriteFile(path, file, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.CommandContext(t.Context(), bin, "report", "-type=json", path).Output()
	if err != nil {
		t.Fatalf("vegeta report: %v", err)
	}
	var rep struct {
		Requests    uint64         `json:"requests"`
		Success     float64        `json:"success"`
		StatusCodes map[string]int `json:"status_codes"`
	}
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("vegeta report output %q: %v", out, err)
	}
	if rep.Requests != stats.Requests || rep.Success != 1 {
		t.Errorf("vegeta report: %+v; want %d requests, all successful", rep, stats.Requests)
	}
	if err := exec.CommandContext(t.Context(), bin, "plot", "-output", filepath.Join(t.TempDir(), "plot.html"), path).Run(); err != nil {
		t.Errorf("vegeta plot: %v", err)
	}
}

// TestRequestIDs: with traffic.Config.RequestIDs every request carries its own ID
// in the X-Request-Id header and the URL, the record reads it back, and
// concurrent workers never share one.
func TestRequestIDs(t *testing.T) {
	ids := make(chan string, 1000)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h := r.Header.Get(traffic.RequestIDHeader); h != r.URL.Query().Get(traffic.RequestIDParam) || h == "" {
			t.Errorf("header %q, query %q: want the same ID in both", h, r.URL.RawQuery)
		}
		ids <- r.Header.Get(traffic.RequestIDHeader)
	}))
	defer srv.Close()
	tr := withRequestIDs(roundRobin("GET", []traffic.Target{{Node: "a", URL: srv.URL + "/version"}, {Node: "b", URL: srv.URL + "/version?x=1"}}), "run7")
	seen := map[string]bool{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 250 {
				var tgt vegeta.Target
				if err := tr(&tgt); err != nil {
					t.Error(err)
					return
				}
				id := traffic.Record{URL: tgt.URL}.RequestID()
				mu.Lock()
				if seen[id] || !strings.HasPrefix(id, "run7-") || tgt.Header.Get(traffic.RequestIDHeader) != id {
					t.Errorf("target %s, header %v: ID %q repeated, unprefixed or not in the header", tgt.URL, tgt.Header, id)
				}
				seen[id] = true
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(seen) != 1000 {
		t.Errorf("%d distinct IDs, want 1000", len(seen))
	}
	// Through a real request, the server sees what the record keeps.
	var tgt vegeta.Target
	tr(&tgt)
	req, _ := tgt.Request()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got, want := <-ids, (traffic.Record{URL: tgt.URL}).RequestID(); got != want {
		t.Errorf("server saw %q, record keeps %q", got, want)
	}
	if id := (traffic.Record{URL: "http://127.0.0.1:1/version"}).RequestID(); id != "" {
		t.Errorf("a URL without an ID gave %q", id)
	}
}

// TestPoissonArrivals: traffic.ArrivalsPoisson's gaps are exponential with mean
// 1/rate: their mean and standard deviation both 1/rate (within 3% over
// 20,000 draws), and due times only grow.
func TestPoissonArrivals(t *testing.T) {
	const rate, n = 400.0, 20000
	a := newPoissonArrivals(rate)
	var sum, sumSq float64
	prev := time.Duration(0)
	for i := range uint64(n) {
		at := a.at(i)
		if at < prev {
			t.Fatalf("hit %d due at %s, before hit %d's %s", i+1, at, i, prev)
		}
		gap := (at - prev).Seconds()
		sum += gap
		sumSq += gap * gap
		prev = at
	}
	mean := sum / n
	sd := math.Sqrt(sumSq/n - mean*mean)
	want := 1 / rate
	if math.Abs(mean-want) > 0.03*want || math.Abs(sd-want) > 0.03*want {
		t.Errorf("gaps: mean %.5fs, sd %.5fs; want both %.5fs (exponential)", mean, sd, want)
	}
	if x, y := newPoissonArrivals(rate).at(10), newPoissonArrivals(rate).at(10); x != y || x == 0 {
		t.Errorf("hit 11 due at %s, and at %s in another attack at the same rate: want the same", x, y)
	}
}

// TestKeepAliveFleet: kept-alive HTTP/1.1 with Connections is that many
// clients taking turns, one connection each to a target whose requests do
// not overlap; the client's IdleTimeout closes a connection idle longer,
// so every request then opens one.
func TestKeepAliveFleet(t *testing.T) {
	url, conns, _ := h2cServer(t, nil)
	_, stats, _ := attackUntil(t, traffic.Config{URL: url + "/", Rate: 100, Protocol: traffic.ProtocolKeepAlive, Connections: 3}, 30)
	if stats.ByClass[traffic.Class2xx] != stats.Requests {
		t.Fatalf("ByClass = %v", stats.ByClass)
	}
	if got := conns.Load(); got != 3 {
		t.Errorf("%d connections for 3 clients taking turns, want 3", got)
	}
	url, conns, _ = h2cServer(t, nil)
	_, stats, _ = attackUntil(t, traffic.Config{URL: url + "/", Rate: 20, Protocol: traffic.ProtocolKeepAlive, IdleTimeout: 10 * time.Millisecond}, 6)
	if got := conns.Load(); got < stats.Requests-1 {
		t.Errorf("%d connections for %d requests 50 ms apart with a 10ms idle timeout, want a new one (nearly) every time", got, stats.Requests)
	}
}

// TestAcceptedTimeout: a server that accepts a request's new connection
// and never answers times the request out on a connection it accepted
// (Accepted: the pod was slow, not gone); a refused connection is not
// one, nor a timeout on a kept-alive connection reused for the request.
func TestAcceptedTimeout(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	var served atomic.Uint64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if served.Add(1) > 1 && r.Header.Get("X-Vegeta-Seq") != "" {
			select {
			case <-release:
			case <-r.Context().Done():
			}
			return
		}
	}))
	defer srv.Close()
	for _, keepAlive := range []bool{false, true} {
		served.Store(0)
		cfg := traffic.Config{URL: srv.URL + "/", Rate: 20, Timeout: 200 * time.Millisecond, Protocol: traffic.HTTP1(keepAlive)}
		if keepAlive {
			cfg.Connections = 1
		}
		recs, _, _ := attackUntil(t, cfg, 4)
		var timeouts, accepted int
		for _, r := range recs {
			if r.Class == traffic.ClassTimeout {
				timeouts++
				if traffic.Accepted(r) {
					accepted++
				}
			}
		}
		switch {
		case timeouts == 0:
			t.Errorf("keep-alive %v: no timeout in %+v", keepAlive, recs)
		case !keepAlive && accepted != timeouts:
			t.Errorf("new connections: %d of %d timeouts on an accepted connection; want all: %+v", accepted, timeouts, recs)
		case keepAlive && accepted == timeouts:
			t.Errorf("keep-alive: every one of %d timeouts on a new accepted connection; the second request reuses the first's: %+v", timeouts, recs)
		}
	}
	refused := traffic.Record{Class: traffic.ClassRefused, Error: "dial tcp 127.0.0.1:1: connect: connection refused"}
	if traffic.Accepted(refused) {
		t.Error("a refusal reads as accepted")
	}
}
