package main

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// newTestWeb returns a web handler for pod web-1 and its lifecycle.
func newTestWeb() (http.Handler, *lifecycle) {
	life := new(lifecycle)
	id := identity{pod: "web-1", version: "v1"}
	return newWeb(id, life, newMetrics("v1", modeWeb, life)), life
}

// get sends a GET for target to h and returns the recorded response.
func get(t *testing.T, h http.Handler, target string) *http.Response {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, target, nil))
	return rec.Result()
}

func body(t *testing.T, resp *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading body: %v", err)
	}
	return string(b)
}

func assertIdentity(t *testing.T, resp *http.Response, pod, version string) {
	t.Helper()
	if got := resp.Header.Values(headerPod); len(got) != 1 || got[0] != pod {
		t.Errorf("%s = %q, want [%q]", headerPod, got, pod)
	}
	if got := resp.Header.Values(headerVersion); len(got) != 1 || got[0] != version {
		t.Errorf("%s = %q, want [%q]", headerVersion, got, version)
	}
}

func TestVersion(t *testing.T) {
	h, _ := newTestWeb()
	resp := get(t, h, "/version")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status = %d, want 200", resp.StatusCode)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q, want application/json", ct)
	}
	assertIdentity(t, resp, "web-1", "v1")
	var got map[string]string
	if err := json.Unmarshal([]byte(body(t, resp)), &got); err != nil {
		t.Fatalf("body is not JSON: %v", err)
	}
	want := map[string]string{"pod": "web-1", "version": "v1"}
	if len(got) != len(want) || got["pod"] != want["pod"] || got["version"] != want["version"] {
		t.Errorf("body = %v, want %v", got, want)
	}
}

func TestVersionDelay(t *testing.T) {
	h, _ := newTestWeb()
	start := time.Now()
	if resp := get(t, h, "/version?delay=50ms"); resp.StatusCode != http.StatusOK {
		t.Errorf("delay=50ms: status = %d, want 200", resp.StatusCode)
	}
	if took := time.Since(start); took < 50*time.Millisecond {
		t.Errorf("delay=50ms answered after %v", took)
	}
	for _, bad := range []string{"abc", "-1s", "5"} {
		resp := get(t, h, "/version?delay="+bad)
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("delay=%s: status = %d, want 400", bad, resp.StatusCode)
		}
		assertIdentity(t, resp, "web-1", "v1")
	}
}

func TestParseDelay(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    time.Duration
		wantErr bool
	}{
		{in: "", want: 0},
		{in: "250ms", want: 250 * time.Millisecond},
		{in: "1h", want: maxDelay},
		{in: "1", wantErr: true},
		{in: "-1s", wantErr: true},
	} {
		got, err := parseDelay(tc.in)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("parseDelay(%q) = %v, %v; want %v, error %v", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
}

func TestIndexAndNotFound(t *testing.T) {
	h, _ := newTestWeb()
	resp := get(t, h, "/")
	page := body(t, resp)
	if resp.StatusCode != http.StatusOK || !strings.Contains(page, "Moby-Dick") || !strings.Contains(page, "web-1") || !strings.Contains(page, "v1") {
		t.Errorf("GET / = %d, page without titles, pod or version:\n%s", resp.StatusCode, page)
	}
	assertIdentity(t, resp, "web-1", "v1")

	resp = get(t, h, "/no-such-page")
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /no-such-page = %d, want 404", resp.StatusCode)
	}
	assertIdentity(t, resp, "web-1", "v1")
}

