package metrics

import (
	"context"
	"errors"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/droprun/droprun/harness/traffic"
)

// populated returns metrics with a little of everything.
func populated() *Metrics {
	m := New(testRun, testScenario, testVersion)
	m.VariantStarted("no-prestop")
	m.Phase("no-prestop", PhaseControl)
	for range 5 {
		m.Observe("no-prestop", traffic.Record{Class: traffic.Class2xx, Latency: 3 * time.Millisecond})
	}
	m.RolloutStarted("no-prestop", 1)
	m.Observe("no-prestop", traffic.Record{Class: traffic.ClassRefused, Error: "dial tcp: connect: connection refused"})
	m.Observe("no-prestop", traffic.Record{Class: traffic.Class502, Code: 502, Error: "502 Bad Gateway"})
	m.RolloutDone("no-prestop", 20*time.Second, 2)
	m.Phase("no-prestop", PhaseBetween)
	return m
}

// parseText parses the Prometheus text format.
func parseText(t *testing.T, r io.Reader) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(r)
	if err != nil {
		t.Fatalf("parsing the text format: %v", err)
	}
	return mfs
}

// value finds the counter or gauge of family name whose labels include
// want, and returns its value.
func value(t *testing.T, mfs map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	t.Helper()
	mf, ok := mfs[name]
	if !ok {
		t.Fatalf("no %s", name)
	}
next:
	for _, metric := range mf.GetMetric() {
		l := labels(metric)
		for k, v := range want {
			if l[k] != v {
				continue next
			}
		}
		if c := metric.GetCounter(); c != nil {
			return c.GetValue()
		}
		return metric.GetGauge().GetValue()
	}
	t.Fatalf("no %s with labels %v", name, want)
	return 0
}

// checkPopulated checks what populated recorded, as parsed back.
func checkPopulated(t *testing.T, mfs map[string]*dto.MetricFamily, runIDLabel bool) {
	t.Helper()
	for _, name := range []string{RequestsTotal, RequestDurationSeconds, RolloutsTotal, RolloutDurationSeconds,
		RolloutWindowDropsTotal, PhaseGauge, CurrentRollout, RunInfo} {
		if _, ok := mfs[name]; !ok {
			t.Errorf("no %s", name)
		}
	}
	v := map[string]string{"variant": "no-prestop"}
	for class, want := range map[traffic.Class]float64{traffic.Class2xx: 5, traffic.ClassRefused: 1, traffic.Class502: 1, traffic.ClassTimeout: 0} {
		if got := value(t, mfs, RequestsTotal, map[string]string{"variant": "no-prestop", "class": string(class)}); got != want {
			t.Errorf("%s{class=%q} = %v, want %v", RequestsTotal, class, got, want)
		}
	}
	if got := len(mfs[RequestsTotal].GetMetric()); got != len(traffic.Classes()) {
		t.Errorf("%d %s series, want %d", got, RequestsTotal, len(traffic.Classes()))
	}
	if got := value(t, mfs, RolloutsTotal, v); got != 1 {
		t.Errorf("rollouts = %v", got)
	}
	if got := value(t, mfs, RolloutWindowDropsTotal, v); got != 2 {
		t.Errorf("window drops = %v", got)
	}
	if got := value(t, mfs, CurrentRollout, v); got != 1 {
		t.Errorf("current rollout = %v", got)
	}
	if got := value(t, mfs, PhaseGauge, map[string]string{"variant": "no-prestop", "phase": "between"}); got != 1 {
		t.Errorf("phase between = %v", got)
	}
	if got := value(t, mfs, PhaseGauge, map[string]string{"variant": "no-prestop", "phase": "rollout"}); got != 0 {
		t.Errorf("phase rollout = %v", got)
	}
	var h *dto.Histogram
	if mf := mfs[RequestDurationSeconds]; mf != nil && len(mf.GetMetric()) == 1 {
		h = mf.GetMetric()[0].GetHistogram()
	}
	finite := 0 // the text format has a +Inf bucket, the protobuf one not
	for _, b := range h.GetBucket() {
		if !math.IsInf(b.GetUpperBound(), 1) {
			finite++
		}
	}
	if h.GetSampleCount() != 7 || finite != len(requestBuckets) {
		t.Errorf("request duration: %d samples, %d buckets; want 7 and %d", h.GetSampleCount(), finite, len(requestBuckets))
	}
	info := map[string]string{"scenario": testScenario, "droprun_version": testVersion}
	if runIDLabel {
		info["run_id"] = testRun
	}
	if got := value(t, mfs, RunInfo, info); got != 1 {
		t.Errorf("run_info = %v", got)
	}
}

