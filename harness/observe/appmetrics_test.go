package observe

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/droprun/droprun/harness/variant"

	"github.com/droprun/droprun/harness/appmetrics"
)

const ns = "droprun"

// waitFor polls cond every 2ms until it holds, failing after 10s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// runningPod is a pod of app whose container "web" (instance id) runs.
func runningPod(name, app, id string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{
			"app": app, variant.LabelVariant: "naive-shutdown", variant.LabelRow: "naive",
		}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: variant.ContainerName}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.244.1.2", ContainerStatuses: []corev1.ContainerStatus{{
			Name: variant.ContainerName, ContainerID: id,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(t0)}},
		}}},
	}
}

// terminated is a terminated container state with message msg.
func terminated(id string, finished time.Time, msg string) *corev1.ContainerStateTerminated {
	return &corev1.ContainerStateTerminated{ContainerID: id, ExitCode: 143, Reason: "Error", Message: msg,
		StartedAt: metav1.NewTime(t0), FinishedAt: metav1.NewTime(finished)}
}

// metricsText is a bookshop exposition with the given /version 200s and
// /healthz 200s.
func metricsText(version, healthz int) []byte {
	return fmt.Appendf(nil, "# TYPE bookshop_http_requests_total counter\n"+
		"bookshop_http_requests_total{code=\"200\",handler=\"healthz\"} %d\n"+
		"bookshop_http_requests_total{code=\"200\",handler=\"version\"} %d\n"+
		"# TYPE bookshop_http_requests_in_flight gauge\nbookshop_http_requests_in_flight 0\n", healthz, version)
}

// fakeScraper answers each pod from a settable text or error, counting
// calls and the most scrapes of one pod seen running at once.
type fakeScraper struct {
	mu      sync.Mutex
	text    map[string][]byte
	fail    map[string]error
	calls   map[string]int
	running map[string]int
	maxRun  map[string]int
	hold    chan struct{} // when set, every scrape waits for it to close
}

func newFakeScraper() *fakeScraper {
	return &fakeScraper{text: map[string][]byte{}, fail: map[string]error{}, calls: map[string]int{},
		running: map[string]int{}, maxRun: map[string]int{}}
}

func (f *fakeScraper) Scrape(ctx context.Context, pod *corev1.Pod) ([]byte, error) {
	f.mu.Lock()
	f.calls[pod.Name]++
	f.running[pod.Name]++
	f.maxRun[pod.Name] = max(f.maxRun[pod.Name], f.running[pod.Name])
	hold := f.hold
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.running[pod.Name]--
		f.mu.Unlock()
	}()
	if hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.fail[pod.Name]; err != nil {
		return nil, err
	}
	return f.text[pod.Name], nil
}

func (f *fakeScraper) set(pod string, text []byte, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.text[pod], f.fail[pod] = text, err
}

func (f *fakeScraper) count(pod string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[pod]
}

// lastScrape is the latest scrape record of pod, nil if none.
func lastScrape(c *AppMetrics, pod string) *appmetrics.Record {
	var last *appmetrics.Record
	for _, r := range c.Records() {
		if r.Pod == pod && r.Source == appmetrics.SourceScrape {
			last = &r
		}
	}
	return last
}