func TestReadyzFailsWhileDraining(t *testing.T) {
	h, life := newTestWeb()
	for _, tc := range []struct {
		phase              phase
		healthz, readyz    int
		readyzBodyContains string
	}{
		{phaseServing, 200, 200, "ready"},
		{phaseDraining, 200, 503, "draining"},
		{phaseShuttingDown, 200, 503, "shutting_down"},
	} {
		life.set(tc.phase)
		if got := get(t, h, "/healthz").StatusCode; got != tc.healthz {
			t.Errorf("%v: /healthz = %d, want %d", tc.phase, got, tc.healthz)
		}
		resp := get(t, h, "/readyz")
		if resp.StatusCode != tc.readyz {
			t.Errorf("%v: /readyz = %d, want %d", tc.phase, resp.StatusCode, tc.readyz)
		}
		if b := body(t, resp); !strings.Contains(b, tc.readyzBodyContains) {
			t.Errorf("%v: /readyz body %q, want it to contain %q", tc.phase, b, tc.readyzBodyContains)
		}
		assertIdentity(t, resp, "web-1", "v1")
		// Draining must not stop the storefront itself.
		if got := get(t, h, "/version").StatusCode; got != http.StatusOK {
			t.Errorf("%v: /version = %d, want 200", tc.phase, got)
		}
	}
}

func TestMetrics(t *testing.T) {
	h, life := newTestWeb()
	get(t, h, "/version")
	get(t, h, "/version")
	get(t, h, "/nope")
	life.set(phaseDraining)
	get(t, h, "/readyz")

	resp := get(t, h, "/metrics")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics = %d", resp.StatusCode)
	}
	assertIdentity(t, resp, "web-1", "v1")
	text := body(t, resp)
	for _, want := range []string{
		`bookshop_http_requests_total{code="200",handler="version"} 2`,
		`bookshop_http_requests_total{code="404",handler="other"} 1`,
		`bookshop_http_requests_total{code="503",handler="readyz"} 1`,
		"bookshop_http_requests_in_flight 0",
		"bookshop_shutdown_phase 1",
		`bookshop_build_info{mode="web",version="v1"} 1`,
		"go_goroutines ",
		"process_start_time_seconds ",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}

	// The metrics live on a registry of their own, not the global default.
	families, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if strings.HasPrefix(f.GetName(), "bookshop_") {
			t.Errorf("%s is registered on the default registry", f.GetName())
		}
	}
}

func TestLogTotals(t *testing.T) {
	life := new(lifecycle)
	m := newMetrics("v1", modeWeb, life)
	h := newWeb(identity{pod: "web-1", version: "v1"}, life, m)
	get(t, h, "/version")
	get(t, h, "/version")
	get(t, h, "/readyz")
	get(t, h, "/nope")

	var buf bytes.Buffer
	m.logTotals(slog.New(slog.NewJSONHandler(&buf, nil)))
	if n := strings.Count(buf.String(), "\n"); n != 1 {
		t.Fatalf("logTotals wrote %d lines, want 1:\n%s", n, buf.String())
	}
	var line struct {
		Msg       string
		Total     int
		ByCode    map[string]int `json:"by_code"`
		ByHandler map[string]int `json:"by_handler"`
	}
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, buf.String())
	}
	if line.Msg != "final request totals" || line.Total != 4 ||
		line.ByCode["200"] != 3 || line.ByCode["404"] != 1 ||
		line.ByHandler["version"] != 2 || line.ByHandler["readyz"] != 1 || line.ByHandler["other"] != 1 {
		t.Errorf("totals line = %+v", line)
	}
}

// newTestGateway returns a gateway for upstream, pod gw-1.
func newTestGateway(t *testing.T, upstream string, keepAlive bool) http.Handler {
	t.Helper()
	u, err := url.Parse(upstream)
	if err != nil {
		t.Fatal(err)
	}
	life := new(lifecycle)
	log := slog.New(slog.NewJSONHandler(io.Discard, nil))
	cfg := config{upstream: u, upstreamKeepAlive: keepAlive, upstreamDialTimeout: 500 * time.Millisecond, upstreamTimeout: time.Second}
	return newGateway(cfg, identity{pod: "gw-1", version: "v9"}, life, newMetrics("v9", modeGateway, life), log)
}

