package analysis

import (
	"testing"

	"github.com/droprun/droprun/harness/analysis/analysistest"
	"github.com/droprun/droprun/harness/appmetrics"
	"github.com/droprun/droprun/harness/scenario"
	"github.com/droprun/droprun/harness/traffic"
)

// TestCustomAppWithoutMetrics: a custom app without app.custom.metrics has
// no pods' view, and every row says why instead of showing zeros.
func TestCustomAppWithoutMetrics(t *testing.T) {
	dir := analysistest.Write(t, analysistest.Run{Scenario: `apiVersion: droprun/v1alpha1
kind: Scenario
metadata: {name: synthetic}
app: {custom: {images: ["a:1", "a:2"], container: app}}
traffic: {settle: 2s}
variants:
- {name: alpha, manifest: alpha.yaml}
- {name: beta, manifest: beta.yaml}
`})
	a, err := Analyze(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Summary.Variants) == 0 {
		t.Fatal("no rows")
	}
	for _, v := range a.Summary.Variants {
		if v.Server != nil || v.NoServerView != NoCustomMetrics {
			t.Errorf("%s: server %+v, no-server-view %q; want none, and %q", v.Variant, v.Server, v.NoServerView, NoCustomMetrics)
		}
	}
}

// TestServerViewCustomCounter: pods counted by scraping a custom app's
// counter are a lower bound when a pod's last scrape came before it
// exited; a pod scraped after the traffic stopped is counted whole.
func TestServerViewCustomCounter(t *testing.T) {
	scrape := func(pod string, at float64, n int) appmetrics.Record {
		return appmetrics.Record{Time: analysistest.At(at), Started: analysistest.At(0.5), Pod: pod, Source: appmetrics.SourceScrape,
			Container: "app", ContainerID: "containerd://" + pod, Requests: n, ByCode: map[string]int{"200": n}, ByHandler: appmetrics.Counts{"": {"200": n}}}
	}
	sc := &scenario.Scenario{App: scenario.App{Custom: &scenario.CustomApp{Metrics: &scenario.CustomMetrics{
		Counter: "http_request_duration_seconds", CodeLabel: "status", Match: map[string]string{"path": "version"}}}}}
	in := &input{sc: sc, app: []appmetrics.Record{
		scrape("old", 1, 0), scrape("old", 6, 400), // exited at about 8 s, after its last scrape
		scrape("new", 1, 0), scrape("new", 11, 500), // scraped after the traffic stopped at 10 s
	}}
	p := &plan{attackStart: analysistest.At(0.9), attackEnd: analysistest.At(10), appScraped: analysistest.At(11)}
	tl := &Timeline{Outside: Tally{Requests: 1000, Classes: map[traffic.Class]uint64{traffic.Class2xx: 1000}}}
	v := in.serverView(p, tl)
	if v == nil {
		t.Fatal("no pods' view")
	}
	if v.PodsAnswered2xx != 900 || v.Pods != 2 || v.LowerBound != 1 || v.PodsFinal != 0 {
		t.Errorf("view %+v; want 900 answered by 2 pods, 1 of them a lower bound", *v)
	}
	if v.Exact() {
		t.Error("a count that missed a pod's last requests is exact")
	}
	if want := `http_request_duration_seconds{path="version"}`; v.Counter != want {
		t.Errorf("counter %q, want %q", v.Counter, want)
	}
	if v.Scrapes != 4 || v.CounterMissing != 0 {
		t.Errorf("%d scrapes, %d without the counter; want 4, 0", v.Scrapes, v.CounterMissing)
	}

	// A counter no scrape had, and a failed scrape: said so, not a count.
	missing := func(pod string, at float64) appmetrics.Record {
		r := scrape(pod, at, 0)
		r.NoCounter = true
		return r
	}
	in.app = []appmetrics.Record{missing("new", 1), missing("new", 11),
		{Time: analysistest.At(5), Since: analysistest.At(4), Pod: "old", Source: appmetrics.SourceScrapeErrors, Errors: 2, Error: "no label"}}
	v = in.serverView(p, tl)
	if v == nil || v.Pods != 0 || v.Scrapes != 2 || v.CounterMissing != 2 || v.ScrapeErrors != 2 || v.ScrapeError != "no label" {
		t.Errorf("view %+v; want no pods, 2 scrapes both without the counter, 2 failed with \"no label\"", v)
	}
}
