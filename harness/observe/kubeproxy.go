package observe

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/droprun/droprun/harness/timeline"
)

// KubeProxyOptions turns on the routed stage: polling every node's
// kube-proxy metrics for the moment it reprogrammed its rules. The zero
// value disables it.
type KubeProxyOptions struct {
	// Interval between two polls of every kube-proxy, e.g. 250ms; 0
	// disables polling. kind's kube-proxy syncs at most once a second
	// (iptables minSyncPeriod 1s), so an interval under a second sees each
	// sync separately.
	Interval time.Duration
	// Idle, when not 0, is the interval instead while nothing changes:
	// no pod or endpoint event for IdleAfter (0: DefaultIdleAfter). The
	// first such event wakes the poll at once, so kube-proxy is read
	// often only around a rollout, when it reprograms its rules.
	Idle, IdleAfter time.Duration
	// Namespace of the kube-proxy pods; "" means kube-system.
	Namespace string
	// LabelSelector of the kube-proxy pods; "" means k8s-app=kube-proxy.
	LabelSelector string
	// Port of kube-proxy's metrics server; 0 means 10249.
	Port int
	// Fetch reads the Prometheus text metrics of one kube-proxy pod. nil
	// reads http://POD:Port/metrics through the API server's pod proxy,
	// which needs kube-proxy's metricsBindAddress to be reachable from the
	// API server (not the default 127.0.0.1; see the package
	// documentation). A Fetch that reads 127.0.0.1:Port inside the node
	// works with the default.
	Fetch func(ctx context.Context, pod *corev1.Pod, port int) ([]byte, error)
}

const (
	// metricLastSync is when kube-proxy last synced its rules (a gauge, unix
	// seconds, one series per IP family).
	metricLastSync = "kubeproxy_sync_proxy_rules_last_timestamp_seconds"
	// metricProgramming is the network programming latency histogram, from
	// an endpoint or service change to the sync that applied it.
	metricProgramming = "kubeproxy_network_programming_duration_seconds"

	// failBackoffPolls is how many polls a node is skipped after a failed
	// read (20 × 250 ms = 5 s), so an unreachable kube-proxy costs the API
	// server little.
	failBackoffPolls = 20
	// relistEvery is how often the kube-proxy pods are listed again.
	relistEvery = 10 * time.Second
	// fetchTimeout bounds one read of one kube-proxy's metrics.
	fetchTimeout = 2 * time.Second
	// DefaultIdleAfter is how long after the last pod or endpoint event
	// the poll slows to KubeProxyOptions.Idle.
	DefaultIdleAfter = 10 * time.Second
)

// hintBindAddress explains the usual reason the default Fetch fails.
const hintBindAddress = "kube-proxy serves metrics on 127.0.0.1:10249 unless metricsBindAddress says otherwise " +
	"(kind v0.33.0 sets none), and the API server's pod proxy dials the node address: set " +
	"metricsBindAddress: 0.0.0.0:10249 in the KubeProxyConfiguration (kind kubeadmConfigPatches) " +
	"or read the metrics inside the node (KubeProxyOptions.Fetch)"

// proxyMetrics is what droprun reads from one kube-proxy's metrics.
type proxyMetrics struct {
	lastSync  float64 // unix seconds, the latest over IP families
	progSum   float64 // network programming latency sum over IP families, seconds
	progCount float64 // number of changes programmed, over IP families
}

// parseKubeProxyMetrics reads the two series droprun needs from a
// Prometheus text exposition, with expfmt's parser. Both carry an
// ip_family label; a dual-stack kube-proxy reports each family, so the
// latest sync and the summed histogram are returned. Text that does not
// parse, and metrics without a last-sync series, are errors: either this
// is not kube-proxy or it has not synced yet.
func parseKubeProxyMetrics(text []byte) (proxyMetrics, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(text))
	if err != nil {
		return proxyMetrics{}, fmt.Errorf("the metrics do not parse as Prometheus text: %w", err)
	}
	var m proxyMetrics
	sync := families[metricLastSync].GetMetric()
	if len(sync) == 0 {
		return m, fmt.Errorf("no %s series in the metrics: not kube-proxy, or it has not synced its rules yet", metricLastSync)
	}
	for _, s := range sync {
		m.lastSync = math.Max(m.lastSync, value(s))
	}
	for _, s := range families[metricProgramming].GetMetric() {
		if h := s.GetHistogram(); h != nil {
			m.progSum += h.GetSampleSum()
			m.progCount += float64(h.GetSampleCount())
		}
	}
	// Without its TYPE line, a histogram's _sum and _count are untyped
	// families of their own.
	for _, s := range families[metricProgramming+"_sum"].GetMetric() {
		m.progSum += value(s)
	}
	for _, s := range families[metricProgramming+"_count"].GetMetric() {
		m.progCount += value(s)
	}
	return m, nil
}