// closedPort returns 127.0.0.1:PORT where nothing listens.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func TestGatewayUpstreamRefused(t *testing.T) {
	gw := newTestGateway(t, "http://"+closedPort(t), false)
	resp := get(t, gw, "/version")
	if resp.StatusCode != http.StatusBadGateway {
		t.Fatalf("status = %d, want 502", resp.StatusCode)
	}
	if b := body(t, resp); !strings.Contains(b, "bad gateway") {
		t.Errorf("body = %q, want a short bad gateway text", b)
	}
	if got := resp.Header.Get(headerGateway); got != "gw-1" {
		t.Errorf("%s = %q, want gw-1", headerGateway, got)
	}
	assertIdentity(t, resp, "gw-1", "v9") // the gateway made this response

	// The gateway's own probes are not proxied: they answer although the upstream is down.
	for _, path := range []string{"/healthz", "/readyz", "/metrics"} {
		resp := get(t, gw, path)
		if resp.StatusCode != http.StatusOK {
			t.Errorf("gateway %s = %d, want 200", path, resp.StatusCode)
		}
		assertIdentity(t, resp, "gw-1", "v9")
	}
	if text := body(t, get(t, gw, "/metrics")); !strings.Contains(text, `bookshop_http_requests_total{code="502",handler="proxy"} 1`) {
		t.Errorf("gateway /metrics does not count the 502:\n%s", text)
	}
}

func TestGatewayProxies(t *testing.T) {
	const requests = 3
	for _, tc := range []struct {
		keepAlive bool
		wantConns int64
	}{
		{keepAlive: false, wantConns: requests}, // a fresh connection per request
		{keepAlive: true, wantConns: 1},
	} {
		web, _ := newTestWeb()
		upstream := httptest.NewUnstartedServer(web)
		var conns atomic.Int64
		upstream.Config.ConnState = func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				conns.Add(1)
			}
		}
		upstream.Start()
		gw := newTestGateway(t, upstream.URL, tc.keepAlive)

		for range requests {
			resp := get(t, gw, "/version")
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("keepalive=%v: status = %d, want 200", tc.keepAlive, resp.StatusCode)
			}
			if b := body(t, resp); !strings.Contains(b, `"pod":"web-1"`) {
				t.Errorf("keepalive=%v: body = %q, want the upstream's", tc.keepAlive, b)
			}
			assertIdentity(t, resp, "web-1", "v1") // attributed to the upstream pod
			if got := resp.Header.Get(headerGateway); got != "gw-1" {
				t.Errorf("%s = %q, want gw-1", headerGateway, got)
			}
		}
		upstream.Close()
		if got := conns.Load(); got != tc.wantConns {
			t.Errorf("keepalive=%v: upstream saw %d connections for %d requests, want %d", tc.keepAlive, got, requests, tc.wantConns)
		}
	}
}

