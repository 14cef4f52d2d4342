package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/droprun/droprun/harness/analysis"
	"github.com/droprun/droprun/harness/variant"
)

// TestCustomAppText: a custom app's rows say plainly when there is no
// pods' view, call a scraped count a lower bound, and name the live pods'
// shutdown settings per rollout, in the table and the HTML page.
func TestCustomAppText(t *testing.T) {
	sum := summary()
	five := int64(5)
	facts := &variant.PodFacts{Container: "podinfo", PreStop: "sleep", PreStopSeconds: &five, GracePeriodSeconds: 30,
		Readiness: &variant.ProbeFacts{Kind: "httpGet", Path: "/readyz", Port: "9898", PeriodSeconds: 10, FailureThreshold: 3}}
	a, b := &sum.Variants[0], &sum.Variants[1]
	a.NoServerView = analysis.NoCustomMetrics
	for k := range b.Rollouts {
		b.Rollouts[k].MeasuredVariant, b.Rollouts[k].LivePods, b.Rollouts[k].LiveTemplate = "custom", facts, facts.String()
	}
	b.Server = &analysis.ServerView{ClientSent: 9000, ClientGot2xx: 9000, PodsAnswered2xx: 8950, Pods: 6, LowerBound: 3,
		Counter: `http_request_duration_seconds{path="version"}`}

	var table bytes.Buffer
	if err := Table(&table, sum); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"no-prestop: no pods' view: the app exports none droprun was told to read (app.custom.metrics)",
		`graceful-drain: client sent 9000, got 9000 2xx; the pods counted 8950 2xx by http_request_duration_seconds{path="version"} (6 pods, scraped every few seconds; no exit totals); a lower bound: 3 of them exited after their last scrape`,
		"graceful-drain rollout 2: live pods: preStop sleep 5s, grace 30s, readiness GET /readyz :9898 every 10s, unready after 3 failures",
	} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}
	if strings.Contains(table.String(), "the pods answered 0 2xx") || strings.Contains(table.String(), "with exit totals)") {
		t.Errorf("table reads a missing count as a measurement:\n%s", table.String())
	}

	var page bytes.Buffer
	if err := HTML(&page, sum, HTMLInput{}); err != nil {
		t.Fatal(err)
	}
	html := page.String()
	for _, want := range []string{"no pods&#39; view: the app exports none droprun was told to read (app.custom.metrics)",
		"a lower bound: 3 of them exited after their last scrape", "preStop sleep 5s, grace 30s, readiness GET /readyz :9898 every 10s"} {
		if !strings.Contains(html, want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
}

// TestNoCountText: a counter the pods never counted by is said so, with
// the reason, never printed as a measured 0, in the table and the page.
func TestNoCountText(t *testing.T) {
	const counter = `http_requests_total{path="version"}`
	for _, tc := range []struct {
		name string
		sv   analysis.ServerView
		want string
	}{
		{"wrong name", analysis.ServerView{Counter: counter, Scrapes: 40, CounterMissing: 40},
			`no pods' count: counter http_requests_total{path="version"} was never seen in any scrape (40 scrapes); check app.custom.metrics.counter`},
		{"wrong code label", analysis.ServerView{Counter: counter, ScrapeErrors: 40, ScrapeError: `http_requests_total{status="200"} has no label "code"`},
			`no pods' count by http_requests_total{path="version"}: all 40 scrapes failed, the last with: http_requests_total{status="200"} has no label "code"`},
		{"nothing matched", analysis.ServerView{Counter: counter, Scrapes: 40, CounterMissing: 2},
			`no pods' count: no pod counted a request by http_requests_total{path="version"} in 40 scrapes; check app.custom.metrics.match`},
	} {
		sum := summary()
		sv := tc.sv
		sum.Variants[1].Server = &sv
		var table, page bytes.Buffer
		if err := Table(&table, sum); err != nil {
			t.Fatal(err)
		}
		if err := HTML(&page, sum, HTMLInput{}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(table.String(), tc.want) {
			t.Errorf("%s: table lacks %q:\n%s", tc.name, tc.want, table.String())
		}
		for _, bad := range []string{"counted 0 2xx", "exposes no counters droprun reads"} {
			if strings.Contains(table.String(), bad) {
				t.Errorf("%s: table says %q:\n%s", tc.name, bad, table.String())
			}
		}
		if want := strings.ReplaceAll(strings.ReplaceAll(tc.want, `"`, "&#34;"), "'", "&#39;"); !strings.Contains(page.String(), want) {
			t.Errorf("%s: report.html lacks %q", tc.name, want)
		}
	}
}
