package observe

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	restclient "k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"

	"github.com/droprun/droprun/harness/timeline"
)

func TestParseKubeProxyMetricsSample(t *testing.T) {
	text, err := os.ReadFile("testdata/kube-proxy-metrics.txt")
	if err != nil {
		t.Fatal(err)
	}
	m, err := parseKubeProxyMetrics(text)
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	// The sample also has kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds
	// and other kubeproxy_*_seconds histograms: only the two series count.
	if m.lastSync != 1.796001130123456e+09 || m.progSum != 27.417032118 || m.progCount != 21 {
		t.Errorf("parsed %+v", m)
	}
	want := time.Date(2026, 11, 30, 1, 12, 10, 123456000, time.UTC)
	if got := unixTime(m.lastSync); got.Sub(want).Abs() > time.Microsecond {
		t.Errorf("last sync %v, want %v", got, want)
	}
}

func TestParseKubeProxyMetrics(t *testing.T) {
	tests := []struct {
		name    string
		text    string
		want    proxyMetrics
		wantErr string
	}{
		{"dual stack: latest sync, summed histogram", `
kubeproxy_sync_proxy_rules_last_timestamp_seconds{ip_family="IPv4"} 1.7e+09
kubeproxy_sync_proxy_rules_last_timestamp_seconds{ip_family="IPv6"} 1.7000000015e+09
kubeproxy_network_programming_duration_seconds_sum{ip_family="IPv4"} 3.5
kubeproxy_network_programming_duration_seconds_count{ip_family="IPv4"} 3
kubeproxy_network_programming_duration_seconds_sum{ip_family="IPv6"} 1.5
kubeproxy_network_programming_duration_seconds_count{ip_family="IPv6"} 1
`, proxyMetrics{lastSync: 1.7000000015e+09, progSum: 5, progCount: 4}, ""},
		{"no labels, a timestamp, quoted braces and escapes", "kubeproxy_sync_proxy_rules_last_timestamp_seconds 42\n" +
			`kubeproxy_network_programming_duration_seconds_sum{odd="a\"} 9 {b",ip_family="IPv4"} 2.25 1700000000000` + "\n" +
			"kubeproxy_network_programming_duration_seconds_count{ip_family=\"IPv4\"}\t3\n",
			proxyMetrics{lastSync: 42, progSum: 2.25, progCount: 3}, ""},
		{"no sync yet: histogram only", "kubeproxy_network_programming_duration_seconds_count 0\n", proxyMetrics{}, "no kubeproxy_sync_proxy_rules_last_timestamp_seconds"},
		{"not metrics at all", "<html><body>404 page not found</body></html>\n", proxyMetrics{}, "do not parse as Prometheus text"},
		{"bad value", "kubeproxy_sync_proxy_rules_last_timestamp_seconds{ip_family=\"IPv4\"} soon\n", proxyMetrics{}, "line 1"},
		{"unterminated labels", "kubeproxy_sync_proxy_rules_last_timestamp_seconds{ip_family=\"IPv4} 1\n", proxyMetrics{}, "line 1"},
		{"no value", "\n\nkubeproxy_sync_proxy_rules_last_timestamp_seconds{ip_family=\"IPv4\"}\n", proxyMetrics{}, "line 3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseKubeProxyMetrics([]byte(tt.text))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestSyncEvent(t *testing.T) {
	steps := []struct {
		name    string
		read    proxyMetrics
		failed  bool          // the read before this one failed
		want    timeline.Kind // "" = no event
		latency string
		changes string
	}{
		{"first read", proxyMetrics{lastSync: 100, progSum: 10, progCount: 5}, false, timeline.KindKubeProxyWatching, "", ""},
		{"no new sync", proxyMetrics{lastSync: 100, progSum: 10, progCount: 5}, false, "", "", ""},
		{"a sync that programmed two changes", proxyMetrics{lastSync: 101.5, progSum: 12.5, progCount: 7}, false, timeline.KindKubeProxySynced, "1.250", "2"},
		{"a periodic sync with no changes", proxyMetrics{lastSync: 160, progSum: 12.5, progCount: 7}, false, timeline.KindKubeProxySynced, "", ""},
		{"counters reset by a restart", proxyMetrics{lastSync: 170, progSum: 1, progCount: 1}, false, timeline.KindKubeProxySynced, "", ""},
		{"back after a failure", proxyMetrics{lastSync: 180, progSum: 2, progCount: 2}, true, timeline.KindKubeProxyWatching, "", ""},
	}
	st := &nodeState{}
	for _, s := range steps {
		st.failing = s.failed
		ev, ok := syncEvent(st, s.read)
		st.seen, st.failing, st.last = true, false, s.read
		if !ok {
			if s.want != "" {
				t.Errorf("%s: no event, want %s", s.name, s.want)
			}
			continue
		}
		if ev.Kind != s.want || ev.Detail["programming_latency_avg"] != s.latency || ev.Detail["programming_changes"] != s.changes {
			t.Errorf("%s: got %s %v, want %s latency %q changes %q", s.name, ev.Kind, ev.Detail, s.want, s.latency, s.changes)
		}
		if want := unixTime(s.read.lastSync).Format(time.RFC3339Nano); ev.Detail["last_sync_timestamp"] != want {
			t.Errorf("%s: last_sync_timestamp %q, want %q", s.name, ev.Detail["last_sync_timestamp"], want)
		}
	}
}

// kubeProxyMetricsText is a kube-proxy exposition with the two series droprun reads.
func kubeProxyMetricsText(lastSync, sum, count float64) string {
	var b bytes.Buffer
	b.WriteString("# HELP kubeproxy_sync_proxy_rules_last_timestamp_seconds [ALPHA] The last time proxy rules were successfully synced\n")
	b.WriteString("# TYPE kubeproxy_sync_proxy_rules_last_timestamp_seconds gauge\n")
	b.WriteString(`kubeproxy_sync_proxy_rules_last_timestamp_seconds{ip_family="IPv4"} ` + formatFloat(lastSync) + "\n")
	b.WriteString(`kubeproxy_network_programming_duration_seconds_sum{ip_family="IPv4"} ` + formatFloat(sum) + "\n")
	b.WriteString(`kubeproxy_network_programming_duration_seconds_count{ip_family="IPv4"} ` + formatFloat(count) + "\n")
	return b.String()
}

func formatFloat(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// rawResponse is a pod proxy response: a body or an error.
type rawResponse struct {
	body []byte
	err  error
}

func (r rawResponse) DoRaw(context.Context) ([]byte, error) { return r.body, r.err }

func (r rawResponse) Stream(context.Context) (io.ReadCloser, error) {
	return io.NopCloser(bytes.NewReader(r.body)), r.err
}

// proxyCalls serves kube-proxy metrics through a fake pod proxy and counts
// the calls per pod.
type proxyCalls struct {
	mu    sync.Mutex
	calls map[string]int
	bad   []string // paths or ports that were not /metrics on 10249
}

func (p *proxyCalls) count(pod string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls[pod]
}

func kubeProxyPod(name, node string, phase corev1.PodPhase) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kube-system", Labels: map[string]string{"k8s-app": "kube-proxy"}},
		Spec:       corev1.PodSpec{NodeName: node, HostNetwork: true},
		Status:     corev1.PodStatus{Phase: phase},
	}
}

func TestKubeProxyPoller(t *testing.T) {
	client := fake.NewClientset(
		kubeProxyPod("kube-proxy-aaaaa", "droprun-worker", corev1.PodRunning),
		kubeProxyPod("kube-proxy-bbbbb", "droprun-worker2", corev1.PodRunning),
		kubeProxyPod("kube-proxy-ccccc", "droprun-worker3", corev1.PodPending),
	)
	calls := &proxyCalls{calls: map[string]int{}}
	client.PrependProxyReactor("pods", func(action k8stesting.Action) (bool, restclient.ResponseWrapper, error) {
		a := action.(k8stesting.ProxyGetAction)
		calls.mu.Lock()
		defer calls.mu.Unlock()
		calls.calls[a.GetName()]++
		n := calls.calls[a.GetName()]
		if a.GetPath() != "/metrics" || a.GetPort() != "10249" || a.GetNamespace() != "kube-system" {
			calls.bad = append(calls.bad, a.GetNamespace()+" "+a.GetPort()+a.GetPath())
		}
		switch a.GetName() {
		case "kube-proxy-aaaaa":
			// Synced at 100 s when first read; from the third read on, a
			// sync at 101.5 s that programmed two changes in 2.5 s.
			if n < 3 {
				return true, rawResponse{body: []byte(kubeProxyMetricsText(100, 10, 5))}, nil
			}
			return true, rawResponse{body: []byte(kubeProxyMetricsText(101.5, 12.5, 7))}, nil
		default:
			// What the API server answers when kube-proxy listens on 127.0.0.1 only.
			return true, rawResponse{err: errors.New(`error trying to reach service: dial tcp 172.18.0.3:10249: connect: connection refused`)}, nil
		}
	})

	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := StartRecorder(ctx, client, "droprun", &out, RecorderOptions{Keep: true, KubeProxy: KubeProxyOptions{Interval: 5 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Stop()

	// Wait for the sync on droprun-worker and for droprun-worker2 to have
	// been retried (after failBackoffPolls polls) and failed again.
	waitUntil(t, r, "a kube-proxy sync and a retried unreachable node", func(evs []timeline.Event) bool {
		return countKind(evs, timeline.KindKubeProxySynced) > 0 && calls.count("kube-proxy-bbbbb") >= 2
	})
	calls.mu.Lock()
	more := calls.calls["kube-proxy-aaaaa"] // reads after the sync change nothing
	calls.mu.Unlock()
	waitUntil(t, r, "more reads of droprun-worker", func([]timeline.Event) bool { return calls.count("kube-proxy-aaaaa") >= more+3 })
	if err := r.Stop(); err != nil {
		t.Fatal(err)
	}

	byNode := map[string][]timeline.Kind{}
	var synced timeline.Event
	for _, e := range r.Events() {
		if e.Kind == timeline.KindKubeProxySynced {
			synced = e
		}
		byNode[e.Node] = append(byNode[e.Node], e.Kind)
	}
	want := map[string][]timeline.Kind{
		"droprun-worker":  {timeline.KindKubeProxyWatching, timeline.KindKubeProxySynced},
		"droprun-worker2": {timeline.KindKubeProxyUnreachable},
	}
	for node, kinds := range want {
		if got := byNode[node]; !equalKinds(got, kinds) {
			t.Errorf("node %s: %v, want %v", node, got, kinds)
		}
	}
	if got := byNode["droprun-worker3"]; len(got) != 0 || calls.count("kube-proxy-ccccc") != 0 {
		t.Errorf("a Pending kube-proxy was read: %v", got)
	}
	if synced.Object != "node/droprun-worker" || synced.Detail["programming_latency_avg"] != "1.250" ||
		synced.Detail["programming_changes"] != "2" || synced.Detail["kube_proxy"] != "kube-proxy-aaaaa" ||
		synced.Detail["last_sync_timestamp"] != "1970-01-01T00:01:41.5Z" {
		t.Errorf("synced event: %+v", synced)
	}
	for _, e := range r.Events() {
		if e.Kind == timeline.KindKubeProxyUnreachable && (!strings.Contains(e.Detail["error"], "connection refused") || !strings.Contains(e.Detail["hint"], "metricsBindAddress")) {
			t.Errorf("unreachable warning without the error or the hint: %+v", e)
		}
	}
	if len(calls.bad) > 0 {
		t.Errorf("proxy requests not to kube-system, port 10249, /metrics: %v", calls.bad)
	}
}

func TestKubeProxyPollerNoPods(t *testing.T) {
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	fetched := make(chan struct{}, 1)
	r, err := StartRecorder(ctx, fake.NewClientset(), "droprun", &out, RecorderOptions{Keep: true, KubeProxy: KubeProxyOptions{
		Interval: 5 * time.Millisecond,
		Fetch: func(context.Context, *corev1.Pod, int) ([]byte, error) {
			fetched <- struct{}{}
			return nil, nil
		},
	}})
	if err != nil {
		t.Fatal(err)
	}
	waitUntil(t, r, "a warning", func(evs []timeline.Event) bool { return countKind(evs, timeline.KindKubeProxyUnreachable) > 0 })
	if err := r.Stop(); err != nil {
		t.Fatal(err)
	}
	evs := r.Events()
	if n := countKind(evs, timeline.KindKubeProxyUnreachable); n != 1 {
		t.Errorf("%d warnings, want 1: %+v", n, evs)
	}
	if e := evs[len(evs)-1]; !strings.Contains(e.Detail["error"], "no pods match k8s-app=kube-proxy in namespace kube-system") || e.Detail["hint"] != "" {
		t.Errorf("warning: %+v", e)
	}
	select {
	case <-fetched:
		t.Error("Fetch was called without kube-proxy pods")
	default:
	}
}

// TestKubeProxyPollerIdle: with Idle set, the poll slows to it once no pod
// or endpoint event came for IdleAfter, and the next pod event wakes it at
// once, back to Interval.
func TestKubeProxyPollerIdle(t *testing.T) {
	client := fake.NewClientset(kubeProxyPod("kube-proxy-aaaaa", "droprun-worker", corev1.PodRunning))
	var reads atomic.Int64
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := StartRecorder(ctx, client, "droprun", &out, RecorderOptions{Keep: true, KubeProxy: KubeProxyOptions{
		Interval: 5 * time.Millisecond, Idle: time.Hour, IdleAfter: 100 * time.Millisecond,
		Fetch: func(context.Context, *corev1.Pod, int) ([]byte, error) {
			reads.Add(1)
			return []byte(kubeProxyMetricsText(100, 10, 5)), nil
		},
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Stop()
	waitUntil(t, r, "reads at Interval", func([]timeline.Event) bool { return reads.Load() >= 5 })
	// Nothing changes: after IdleAfter the reads stop (the next is an hour
	// away). A read under way as it slowed may still finish.
	time.Sleep(300 * time.Millisecond)
	idle := reads.Load()
	time.Sleep(200 * time.Millisecond)
	if n := reads.Load(); n > idle+1 {
		t.Fatalf("%d reads in 200 ms with nothing changing for %s, want none (Idle is an hour)", n-idle, 300*time.Millisecond)
	}
	// A pod is created in the namespace: the poll wakes and reads again.
	if _, err := client.CoreV1().Pods("droprun").Create(ctx, runningPod("web-a", "web", "a"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, r, "reads after a pod event", func([]timeline.Event) bool { return reads.Load() >= idle+5 })
}