// unixTime turns float unix seconds into a time in UTC.
func unixTime(sec float64) time.Time {
	whole, frac := math.Modf(sec)
	return time.Unix(int64(whole), int64(frac*1e9)).UTC()
}

// kubeProxyPoller polls every kube-proxy and records a node's syncs. It is
// used by one goroutine only.
type kubeProxyPoller struct {
	r      *Recorder
	client kubernetes.Interface
	opts   KubeProxyOptions
	hint   string // added to unreachable warnings, for the default Fetch

	pods       []corev1.Pod
	lastList   time.Time
	listFailed bool
	nodes      map[string]*nodeState
}

// nodeState is what the poller knows about one node's kube-proxy.
type nodeState struct {
	pod     string       // the kube-proxy pod last read (a new pod restarts the counters)
	seen    bool         // a read of pod succeeded
	last    proxyMetrics // from the last successful read
	failing bool         // the last read failed (and was reported)
	skip    int          // polls to skip before retrying a failing node
}

func newKubeProxyPoller(r *Recorder, client kubernetes.Interface, opts KubeProxyOptions) *kubeProxyPoller {
	if opts.Namespace == "" {
		opts.Namespace = metav1.NamespaceSystem
	}
	if opts.LabelSelector == "" {
		opts.LabelSelector = "k8s-app=kube-proxy"
	}
	if opts.Port == 0 {
		opts.Port = 10249
	}
	if opts.IdleAfter == 0 {
		opts.IdleAfter = DefaultIdleAfter
	}
	p := &kubeProxyPoller{r: r, client: client, opts: opts, nodes: map[string]*nodeState{}}
	if opts.Fetch == nil {
		p.opts.Fetch = p.proxyFetch
		p.hint = hintBindAddress
	}
	return p
}

// proxyFetch reads a kube-proxy's metrics through the API server's pod
// proxy (kube-proxy is hostNetwork: the pod IP is the node's).
func (p *kubeProxyPoller) proxyFetch(ctx context.Context, pod *corev1.Pod, port int) ([]byte, error) {
	b, err := readBounded(ctx, p.client.CoreV1().Pods(pod.Namespace).ProxyGet("http", pod.Name, strconv.Itoa(port), "/metrics", nil))
	if err != nil {
		return nil, fmt.Errorf("reading %s/%s:%d/metrics through the API server: %w", pod.Namespace, pod.Name, port, err)
	}
	return b, nil
}

func (p *kubeProxyPoller) run(ctx context.Context) {
	var changed atomic.Int64 // UnixNano of the latest pod or endpoint event
	changed.Store(time.Now().UnixNano())
	wake := make(chan struct{}, 1)
	if p.opts.Idle > 0 {
		p.r.OnEvent(func(e timeline.Event) {
			if k := string(e.Kind); !strings.HasSuffix(k, ".snapshot") && (strings.HasPrefix(k, "pod.") || strings.HasPrefix(k, "endpoint.")) {
				changed.Store(time.Now().UnixNano())
				select {
				case wake <- struct{}{}:
				default:
				}
			}
		})
	}
	every := func() time.Duration {
		if p.opts.Idle > 0 && time.Since(time.Unix(0, changed.Load())) > p.opts.IdleAfter {
			return p.opts.Idle
		}
		return p.opts.Interval
	}
	for {
		start := time.Now()
		p.poll(ctx)
	wait:
		for {
			select {
			case <-ctx.Done():
				return
			case <-wake: // a change: the pace may have quickened
			case <-time.After(time.Until(start.Add(every()))):
				break wait
			}
		}
	}
}

