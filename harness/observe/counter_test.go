package observe

import (
	"bytes"
	"context"
	"maps"
	"os"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"

	"github.com/droprun/droprun/harness/appmetrics"
)

// testdata/podinfo-metrics.txt is the /metrics of the real podinfo binary
// (github.com/stefanprodan/podinfo/cmd/podinfo, 6.9.2) after 5 GET
// /version, 1 GET /status/503, 1 /readyz, 1 /healthz and 1 /metrics.

func TestParseCounterPodinfo(t *testing.T) {
	text, err := os.ReadFile("testdata/podinfo-metrics.txt")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		c    appmetrics.Counter
		want map[string]int
	}{
		{"counter, every path", appmetrics.Counter{Name: "http_requests_total", CodeLabel: "status"}, map[string]int{"200": 8, "503": 1}},
		{"counter, matched away", appmetrics.Counter{Name: "http_requests_total", CodeLabel: "status", Match: map[string]string{"path": "version"}}, map[string]int{}},
		{"histogram, one path", appmetrics.Counter{Name: "http_request_duration_seconds", CodeLabel: "status", Match: map[string]string{"path": "version"}}, map[string]int{"200": 5}},
		{"histogram by its _count", appmetrics.Counter{Name: "http_request_duration_seconds_count", CodeLabel: "status", Match: map[string]string{"method": "GET"}}, map[string]int{"200": 8, "503": 1}},
		// A series Match leaves out may lack the code label.
		{"code label only where matched", appmetrics.Counter{Name: "http_requests_total", CodeLabel: "code", Match: map[string]string{"path": "nowhere"}}, map[string]int{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := parseCounter(text, tc.c)
			if err != nil {
				t.Fatal(err)
			}
			if got := s.counts.ByCode(); !maps.Equal(got, tc.want) {
				t.Errorf("by code %v, want %v", got, tc.want)
			}
			if len(s.counts) > 1 || (len(s.counts) == 1 && s.counts[""] == nil) {
				t.Errorf("counts by handler %v: want everything under the handler \"\"", s.counts)
			}
			if s.noCounter {
				t.Errorf("%s marked missing from text that has it", tc.c.Name)
			}
		})
	}
	// A family the text lacks is zero counts, marked as not seen (an app
	// that has counted nothing yet, or a wrong name).
	if s, err := parseCounter(text, appmetrics.Counter{Name: "nope_total", CodeLabel: "code"}); err != nil || !s.noCounter || s.counts.Total() != 0 {
		t.Errorf("no such family: %+v, %v; want zero counts marked noCounter", s, err)
	}
	// A wrong code label is an error naming a series and the label, not
	// counts under the code "".
	_, err = parseCounter(text, appmetrics.Counter{Name: "http_request_duration_seconds", CodeLabel: "code", Match: map[string]string{"path": "version"}})
	if want := `http_request_duration_seconds{method="GET",path="version",status="200"} has no label "code" (app.custom.metrics.codeLabel)`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("wrong code label: %v; want an error saying %s", err, want)
	}
	if _, err := parseCounter([]byte("not { metrics"), appmetrics.Counter{Name: "x"}); err == nil {
		t.Error("parseCounter accepted text that is not an exposition")
	}
	if got := (appmetrics.Counter{Name: "h", Match: map[string]string{"path": "version", "method": "GET"}}).String(); got != `h{method="GET",path="version"}` {
		t.Errorf("String() = %s", got)
	}
}

// TestCollectorCounter: with a appmetrics.Counter the collector reads it instead of
// bookshop's metrics, and a termination message (which only bookshop
// writes) is not taken for exit totals.
func TestCollectorCounter(t *testing.T) {
	t.Parallel()
	pod := runningPod("app-a", "podinfo", "containerd://a1")
	pod.Status.ContainerStatuses[0].LastTerminationState.Terminated = terminated("containerd://a0", t0.Add(-time.Minute), "panic: something")
	client := fake.NewClientset(pod)
	fs := newFakeScraper()
	fs.set("app-a", []byte("# TYPE http_requests_total counter\nhttp_requests_total{status=\"200\"} 40\nhttp_requests_total{status=\"503\"} 2\n"), nil)
	c := scrapeCounterOnce(t, client, fs)
	s := lastScrape(c, "app-a")
	if s == nil || s.Requests != 42 || !maps.Equal(s.ByCode, map[string]int{"200": 40, "503": 2}) {
		t.Fatalf("scrape: %+v", s)
	}
	if st := c.Stats(); st.TerminationMessages != 0 || st.BadMessages != 0 {
		t.Errorf("stats %+v: a custom app's termination message was read", st)
	}
	sum := appmetrics.Totals(c.Records(), time.Time{}, time.Time{})
	if sum.Answered != 42 || sum.Answered2xx != 40 {
		t.Errorf("totals: answered %d (2xx %d), want 42 (40)", sum.Answered, sum.Answered2xx)
	}
}

// scrapeCounterOnce collects podinfo's http_requests_total (code label
// status) from the pods of client through fs, once, and stops.
func scrapeCounterOnce(t *testing.T, client *fake.Clientset, fs *fakeScraper) *AppMetrics {
	t.Helper()
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := StartAppMetrics(ctx, client, ns, "app=podinfo", &out, AppMetricsOptions{Interval: time.Hour, Scraper: fs,
		Counter: &appmetrics.Counter{Name: "http_requests_total", CodeLabel: "status"}})
	if err != nil {
		t.Fatal(err)
	}
	c.ScrapeNow(ctx)
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestCollectorCounterNotSeen: a scrape without the counter is recorded
// as such, and a wrong code label as a failed scrape with its reason, so
// the pods' view can say why it has no count.
func TestCollectorCounterNotSeen(t *testing.T) {
	t.Parallel()
	client := fake.NewClientset(runningPod("app-a", "podinfo", "containerd://a1"), runningPod("app-b", "podinfo", "containerd://b1"))
	fs := newFakeScraper()
	fs.set("app-a", []byte("# TYPE other_total counter\nother_total 3\n"), nil)
	fs.set("app-b", []byte("# TYPE http_requests_total counter\nhttp_requests_total{code=\"200\"} 3\n"), nil)
	c := scrapeCounterOnce(t, client, fs)
	if s := lastScrape(c, "app-a"); s == nil || !s.NoCounter || s.Requests != 0 {
		t.Errorf("app-a scrape %+v: want zero counts marked noCounter", s)
	}
	sum := appmetrics.Totals(c.Records(), time.Time{}, time.Time{})
	if sum.Scrapes == 0 || sum.NoCounter != sum.Scrapes {
		t.Errorf("totals: %d scrapes, %d without the counter; want every scrape of app-a without it", sum.Scrapes, sum.NoCounter)
	}
	if sum.ScrapeErrors == 0 || !strings.Contains(sum.LastError, `http_requests_total{code="200"} has no label "status"`) {
		t.Errorf("totals: %d scrape errors, last %q; want app-b's scrapes failed for the missing code label", sum.ScrapeErrors, sum.LastError)
	}
}