// TestCollector follows four pods through a rollout's worth of events:
// web-a is scraped, then its scrapes fail as it dies and its termination
// message arrives with the true final count; web-b is scraped, then
// deleted without a message; web-c's container restarted, leaving its
// first instance's message in lastState; gw-1 does not match the selector.
func TestCollector(t *testing.T) {
	t.Parallel()
	client := fake.NewClientset(
		runningPod("web-a", "web", "containerd://a1"),
		runningPod("web-b", "web", "containerd://b1"),
		func() *corev1.Pod {
			p := runningPod("web-c", "web", "containerd://c2")
			p.Status.ContainerStatuses[0].RestartCount = 1
			p.Status.ContainerStatuses[0].LastTerminationState.Terminated = terminated("containerd://c1", t0.Add(-time.Minute),
				`{"exit":"killed","signal":"SIGTERM","code":143,"requests":7,"inFlight":0,"byCode":{"200":7},"byHandler":{"version":{"200":6},"healthz":{"200":1}}}`)
			return p
		}(),
		runningPod("gw-1", "gateway", "containerd://g1"),
	)
	fs := newFakeScraper()
	fs.set("web-a", metricsText(10, 1), nil)
	fs.set("web-b", metricsText(5, 1), nil)
	fs.set("web-c", metricsText(3, 0), nil)
	fs.set("gw-1", metricsText(1000, 0), nil)

	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := StartAppMetrics(ctx, client, ns, "app=web", &out, AppMetricsOptions{Interval: 5 * time.Millisecond, Scraper: fs})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()

	waitFor(t, "two scrapes of each web pod", func() bool {
		return fs.count("web-a") >= 2 && fs.count("web-b") >= 2 && fs.count("web-c") >= 2
	})
	if s := lastScrape(c, "web-c"); s == nil || s.ContainerID != "containerd://c2" || s.Requests != 3 || s.Row != "naive" || s.Variant != "naive-shutdown" {
		t.Errorf("web-c's scrape: %+v", s)
	}

	// web-a dies: its scrapes fail, then its termination message arrives.
	fs.set("web-a", nil, errors.New("connection refused"))
	failed := fs.count("web-a")
	waitFor(t, "failed scrapes of web-a", func() bool { return fs.count("web-a") >= failed+3 })
	finished := t0.Add(time.Hour)
	signalAt, closedAt := finished.Add(-time.Second), finished.Add(-time.Second+time.Millisecond)
	a, err := client.CoreV1().Pods(ns).Get(ctx, "web-a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	a.Status.ContainerStatuses[0].State = corev1.ContainerState{Terminated: terminated("containerd://a1", finished,
		`{"pod":"web-a","exit":"killed","signal":"SIGTERM","code":143,`+
			`"signalAt":"`+signalAt.In(time.FixedZone("CEST", 2*3600)).Format(time.RFC3339Nano)+`","listenerClosedAt":"`+closedAt.Format(time.RFC3339Nano)+`",`+
			`"requests":13,"inFlight":2,"byCode":{"200":13},"byHandler":{"version":{"200":12},"healthz":{"200":1}}}`)}
	if _, err := client.CoreV1().Pods(ns).UpdateStatus(ctx, a, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "both termination messages", func() bool { return c.Stats().TerminationMessages == 2 })
	calls := fs.count("web-a")
	time.Sleep(30 * time.Millisecond)
	if n := fs.count("web-a") - calls; n > 1 { // at most one already under way
		t.Errorf("web-a was scraped %d more times after its container terminated", n)
	}

	// web-b counts on, then goes without a message: it keeps its last value.
	fs.set("web-b", metricsText(20, 2), nil)
	waitFor(t, "web-b's new count", func() bool { s := lastScrape(c, "web-b"); return s != nil && s.Requests == 22 })
	if err := client.CoreV1().Pods(ns).Delete(ctx, "web-b", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "web-b forgotten", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.pods["web-b"] == nil
	})

	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	records, st := c.Records(), c.Stats()

	if fs.count("gw-1") != 0 {
		t.Errorf("gw-1 (app=gateway) was scraped %d times", fs.count("gw-1"))
	}
	if st.Failures < 3 || st.Scrapes < 6 || st.TerminationMessages != 2 || st.BadMessages != 0 {
		t.Errorf("stats %+v", st)
	}
	var finals, errLines []appmetrics.Record
	for _, r := range records {
		switch r.Source {
		case appmetrics.SourceTermination:
			finals = append(finals, r)
		case appmetrics.SourceScrapeErrors:
			errLines = append(errLines, r)
		}
		if r.Pod == "gw-1" {
			t.Errorf("a record of gw-1: %+v", r)
		}
	}
	sort.Slice(finals, func(i, j int) bool { return finals[i].Pod < finals[j].Pod })
	if len(finals) != 2 || finals[0].Pod != "web-a" || finals[0].Requests != 13 || finals[0].InFlight != 2 || finals[0].ExitCode != 143 ||
		finals[0].Exit != "killed" || !finals[0].Time.Equal(finished) || finals[0].ContainerID != "containerd://a1" ||
		finals[1].Pod != "web-c" || finals[1].ContainerID != "containerd://c1" || finals[1].Requests != 7 {
		t.Errorf("termination records %+v", finals)
	}
	// web-a's message says when its signal came and its listener closed,
	// in UTC whatever zone it wrote; web-c's, from an older build, does not.
	if len(finals) == 2 && (!finals[0].SignalAt.Equal(signalAt) || finals[0].SignalAt.Location() != time.UTC ||
		!finals[0].ListenerClosedAt.Equal(closedAt) || !finals[1].SignalAt.IsZero() || !finals[1].ListenerClosedAt.IsZero()) {
		t.Errorf("termination times: web-a signal %v, listener closed %v; web-c %v, %v; want %v, %v and none",
			finals[0].SignalAt, finals[0].ListenerClosedAt, finals[1].SignalAt, finals[1].ListenerClosedAt, signalAt, closedAt)
	}
	if len(errLines) != 1 || errLines[0].Pod != "web-a" || errLines[0].Errors != st.Failures || errLines[0].Error != "connection refused" {
		t.Errorf("scrape-errors records %+v; want one for web-a counting %d failures", errLines, st.Failures)
	}

	// The file holds exactly the records.
	read, err := appmetrics.Read(bytes.NewReader(out.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if len(read) != len(records) || strings.Count(out.String(), "\n") != len(records) {
		t.Errorf("file has %d records (%d lines), collector %d", len(read), strings.Count(out.String(), "\n"), len(records))
	}
	for _, r := range read {
		if r.Pod == "web-a" && r.Source == appmetrics.SourceTermination && (!r.SignalAt.Equal(signalAt) || !r.ListenerClosedAt.Equal(closedAt)) {
			t.Errorf("web-a's termination record in the file: signal %v, listener closed %v; want %v, %v", r.SignalAt, r.ListenerClosedAt, signalAt, closedAt)
		}
	}
	if n := strings.Count(out.String(), `"signalAt"`); n != 1 {
		t.Errorf("the file has %d signalAt fields, want web-a's one (omitted when unknown)", n)
	}

	// Totals: web-a's message wins over its last scrape (10), web-b keeps
	// its last scrape, web-c adds its two instances.
	s := appmetrics.Totals(read, time.Time{}, time.Time{})
	p := s.ByPod()
	if got := p["web-a"]; got.Answered != 12 || got.Requests != 13 || !got.Final {
		t.Errorf("web-a: %+v; want 12 answered (the message), 13 requests, final", got)
	}
	if got := p["web-b"]; got.Answered != 20 || got.Requests != 22 || got.Final {
		t.Errorf("web-b: %+v; want its last scrape, 20 answered, 22 requests", got)
	}
	if got := p["web-c"]; got.Answered != 9 || got.Instances != 2 {
		t.Errorf("web-c: %+v; want 6+3 answered over 2 instances", got)
	}
	if live := c.Totals(time.Time{}, time.Time{}); live.Answered != s.Answered || live.Requests != s.Requests {
		t.Errorf("AppMetrics.Totals %d/%d, appmetrics.Totals of the file %d/%d", live.Answered, live.Requests, s.Answered, s.Requests)
	}
	if s.Answered != 41 || s.Answered2xx != 41 || s.Requests != 45 || len(s.Pods) != 3 || s.ScrapeErrors != st.Failures {
		t.Errorf("summary: answered %d, 2xx %d, requests %d, pods %d, errors %d; want 41, 41, 45, 3, %d",
			s.Answered, s.Answered2xx, s.Requests, len(s.Pods), s.ScrapeErrors, st.Failures)
	}
}

// TestCollectorScrapesConcurrently: each pod's scrape runs alongside the
// others', and a slow pod is not scraped again until its scrape is over.
func TestCollectorScrapesConcurrently(t *testing.T) {
	t.Parallel()
	client := fake.NewClientset(runningPod("web-a", "web", "a"), runningPod("web-b", "web", "b"), runningPod("web-c", "web", "c"))
	fs := newFakeScraper()
	for _, p := range []string{"web-a", "web-b", "web-c"} {
		fs.set(p, metricsText(1, 0), nil)
	}
	fs.hold = make(chan struct{})
	c, err := StartAppMetrics(context.Background(), client, ns, "app=web", &bytes.Buffer{}, AppMetricsOptions{Interval: time.Millisecond, Timeout: 10 * time.Second, Scraper: fs})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	waitFor(t, "three scrapes running at once", func() bool {
		fs.mu.Lock()
		defer fs.mu.Unlock()
		return fs.running["web-a"]+fs.running["web-b"]+fs.running["web-c"] == 3
	})
	time.Sleep(20 * time.Millisecond) // twenty ticks
	fs.mu.Lock()
	for _, p := range []string{"web-a", "web-b", "web-c"} {
		if fs.maxRun[p] != 1 || fs.calls[p] != 1 {
			t.Errorf("%s: %d calls, %d at once while the first was held; want 1, 1", p, fs.calls[p], fs.maxRun[p])
		}
	}
	close(fs.hold)
	fs.hold = nil
	fs.mu.Unlock()
	waitFor(t, "scrapes again once released", func() bool { return fs.count("web-a") >= 3 })
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	if st := c.Stats(); st.Failures != 0 {
		t.Errorf("stats %+v; stopping must not count as failures", st)
	}
}

// TestCollectorThroughAPIServer uses the default scraper: the pod proxy of
// a fake clientset serving the real bookshop's metrics text.
func TestCollectorThroughAPIServer(t *testing.T) {
	t.Parallel()
	text, err := os.ReadFile("testdata/bookshop-metrics.txt")
	if err != nil {
		t.Fatal(err)
	}
	client := fake.NewClientset(runningPod("web-a", "web", "a"))
	var mu sync.Mutex
	var asked []string
	serveProxy(client, func(a k8stesting.ProxyGetAction) ([]byte, error) {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, a.GetName()+":"+a.GetPort()+a.GetPath())
		return text, nil
	})
	// An interval too long to tick again: the scrapes are the first tick's,
	// ScrapeNow's and Stop's last one.
	var out bytes.Buffer
	c, err := StartAppMetrics(context.Background(), client, ns, "app=web", &out, AppMetricsOptions{Interval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a scrape", func() bool { return lastScrape(c, "web-a") != nil })
	c.ScrapeNow(context.Background())
	if n := c.Stats().Scrapes; n != 2 {
		t.Errorf("%d scrapes after ScrapeNow returned, want 2", n)
	}
	// A reader of the file sees ScrapeNow's reading at once (the run
	// analyses the file right after it), not a flush interval later.
	if onDisk, err := appmetrics.Read(bytes.NewReader(out.Bytes())); err != nil || len(onDisk) != 2 {
		t.Errorf("%d records written when ScrapeNow returned (err %v), want 2", len(onDisk), err)
	}
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	if n := c.Stats().Scrapes; n != 3 {
		t.Errorf("%d scrapes after Stop, want 3 (Stop reads the pods a last time)", n)
	}
	c.ScrapeNow(context.Background()) // after Stop: nothing
	if n := c.Stats().Scrapes; n != 3 || len(c.Records()) != 3 {
		t.Errorf("%d scrapes, %d records after a ScrapeNow after Stop, want 3, 3", n, len(c.Records()))
	}
	r := lastScrape(c, "web-a")
	if r.Requests != 11 || r.ByCode["200"] != 8 || r.ByHandler["version"]["200"] != 6 || r.ContainerID != "a" || !r.Started.Equal(t0) {
		t.Errorf("scrape record %+v", r)
	}
	mu.Lock()
	defer mu.Unlock()
	if asked[0] != "web-a:8080/metrics" {
		t.Errorf("proxied to %q, want web-a:8080/metrics", asked[0])
	}
}

func TestStartErrors(t *testing.T) {
	if _, err := StartAppMetrics(context.Background(), fake.NewClientset(), ns, "app in (", &bytes.Buffer{}, AppMetricsOptions{}); err == nil {
		t.Error("a bad selector was accepted")
	}
	if _, err := StartAppMetrics(context.Background(), nil, ns, "", &bytes.Buffer{}, AppMetricsOptions{}); err == nil {
		t.Error("a nil client was accepted")
	}
}

// TestScrapeNowCountsFailures: ScrapeNow says how many pods it could not
// read, so a caller that needs the reading (a balance span's edge) can
// read again.
func TestScrapeNowCountsFailures(t *testing.T) {
	t.Parallel()
	text, err := os.ReadFile("testdata/bookshop-metrics.txt")
	if err != nil {
		t.Fatal(err)
	}
	client := fake.NewClientset(runningPod("web-a", "web", "a"), runningPod("web-b", "web", "b"))
	var failing atomic.Bool
	failing.Store(true)
	serveProxy(client, func(a k8stesting.ProxyGetAction) ([]byte, error) {
		if failing.Load() && a.GetName() == "web-b" {
			return nil, errors.New("the API server stalled")
		}
		return text, nil
	})
	c, err := StartAppMetrics(context.Background(), client, ns, "app=web", &bytes.Buffer{}, AppMetricsOptions{Interval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	waitFor(t, "a scrape", func() bool { return lastScrape(c, "web-a") != nil })
	if n := c.ScrapeNow(context.Background()); n != 1 {
		t.Errorf("ScrapeNow with web-b failing: %d failed, want 1", n)
	}
	failing.Store(false)
	if n := c.ScrapeNow(context.Background()); n != 0 {
		t.Errorf("ScrapeNow with every pod answering: %d failed, want 0", n)
	}
}