// poll reads every running kube-proxy once, listing them again every
// relistEvery.
func (p *kubeProxyPoller) poll(ctx context.Context) {
	if p.lastList.IsZero() || time.Since(p.lastList) >= relistEvery {
		p.list(ctx)
	}
	for i := range p.pods {
		if ctx.Err() != nil {
			return
		}
		p.read(ctx, &p.pods[i])
	}
}

// list finds the running kube-proxy pods. A failure, or finding none, is
// reported once until a list finds some again.
func (p *kubeProxyPoller) list(ctx context.Context) {
	p.lastList = time.Now()
	list, err := p.client.CoreV1().Pods(p.opts.Namespace).List(ctx, metav1.ListOptions{LabelSelector: p.opts.LabelSelector})
	if err == nil && len(list.Items) == 0 {
		err = fmt.Errorf("no pods match %s in namespace %s", p.opts.LabelSelector, p.opts.Namespace)
	}
	if err != nil {
		if ctx.Err() == nil && !p.listFailed {
			p.r.record(timeline.Event{Kind: timeline.KindKubeProxyUnreachable, Detail: map[string]string{"error": "listing kube-proxy pods: " + err.Error()}})
		}
		p.listFailed = true
		return
	}
	p.listFailed = false
	p.pods = p.pods[:0]
	for _, pod := range list.Items {
		if pod.Spec.NodeName != "" && pod.Status.Phase == corev1.PodRunning && pod.DeletionTimestamp == nil {
			p.pods = append(p.pods, pod)
		}
	}
}

// read polls one kube-proxy and records what changed on its node.
func (p *kubeProxyPoller) read(ctx context.Context, pod *corev1.Pod) {
	node := pod.Spec.NodeName
	st := p.nodes[node]
	if st == nil {
		st = &nodeState{}
		p.nodes[node] = st
	}
	if st.pod != pod.Name {
		st.pod, st.seen = pod.Name, false
	}
	if st.skip > 0 {
		st.skip--
		return
	}
	fetchCtx, cancel := context.WithTimeout(ctx, fetchTimeout)
	text, err := p.opts.Fetch(fetchCtx, pod, p.opts.Port)
	cancel()
	var m proxyMetrics
	if err == nil {
		m, err = parseKubeProxyMetrics(text)
	}
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		if !st.failing {
			d := map[string]string{"kube_proxy": pod.Name, "error": err.Error()}
			if p.hint != "" {
				d["hint"] = p.hint
			}
			p.r.record(timeline.Event{Kind: timeline.KindKubeProxyUnreachable, Object: "node/" + node, Node: node, Detail: d})
		}
		st.failing, st.skip = true, failBackoffPolls
		return
	}
	if ev, ok := syncEvent(st, m); ok {
		ev.Object, ev.Node = "node/"+node, node
		ev.Detail["kube_proxy"] = pod.Name
		p.r.record(ev)
	}
	st.seen, st.failing, st.last = true, false, m
}

// syncEvent decides what a successful read means for a node: the first
// read (or the first after a failure) is kubeproxy.watching, a new
// last-sync time is kubeproxy.synced with the mean programming latency of
// the changes counted since the previous read, and anything else nothing.
func syncEvent(st *nodeState, m proxyMetrics) (timeline.Event, bool) {
	d := map[string]string{"last_sync_timestamp": unixTime(m.lastSync).Format(time.RFC3339Nano)}
	if !st.seen || st.failing {
		return timeline.Event{Kind: timeline.KindKubeProxyWatching, Detail: d}, true
	}
	if m.lastSync == st.last.lastSync {
		return timeline.Event{}, false
	}
	if n := m.progCount - st.last.progCount; n > 0 {
		d["programming_latency_avg"] = strconv.FormatFloat((m.progSum-st.last.progSum)/n, 'f', 3, 64)
		d["programming_changes"] = strconv.FormatFloat(n, 'f', 0, 64)
	}
	return timeline.Event{Kind: timeline.KindKubeProxySynced, Detail: d}, true
}