func TestParseConfig(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		env     map[string]string
		check   func(config) bool
		wantErr string
	}{
		{name: "defaults", check: func(c config) bool {
			return c.addr == ":8080" && c.mode == modeWeb && c.shutdown == shutdownNone &&
				c.drainDelay == 5*time.Second && c.shutdownTimeout == 10*time.Second && !c.upstreamKeepAlive
		}},
		{name: "env fallback", env: map[string]string{
			"BOOKSHOP_ADDR": ":9090", "BOOKSHOP_SHUTDOWN": "drain", "BOOKSHOP_DRAIN_DELAY": "2s",
			"BOOKSHOP_MODE": "gateway", "BOOKSHOP_UPSTREAM": "http://web:80", "BOOKSHOP_UPSTREAM_KEEPALIVE": "true",
		}, check: func(c config) bool {
			return c.addr == ":9090" && c.shutdown == shutdownDrain && c.drainDelay == 2*time.Second &&
				c.mode == modeGateway && c.upstream.Host == "web:80" && c.upstreamKeepAlive
		}},
		{name: "flag beats env", args: []string{"--shutdown", "naive"}, env: map[string]string{"BOOKSHOP_SHUTDOWN": "drain"},
			check: func(c config) bool { return c.shutdown == shutdownNaive }},
		{name: "bad mode", args: []string{"--mode", "web2"}, wantErr: "--mode"},
		{name: "bad shutdown", args: []string{"--shutdown", "graceful"}, wantErr: "--shutdown"},
		{name: "bad env duration", env: map[string]string{"BOOKSHOP_DRAIN_DELAY": "soon"}, wantErr: "BOOKSHOP_DRAIN_DELAY"},
		{name: "negative drain delay", args: []string{"--drain-delay", "-1s"}, wantErr: "--drain-delay"},
		{name: "zero shutdown timeout", args: []string{"--shutdown-timeout", "0s"}, wantErr: "--shutdown-timeout"},
		{name: "grpc flags", args: []string{"--grpc-stop", "stop", "--max-connection-age", "10s"}, check: func(c config) bool {
			return c.grpcStop == grpcStopHard && c.maxConnectionAge == 10*time.Second && c.grpcAddr == ":9090"
		}},
		{name: "bad grpc stop", args: []string{"--grpc-stop", "now"}, wantErr: "--grpc-stop"},
		{name: "negative max connection age", args: []string{"--max-connection-age", "-1s"}, wantErr: "--max-connection-age"},
		{name: "idle timeout", args: []string{"--idle-timeout", "5s"}, check: func(c config) bool { return c.idleTimeout == 5*time.Second }},
		{name: "negative idle timeout", args: []string{"--idle-timeout", "-1s"}, wantErr: "--idle-timeout"},
		{name: "gateway without upstream", args: []string{"--mode", "gateway"}, wantErr: "--upstream"},
		{name: "gateway bad upstream", args: []string{"--mode", "gateway", "--upstream", "web:80"}, wantErr: "--upstream"},
		{name: "stray argument", args: []string{"extra"}, wantErr: "extra"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := parseConfig(tc.args, func(k string) string { return tc.env[k] }, io.Discard)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one naming %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tc.check(cfg) {
				t.Errorf("config = %+v", cfg)
			}
		})
	}
}

func TestRunExitCodes(t *testing.T) {
	noEnv := func(string) string { return "" }
	var stdout, stderr bytes.Buffer
	if code := run([]string{"--version"}, noEnv, &stdout, &stderr); code != 0 || strings.TrimSpace(stdout.String()) != version {
		t.Errorf("--version: exit %d, stdout %q; want 0 and %q", code, stdout.String(), version)
	}
	stderr.Reset()
	if code := run([]string{"--shutdown", "sometimes"}, noEnv, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "--shutdown") {
		t.Errorf("bad --shutdown: exit %d, stderr %q; want 2 and a message naming the flag", code, stderr.String())
	}
	if code := run([]string{"--no-such-flag"}, noEnv, &stdout, &stderr); code != 2 {
		t.Errorf("unknown flag: exit %d, want 2", code)
	}
	if code := run([]string{"--addr", "127.0.0.1:-1"}, noEnv, &stdout, &stderr); code != 1 {
		t.Errorf("unusable address: exit %d, want 1", code)
	}
}

// TestVersionAcceptsPOST: droprun's traffic can POST /version.
func TestVersionAcceptsPOST(t *testing.T) {
	h, _ := newTestWeb()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/version", nil))
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"version"`) {
		t.Errorf("POST /version: %d %q", rec.Code, rec.Body.String())
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodDelete, "/version", nil))
	if rec.Code == http.StatusOK {
		t.Error("DELETE /version answered 200")
	}
}

// TestGatewayStalledUpstreamIs502: an upstream that never answers becomes a
// 502 after the gateway's upstream timeout (1s here), before a client's own
// 2s timeout would turn it into a 000.
func TestGatewayStalledUpstreamIs502(t *testing.T) {
	release := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-release }))
	defer up.Close()
	defer close(release)
	gw := httptest.NewServer(newTestGateway(t, up.URL, false))
	defer gw.Close()
	client := &http.Client{Timeout: 2 * time.Second}
	resp, err := client.Get(gw.URL + "/version")
	if err != nil {
		t.Fatalf("client saw %v, want a 502 from the gateway", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadGateway {
		t.Errorf("status %d, want 502", resp.StatusCode)
	}
}