func TestServe(t *testing.T) {
	m := populated()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr, err := m.Serve(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasSuffix(addr, ":0") {
		t.Fatalf("Serve returned %s, not the bound port", addr)
	}
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get("http://" + addr + MetricsPath)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", MetricsPath, resp.Status)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("Content-Type %q", ct)
	}
	checkPopulated(t, parseText(t, resp.Body), true)

	// Live: a later observation shows in the next scrape.
	m.Observe("no-prestop", traffic.Record{Class: traffic.ClassTimeout, Latency: 2*time.Second + time.Millisecond})
	resp2, err := client.Get("http://" + addr + MetricsPath)
	if err != nil {
		t.Fatal(err)
	}
	mfs := parseText(t, resp2.Body)
	resp2.Body.Close()
	if got := value(t, mfs, RequestsTotal, map[string]string{"class": "000:timeout"}); got != 1 {
		t.Errorf("after a timeout: 000:timeout = %v, want 1", got)
	}

	// The server stops when ctx ends.
	cancel()
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			break
		}
		c.Close()
		if time.Now().After(deadline) {
			t.Fatal("still listening 5s after ctx ended")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestServePortTaken(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	m := New(testRun, testScenario, testVersion)
	_, err = m.Serve(t.Context(), ln.Addr().String())
	if err == nil {
		t.Fatal("Serve on a taken port: no error")
	}
	t.Logf("error: %v", err)
	if !errors.Is(err, syscall.EADDRINUSE) {
		t.Errorf("error does not wrap EADDRINUSE: %v", err)
	}
	for _, want := range []string{ln.Addr().String(), "already in use", "--metrics-addr"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}

	// Any other listen failure also points at the flag.
	_, err = m.Serve(t.Context(), "not-an-address")
	if err == nil || !strings.Contains(err.Error(), "--metrics-addr") {
		t.Errorf("bad address: %v", err)
	}
}

func TestServeCancelledContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := New(testRun, testScenario, testVersion).Serve(ctx, "127.0.0.1:0"); !errors.Is(err, context.Canceled) {
		t.Errorf("Serve with a done ctx: %v", err)
	}
}

// gateway is a fake Pushgateway: it records the last push.
type gateway struct {
	method, path string
	families     map[string]*dto.MetricFamily
	status       int
}

func (g *gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g.method, g.path = r.Method, r.URL.EscapedPath()
	g.families = map[string]*dto.MetricFamily{}
	dec := expfmt.NewDecoder(r.Body, expfmt.ResponseFormat(r.Header))
	for {
		var mf dto.MetricFamily
		if err := dec.Decode(&mf); err == io.EOF {
			break
		} else if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		g.families[mf.GetName()] = &mf
	}
	if g.status != 0 {
		http.Error(w, "pushgateway says no", g.status)
		return
	}
	w.WriteHeader(http.StatusOK)
}

func TestPush(t *testing.T) {
	gw := &gateway{}
	srv := httptest.NewServer(gw)
	defer srv.Close()
	m := populated()
	if err := m.Push(t.Context(), srv.URL+"/"); err != nil {
		t.Fatal(err)
	}
	if gw.method != http.MethodPut {
		t.Errorf("method %s, want PUT (replace the run's group)", gw.method)
	}
	if want := "/metrics/job/droprun/run_id/" + testRun; gw.path != want {
		t.Errorf("path %s, want %s", gw.path, want)
	}
	// The gateway adds run_id from the path: the body must not carry it.
	checkPopulated(t, gw.families, false)
	for _, mf := range gw.families {
		for _, metric := range mf.GetMetric() {
			if _, ok := labels(metric)["run_id"]; ok {
				t.Errorf("%s pushed with a run_id label", mf.GetName())
			}
		}
	}
	// Pushing leaves the served metrics alone.
	if got := labels(family(t, m, RunInfo).GetMetric()[0])["run_id"]; got != testRun {
		t.Errorf("after Push, run_info's run_id = %q", got)
	}
}

func TestPushErrors(t *testing.T) {
	m := populated()

	gw := &gateway{status: http.StatusInternalServerError}
	srv := httptest.NewServer(gw)
	err := m.Push(t.Context(), srv.URL)
	srv.Close()
	t.Logf("gateway error: %v", err)
	if err == nil || !strings.Contains(err.Error(), srv.URL) || !strings.Contains(err.Error(), "500") ||
		!strings.Contains(err.Error(), "check") {
		t.Errorf("a 500 from the gateway: %v", err)
	}

	// Nothing listening: the server above is closed.
	err = m.Push(t.Context(), srv.URL)
	t.Logf("unreachable: %v", err)
	if err == nil || !strings.Contains(err.Error(), srv.URL) || !strings.Contains(err.Error(), "reachable") {
		t.Errorf("unreachable gateway: %v", err)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("unreachable gateway: the cause is not wrapped: %v", err)
	}

	if err := m.Push(t.Context(), ""); err == nil {
		t.Error("empty URL: no error")
	}
	if err := New("", testScenario, testVersion).Push(t.Context(), srv.URL); err == nil || !strings.Contains(err.Error(), "run ID") {
		t.Errorf("empty run ID: %v", err)
	}
}

func TestWriteFile(t *testing.T) {
	m := populated()
	dir := t.TempDir()
	path := filepath.Join(dir, "metrics.prom")
	if err := os.WriteFile(path, []byte("stale"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := m.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	checkPopulated(t, parseText(t, f), true)

	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("directory holds %d files, want only metrics.prom (no temporary left)", len(entries))
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, %v; want 0644", fi.Mode(), err)
	}

	// A directory that does not exist: an error naming the path.
	bad := filepath.Join(dir, "missing", "metrics.prom")
	if err := m.WriteFile(bad); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("WriteFile in a missing directory: %v", err)
	}
}
