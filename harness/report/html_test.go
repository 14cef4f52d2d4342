package report

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"html/template"
	"image"
	"image/color"
	"image/png"
	"math"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/css"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"golang.org/x/net/html"

	"github.com/droprun/droprun/harness/analysis"
	"github.com/droprun/droprun/harness/plot"
	"github.com/droprun/droprun/harness/traffic"
	"github.com/droprun/droprun/harness/variant"
	"github.com/droprun/droprun/internal/citest"
)

var (
	update        = flag.Bool("update", false, "rewrite the golden screenshot thumbnail in testdata")
	screenshotDir = flag.String("screenshot-dir", "", "write the Chromium screenshot and the report here (default: the test's temporary directory)")
)

// htmlSummary is a run with every kind of row: a variant that drops, a
// clean fix, a fix that dropped only timeouts, a failed hook, the trap's two
// rows and a custom app.
func htmlSummary() *analysis.Summary {
	t0 := time.Date(2026, 11, 30, 2, 36, 55, 0, time.UTC)
	ctl := analysis.Tally{Requests: 10000, Classes: map[traffic.Class]uint64{traffic.Class2xx: 10000}}
	client := analysis.ClientSummary{AskedRate: 1000, AchievedRate: 999.9, CPU: 0.62}
	ro := func(n int, measured string, reqs, refused, timeout uint64) analysis.RolloutSummary {
		from, to := "v1", "v2"
		if n%2 == 0 {
			from, to = "v2", "v1"
		}
		w := analysis.Tally{Requests: reqs, Failures: refused + timeout, Classes: map[traffic.Class]uint64{traffic.Class2xx: reqs - refused - timeout}}
		if refused > 0 {
			w.Classes[traffic.ClassRefused] = refused
		}
		if timeout > 0 {
			w.Classes[traffic.ClassTimeout] = timeout
		}
		start := t0.Add(time.Duration(n) * time.Minute)
		return analysis.RolloutSummary{N: n, From: from, To: to, MeasuredVariant: measured, LiveTemplate: "shutdown=none preStop=none image=bookshop:" + from,
			Start: start, Complete: start.Add(12 * time.Second), WindowEnd: start.Add(17 * time.Second), Duration: "12s", Window: w,
			Tail:             analysis.Tally{Requests: 13000, Classes: map[traffic.Class]uint64{traffic.Class2xx: 13000}},
			ConntrackFlushed: map[string]int{"droprun-worker": n - 1, "droprun-worker2": 0}, BaselineWait: "10s", BaselineClean: true}
	}
	row := func(name, builtin string, rs ...analysis.RolloutSummary) analysis.VariantSummary {
		v := analysis.VariantSummary{Variant: name, Builtin: builtin, Control: ctl, Client: client, Classes: map[traffic.Class]uint64{},
			Rollouts: rs, Gaps: []analysis.Gap{{Pod: "web-677dc5444b-mdw2b", EndpointUnready: 0.0002, EndpointRemoved: 3.76}, {Pod: "web-677dc5444b-mf56l", EndpointUnready: -1, EndpointRemoved: 1.59}}}
		for _, r := range rs {
			v.WindowRequests += r.Window.Requests
			v.Drops += r.Window.Failures
			v.Tail.Merge(r.Tail)
			if r.Window.Failures > 0 {
				v.RolloutsWithDrops++
			}
			for c, n := range r.Window.Classes {
				v.Classes[c] += n
			}
		}
		v.Requests = v.WindowRequests + v.Tail.Requests + ctl.Requests
		return v
	}
	sum := &analysis.Summary{Format: analysis.SummaryVersion, Facts: analysis.Facts{Scenario: "compare-all", Started: t0, Finished: t0.Add(15 * time.Minute),
		Cluster: analysis.ClusterInfo{Name: "droprun", Kind: true, Nodes: 3, KubeProxyMode: "iptables", NodeImage: "droprun/node:v1.37.2", Kubernetes: "v1.37.2", DroprunVer: "3f66b50-test"},
		Traffic: analysis.TrafficInfo{URL: "http://127.0.0.1:30080/version", Rate: 1000, Method: "GET", Timeout: "2s", Target: "nodeport", Rollouts: 3, Settle: "5s", Control: "10s", Between: "10s"}},
		Variants: []analysis.VariantSummary{
			row("no-prestop", "no-prestop", ro(1, "no-prestop", 16000, 600, 100), ro(2, "no-prestop", 16000, 700, 50), ro(3, "no-prestop", 16000, 800, 0)),
			row("graceful-drain", "graceful-drain", ro(1, "graceful-drain", 20000, 0, 0), ro(2, "graceful-drain", 20000, 0, 0), ro(3, "graceful-drain", 20000, 0, 0)),
			row("prestop-sleep", "prestop-sleep", ro(1, "prestop-sleep", 20000, 0, 3793), ro(2, "prestop-sleep", 20000, 0, 0), ro(3, "prestop-sleep", 20000, 0, 0)),
			row("prestop-exec-distroless", "prestop-exec-distroless", ro(1, "prestop-exec-distroless", 16000, 500, 900), ro(2, "prestop-exec-distroless", 16000, 400, 800)),
			row("the-trap/introducing", "prestop-sleep", ro(1, "no-prestop", 13000, 337, 40)),
			row("the-trap", "prestop-sleep", ro(2, "prestop-sleep", 20000, 0, 0), ro(3, "prestop-sleep", 20000, 0, 0)),
			row("my-app", "", ro(1, "custom", 15000, 0, 0)),
		}}
	sum.Variants[2].Suspect = []string{"requests went out up to 2.386s behind schedule (tolerance 250ms)"}
	sum.Variants[2].ControlRig = &analysis.RigSummary{Samples: 10, HostBusyMean: 0.55, CPUPressureMean: 0.1, CPUPressureMax: 0.3, ClientLagMax: 0.01}
	for k := range sum.Variants[2].Rollouts {
		r := &sum.Variants[2].Rollouts[k]
		r.Rig = &analysis.RigSummary{Samples: 17, HostBusyMean: 0.7, CPUPressureMean: 0.2, CPUPressureMax: 0.4, ClientLagMax: 0.05}
		sum.Variants[2].Measurable.Merge(r.Window)
		if r.N == 1 {
			// Its timeouts were all sent while the client stalled.
			r.Rig.ClientLagMax, r.Rig.Saturated = 2.386, true
			r.Excused = r.Window.Failures
			sum.Variants[2].SaturatedRollouts++
			sum.Variants[2].Excused += r.Excused
		}
	}
	m := &sum.Variants[2].Measurable
	m.Requests -= sum.Variants[2].Excused
	m.Failures -= sum.Variants[2].Excused
	m.Classes[traffic.ClassTimeout] -= sum.Variants[2].Excused
	r1 := &sum.Variants[0].Rollouts[0]
	r1.ByNode = map[string]analysis.Tally{"droprun-worker": {Requests: 8000, Failures: 500}, "droprun-control-plane": {Requests: 8000, Failures: 200}}
	r1.SlowestNode, r1.SlowestSync, r1.ProgrammingLatency = "droprun-worker", 1.25, 1.1
	sum.Variants[0].Server = &analysis.ServerView{ClientSent: 98000, ClientGot2xx: 95750, PodsAnswered: 95800, PodsAnswered2xx: 95790, Pods: 8, PodsFinal: 7, Uncertain: 1}
	sum.Variants[2].Tail = analysis.Tally{Requests: 39000, Failures: 2, Classes: map[traffic.Class]uint64{traffic.Class2xx: 38998, traffic.ClassTimeout: 2}}
	sum.Variants[3].HookFailures = []string{"02:48:12.459 web-77468f74f6-29w8m: PreStopHook failed", "02:48:17.465 web-77468f74f6-cd9zx: PreStopHook failed"}
	sum.Variants[5].Rollouts[1].BaselineClean = false
	sum.Variants[5].Rollouts[1].BaselineWait = "30s"
	sum.Suspect = []string{"prestop-sleep: requests went out up to 2.386s behind schedule (tolerance 250ms)"}
	return derived(sum)
}

// testPNG draws a w×h chart-like image: bars on a light grid.
func testPNG(t testing.TB, w, h int, c color.RGBA) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			px := color.RGBA{255, 255, 255, 255}
			if x%40 == 0 || y%40 == 0 {
				px = color.RGBA{225, 228, 232, 255}
			}
			if bar := x / 40; x%40 > 8 && x%40 < 32 && h-y < (bar*37)%h {
				px = c
			}
			img.Set(x, y, px)
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

const testSVG = `<svg xmlns="http://www.w3.org/2000/svg" width="480" height="160" viewBox="0 0 480 160">` +
	`<rect width="480" height="160" fill="#fff"/><rect x="20" y="40" width="300" height="80" fill="#1e7b45"/></svg>`

func htmlFigures(t testing.TB) []plot.Figure {
	return []plot.Figure{
		{Name: "rates", Title: "Drop rate per variant", Caption: "Each row's drop rate with its 95% interval.", PNG: testPNG(t, 720, 300, color.RGBA{31, 95, 168, 255})},
		{Name: "timeline-no-prestop-1", Title: "no-prestop, rollout 1", Caption: "Requests per 100 ms by class, pod events below.", Variant: "no-prestop", PNG: testPNG(t, 900, 360, color.RGBA{192, 57, 43, 255})},
		{Name: "timeline-graceful-drain-1", Title: "graceful-drain, rollout 1", Variant: "graceful-drain", SVG: []byte(testSVG)},
		{Name: "orphan", Title: "A figure about no row", Variant: "not-a-row", PNG: testPNG(t, 200, 100, color.RGBA{20, 143, 119, 255})},
	}
}

const testScenario = `apiVersion: droprun/v1alpha1
kind: Scenario
metadata:
  name: compare-all
  description: All shutdown variants, three rollouts each, at 1000 requests/s.
rollouts: 3
`

func renderHTML(t testing.TB, sum *analysis.Summary, in HTMLInput) string {
	t.Helper()
	var b bytes.Buffer
	if err := HTML(&b, sum, in); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// walk calls fn on n and every node under it.
func walk(n *html.Node, fn func(*html.Node)) {
	fn(n)
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		walk(c, fn)
	}
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func hasClass(n *html.Node, class string) bool {
	for _, c := range strings.Fields(attr(n, "class")) {
		if c == class {
			return true
		}
	}
	return false
}

func textOf(n *html.Node) string {
	var b strings.Builder
	walk(n, func(c *html.Node) {
		if c.Type == html.TextNode {
			b.WriteString(c.Data)
		}
	})
	return strings.Join(strings.Fields(b.String()), " ")
}

// find returns the elements under n for which ok is true.
func find(n *html.Node, ok func(*html.Node) bool) []*html.Node {
	var out []*html.Node
	walk(n, func(c *html.Node) {
		if c.Type == html.ElementNode && ok(c) {
			out = append(out, c)
		}
	})
	return out
}

func elem(tag string) func(*html.Node) bool {
	return func(n *html.Node) bool { return n.Data == tag }
}

func parseHTML(t *testing.T, page string) *html.Node {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(page))
	if err != nil {
		t.Fatalf("the page does not parse: %v", err)
	}
	return doc
}

// checkSelfContained fails when the page loads or links anything outside
// itself: a script, a stylesheet link, an attribute with a URL that is not a
// data: URI or an in-page anchor, or a url() in the style sheet.
func checkSelfContained(t *testing.T, doc *html.Node) {
	t.Helper()
	walk(doc, func(n *html.Node) {
		if n.Type != html.ElementNode {
			return
		}
		switch n.Data {
		case "script", "link", "iframe", "object", "embed", "base":
			t.Errorf("the page has a <%s> element", n.Data)
		case "style":
			if css := textOf(n); strings.Contains(css, "url(") || strings.Contains(css, "@import") || strings.Contains(css, "http") {
				t.Errorf("the style sheet refers to something outside the page")
			}
		}
		for _, a := range n.Attr {
			v := strings.ToLower(strings.TrimSpace(a.Val))
			if strings.HasPrefix(a.Key, "on") {
				t.Errorf("<%s> has an event handler %s", n.Data, a.Key)
			}
			if strings.Contains(v, "http://") || strings.Contains(v, "https://") || strings.HasPrefix(v, "//") || strings.Contains(v, "javascript:") {
				t.Errorf("<%s %s=%.60q> refers outside the page", n.Data, a.Key, a.Val)
			}
			switch a.Key {
			case "href":
				if !strings.HasPrefix(v, "#") {
					t.Errorf("<%s href=%.60q> is not an in-page anchor", n.Data, a.Val)
				}
			case "src", "srcset", "action", "formaction", "poster", "data":
				if !strings.HasPrefix(v, "data:image/") {
					t.Errorf("<%s %s=%.60q> is not a data: image", n.Data, a.Key, a.Val)
				}
			}
		}
	})
}

func TestHTMLParsesAndHasEverything(t *testing.T) {
	sum := htmlSummary()
	figs := htmlFigures(t)
	page := renderHTML(t, sum, HTMLInput{Figures: figs, ScenarioYAML: []byte(testScenario), RunDir: "results/20261130-compare-all"})
	doc := parseHTML(t, page)
	checkSelfContained(t, doc)

	if titles := find(doc, elem("title")); len(titles) != 1 || textOf(titles[0]) != "droprun report: compare-all" {
		t.Errorf("title: %d elements", len(titles))
	}
	// The summary table has every row, in order, linked to its section.
	var tbodies []*html.Node
	for _, tb := range find(doc, func(n *html.Node) bool { return n.Data == "table" && hasClass(n, "summary") }) {
		tbodies = append(tbodies, find(tb, elem("tbody"))...)
	}
	if len(tbodies) != 1 {
		t.Fatalf("%d summary tables", len(tbodies))
	}
	trs := find(tbodies[0], elem("tr"))
	if len(trs) != len(sum.Variants) {
		t.Fatalf("summary table: %d rows, want %d", len(trs), len(sum.Variants))
	}
	ids := map[string]bool{}
	for _, s := range find(doc, func(n *html.Node) bool { return attr(n, "id") != "" }) {
		if ids[attr(s, "id")] {
			t.Errorf("duplicate id %q", attr(s, "id"))
		}
		ids[attr(s, "id")] = true
	}
	rows := Rows(sum)
	for k, tr := range trs {
		a := find(tr, elem("a"))
		if len(a) == 0 || textOf(a[0]) != rows[k].Variant {
			t.Errorf("summary row %d is not %s: %q", k, rows[k].Variant, textOf(tr))
			continue
		}
		if href := attr(a[0], "href"); !ids[strings.TrimPrefix(href, "#")] {
			t.Errorf("row %s links to %q, which is not on the page", rows[k].Variant, href)
		}
		c := rows[k].cells()
		for _, want := range []string{c.RateCI, c.Control, c.Rate} {
			if !strings.Contains(textOf(tr), want) {
				t.Errorf("row %s lacks %q: %q", rows[k].Variant, want, textOf(tr))
			}
		}
	}
	// One section per row, with its per-rollout table.
	sections := find(doc, func(n *html.Node) bool { return n.Data == "section" && hasClass(n, "variant") })
	if len(sections) != len(sum.Variants) {
		t.Fatalf("%d variant sections, want %d", len(sections), len(sum.Variants))
	}
	for k, s := range sections {
		v := sum.Variants[k]
		var n int
		for _, tb := range find(s, func(n *html.Node) bool { return n.Data == "table" && hasClass(n, "rollouts") }) {
			for _, body := range find(tb, elem("tbody")) {
				n += len(find(body, elem("tr")))
			}
		}
		if n != len(v.Rollouts) {
			t.Errorf("%s: %d rollout rows, want %d", v.Variant, n, len(v.Rollouts))
		}
		if shows := find(s, func(n *html.Node) bool { return hasClass(n, "shows") }); len(shows) != 1 || !strings.Contains(textOf(shows[0]), "What this shows") {
			t.Errorf("%s has no \"what this shows\"", v.Variant)
		}
	}
	// Every figure is an <img> whose data: URI holds exactly its image.
	imgs := find(doc, elem("img"))
	if len(imgs) != len(figs) {
		t.Fatalf("%d images, want %d", len(imgs), len(figs))
	}
	srcs := map[string]bool{}
	for _, img := range imgs {
		srcs[attr(img, "src")] = true
		if attr(img, "alt") == "" {
			t.Errorf("an image without alt text")
		}
	}
	for _, f := range figs {
		want := "data:image/png;base64," + base64.StdEncoding.EncodeToString(f.PNG)
		if len(f.PNG) == 0 {
			want = "data:image/svg+xml;base64," + base64.StdEncoding.EncodeToString(f.SVG)
		}
		if !srcs[want] {
			t.Errorf("figure %s is not embedded", f.Name)
		}
	}
	// Per-variant figures are in their section; the rest with the run.
	if got := len(find(sections[0], elem("img"))); got != 1 {
		t.Errorf("no-prestop's section has %d images, want 1", got)
	}
	for _, id := range []string{"figures", "comparisons", "summary", "scenario", "suspect"} {
		if !ids[id] {
			t.Errorf("no #%s", id)
		}
	}
	if got := len(find(doc, func(n *html.Node) bool { return n.Data == "li" && hasClass(n.Parent, "verdicts") })); got != len(sum.Variants)-1 {
		t.Errorf("%d verdicts, want %d", got, len(sum.Variants)-1)
	}
	text := textOf(doc)
	for _, want := range []string{
		"All shutdown variants, three rollouts each", // the scenario's description
		"3f66b50-test", "Kubernetes v1.37.2", "kube-proxy iptables", "kind cluster \"droprun\"", "results/20261130-compare-all",
		"http://127.0.0.1:30080/version", // the traffic URL, as plain text
		"Suspect measurement: 1 warning", "requests went out up to 2.386s behind schedule",
		"PreStopHook failed", "Hook failures",
		"0 failures in 10,000 requests before the first rollout",
		"2 failures in 39,000 requests after the windows closed",
		"never clean (waited 30s)", "droprun-worker 2",
		"median 2.7 s, 1.6–3.8 s over 2 pods",
		"apiVersion: droprun/v1alpha1",
		"graceful-drain drops less than no-prestop: rate ratio",
		"Rig during the control", "client up to 0.01s behind schedule, its goroutines up to",
		"in 1 of 3 rollouts; 3,793 timeouts in flight while the rig stalled were excused (counted apart); refused, reset, EOF and 5xx are never excused. Without the excused ones the windows had 0 failures in 56,207 requests",
		"short of CPU client up to 2.39s behind schedule",
		"droprun-control-plane 200 failed of 8000, droprun-worker 500 failed of 8000",
		"slowest kube-proxy: droprun-worker, synced 1.25 s after the deletion request; programming latency up to 1.10 s",
		"the pods answered 95,800 requests (95,790 2xx); the client sent 98,000 and got 95,750 2xx, counted from 8 pods, 7 with their exit totals, 1 not exact",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
}

func TestHTMLWhatThisShows(t *testing.T) {
	sum := htmlSummary()
	doc := parseHTML(t, renderHTML(t, sum, HTMLInput{}))
	shows := map[string]string{}
	for k, s := range find(doc, func(n *html.Node) bool { return n.Data == "section" && hasClass(n, "variant") }) {
		for _, d := range find(s, func(n *html.Node) bool { return hasClass(n, "shows") }) {
			shows[sum.Variants[k].Variant] = textOf(d)
		}
	}
	for name, wants := range map[string][]string{
		"no-prestop": {"It dropped 2,250 of 48,000 requests", "in 3 of 3 rollouts, at most 800 in one", "mostly 000:refused (93%)",
			"That is the expected result: 93% of the drops are refused connections", "kubelet sends SIGTERM at once"},
		"graceful-drain": {"It dropped nothing in 3 rollouts (0 in 60,000 requests: at most 64% of rollouts drop at all at 95%, whatever the shape of their bursts (per request, as if requests failed independently, rate < 5e-5))", "That is what the fix predicts", "fails its readiness probe", "graceful-drain drops less than no-prestop: rate ratio"},
		"prestop-sleep": {"It dropped 3,793 of 60,000 requests", "in 1 of 3 rollouts; all 000:timeout", "The fix predicts no drops, and this row dropped anyway", "Every drop is a timeout", "flagged suspect",
			"3,793 timeouts were in flight while the rig stalled and are excused; without them the windows dropped 0 of 56,207 requests."},
		"prestop-exec-distroless": {"mostly 000:timeout (65%)", "though most drops here are timeouts", "FailedPreStopHook"},
		"the-trap/introducing":    {"in its one rollout", "the rollout that introduced prestop-sleep", "never to the pods it destroys", "runs under the old rules (no-prestop)", "That is the expected result"},
		"the-trap":                {"The rollouts after the one that introduced prestop-sleep", "That is what the fix predicts", "exec preStop hook"},
		"my-app":                  {"A custom app", "It dropped nothing in 1 rollout"},
	} {
		for _, w := range wants {
			if !strings.Contains(shows[name], w) {
				t.Errorf("%s: %q lacks %q", name, shows[name], w)
			}
		}
	}
	if !strings.Contains(textOf(doc), "the first rollout, from no-prestop to prestop-sleep (exec preStop hook sleep N, app unchanged)") {
		t.Error("the trap's first rollout does not say what it rolled from and to")
	}
	if strings.Contains(shows["my-app"], "predicts") {
		t.Errorf("a custom app has no prediction: %q", shows["my-app"])
	}

	// A bad variant that dropped nothing is not called fixed.
	clean := htmlSummary()
	clean.Variants = clean.Variants[1:2]
	clean.Variants[0].Variant, clean.Variants[0].Builtin = "naive-shutdown", "naive-shutdown"
	for k := range clean.Variants[0].Rollouts {
		clean.Variants[0].Rollouts[k].MeasuredVariant = "naive-shutdown"
	}
	page := renderHTML(t, clean, HTMLInput{})
	if !strings.Contains(page, "This variant is expected to drop requests, and this run saw none in 3 rollouts") {
		t.Errorf("naive-shutdown without drops:\n%s", page)
	}
	// A fix with a single stray timeout is not called a failure.
	stray := htmlSummary()
	stray.Variants = stray.Variants[1:2]
	stray.Variants[0].Drops, stray.Variants[0].RolloutsWithDrops = 1, 1
	stray.Variants[0].Classes[traffic.ClassTimeout] = 1
	if page := renderHTML(t, derived(stray), HTMLInput{}); !strings.Contains(page, "The fix predicts no drops. 1 timeout and no refused connection") ||
		strings.Contains(page, "dropped anyway") {
		t.Errorf("graceful-drain with one timeout:\n%s", page)
	}
	// A row without window requests says nothing was measured.
	empty := derived(&analysis.Summary{Variants: []analysis.VariantSummary{{Variant: "no-prestop", Builtin: "no-prestop"}}})
	if page := renderHTML(t, empty, HTMLInput{}); !strings.Contains(page, "Nothing was measured") || strings.Contains(page, "Each row against") {
		t.Errorf("empty row:\n%s", page)
	}
}

// TestHTMLClassColours: the bar of drops takes each class's colour and
// words from the catalogue, the colours the figures use; the page's
// style sheet names no class colour of its own.
// TestEveryBuiltinExplained: a row of each built-in variant gets its
// catalogue explanation and a word on what the variant predicts, with
// drops and without.
func TestEveryBuiltinExplained(t *testing.T) {
	for _, info := range variant.All() {
		if info.Why == "" {
			t.Errorf("%s: the catalogue has no Why", info.Name)
			continue
		}
		for _, drops := range []uint64{0, 30} {
			ro := analysis.RolloutSummary{N: 1, MeasuredVariant: info.Name, BaselineClean: true,
				Window: analysis.Tally{Requests: 15000, Failures: drops, Classes: map[traffic.Class]uint64{traffic.ClassRefused: drops, traffic.Class2xx: 15000 - drops}}}
			v := analysis.VariantSummary{Variant: info.Name, Builtin: info.Name, Drops: drops, WindowRequests: 15000, Rollouts: []analysis.RolloutSummary{ro},
				Classes: ro.Window.Classes, Control: analysis.Tally{Requests: 10000}}
			sum := derived(&analysis.Summary{Variants: []analysis.VariantSummary{v}})
			_, expect, why := story(Rows(sum)[0], sum.Variants[0], false)
			if !slices.Contains(why, info.Why) {
				t.Errorf("%s, %d drops: why %q lacks the catalogue's explanation", info.Name, drops, why)
			}
			want := "fix predicts"
			if info.Drops {
				want = "expected"
			}
			if !strings.Contains(expect, want) {
				t.Errorf("%s, %d drops: %q does not say what the variant predicts (%q)", info.Name, drops, expect, want)
			}
		}
	}
}

func TestHTMLClassColours(t *testing.T) {
	page := renderHTML(t, htmlSummary(), HTMLInput{})
	for _, c := range []traffic.Class{traffic.ClassRefused, traffic.ClassTimeout} {
		info := traffic.Info(c)
		if want := "background: " + info.Colour; !strings.Contains(page, want) {
			t.Errorf("the page lacks %s's colour %q", c, want)
		}
		if want := template.HTMLEscapeString(info.Label + ": " + info.Meaning); !strings.Contains(page, want) {
			t.Errorf("the page lacks %s's meaning %q", c, want)
		}
		if got, want := plot.ClassColor(c), info.Colour; fmt.Sprintf("#%02x%02x%02x", got.(color.RGBA).R, got.(color.RGBA).G, got.(color.RGBA).B) != want {
			t.Errorf("%s: the figures draw %v, the catalogue says %s", c, got, want)
		}
	}
	for _, ci := range traffic.Catalogue() {
		if strings.Contains(strings.ToLower(htmlSource), ci.Colour) {
			t.Errorf("the template has %s's colour %s itself", ci.Class, ci.Colour)
		}
	}
}

func TestMix(t *testing.T) {
	for want, classes := range map[string]map[traffic.Class]uint64{
		"all 000:timeout":          {traffic.ClassTimeout: 5},
		"mostly 000:refused (60%)": {traffic.ClassRefused: 6, traffic.ClassEOF: 3, traffic.ClassTimeout: 1},
		"spread over 000:eof (40%), 000:refused (35%) and 000:timeout (20%)": {traffic.ClassRefused: 35, traffic.ClassEOF: 40,
			traffic.ClassTimeout: 20, traffic.ClassReset: 5, traffic.Class2xx: 1000},
		"spread over 000:refused (50%) and 000:eof (50%)": {traffic.ClassRefused: 1, traffic.ClassEOF: 1},
	} {
		var drops uint64
		for c, n := range classes {
			if c.Failed() {
				drops += n
			}
		}
		if got := mix(Row{Drops: drops, Classes: classes}); got != want {
			t.Errorf("mix = %q, want %q", got, want)
		}
	}
}

func TestHTMLEscapesHostileStrings(t *testing.T) {
	const evil = `<script>alert("x")</script>`
	sum := htmlSummary()
	sum.Scenario = evil
	sum.Variants[0].Variant = evil + `"><img src=x onerror=alert(1)>`
	sum.Variants[3].HookFailures = []string{`<img src=x onerror=alert(2)>`}
	sum.Suspect = append(sum.Suspect, evil)
	sum.Cluster.Name = evil
	sum.Cluster.DroprunVer = `"><script>alert(3)</script>`
	sum.Error = "</pre>" + evil
	figs := htmlFigures(t)
	figs[0].Title, figs[0].Caption = `"><script>alert(4)</script>`, evil
	figs[1].Variant = sum.Variants[0].Variant
	page := renderHTML(t, sum, HTMLInput{Figures: figs, ScenarioYAML: []byte("metadata:\n  description: '" + evil + "'\n# </pre>" + evil + "\n"), RunDir: evil})
	if strings.Contains(strings.ToLower(page), "<script") {
		t.Errorf("a hostile string got through unescaped")
	}
	doc := parseHTML(t, page)
	checkSelfContained(t, doc)
	// The hostile name is still shown, as text, and still finds its section.
	var found bool
	for _, a := range find(doc, elem("a")) {
		if textOf(a) == strings.Join(strings.Fields(sum.Variants[0].Variant), " ") {
			found = true
			id := strings.TrimPrefix(attr(a, "href"), "#")
			if len(find(doc, func(n *html.Node) bool { return attr(n, "id") == id })) != 1 {
				t.Errorf("the link %q of the hostile row finds no section", id)
			}
		}
	}
	if !found {
		t.Errorf("the hostile variant name is not shown as text")
	}
	if imgs := find(doc, elem("img")); len(imgs) != len(figs) {
		t.Errorf("%d images, want %d: a hostile string made an element", len(imgs), len(figs))
	}
	if pre := find(doc, elem("pre")); len(pre) != 1 || !strings.Contains(textOf(pre[0]), "</pre>"+evil) {
		t.Errorf("the scenario is not shown verbatim")
	}
}

func TestHTMLErrors(t *testing.T) {
	var b bytes.Buffer
	if err := HTML(&b, nil, HTMLInput{}); err == nil {
		t.Error("no error for a nil summary")
	}
	for name, f := range map[string]plot.Figure{
		"no image":   {Name: "empty", Title: "Empty"},
		"not a PNG":  {Name: "fake", PNG: []byte("GIF89a....")},
		"broken PNG": {Name: "broken", PNG: append([]byte("\x89PNG\r\n\x1a\n"), 1, 2, 3)},
	} {
		b.Reset()
		err := HTML(&b, htmlSummary(), HTMLInput{Figures: []plot.Figure{f}})
		if err == nil || !strings.Contains(err.Error(), f.Name) {
			t.Errorf("%s: error %v", name, err)
		}
		if b.Len() > 0 {
			t.Errorf("%s: wrote %d bytes despite the error", name, b.Len())
		}
	}
	b.Reset()
	if err := HTML(&b, &analysis.Summary{}, HTMLInput{}); err != nil || !strings.Contains(b.String(), "</html>") {
		t.Errorf("an empty summary: %v", err)
	}
	if err := HTML(failWriter{}, htmlSummary(), HTMLInput{}); !errors.Is(err, errWrite) {
		t.Errorf("write error: %v", err)
	}
}

var errWrite = errors.New("disk full")

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errWrite }

func TestHTMLIsReproducible(t *testing.T) {
	in := HTMLInput{Figures: htmlFigures(t), ScenarioYAML: []byte(testScenario)}
	if a, b := renderHTML(t, htmlSummary(), in), renderHTML(t, htmlSummary(), in); a != b {
		t.Error("two renderings of the same run differ")
	}
	in.Generated = time.Date(2026, 12, 1, 9, 30, 0, 0, time.UTC)
	if page := renderHTML(t, htmlSummary(), in); !strings.Contains(page, "on 2026-12-01 09:30:00 UTC") {
		t.Error("no generation time")
	}
}

// findChromium returns the browser the Chromium test drives: $CHROMIUM, or
// the first of the usual names on $PATH.
func findChromium() (string, error) {
	if p := os.Getenv("CHROMIUM"); p != "" {
		return exec.LookPath(p)
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", errors.New("no chromium, chromium-browser or google-chrome on $PATH (set CHROMIUM to its path)")
}

// TestIntegrationHTMLChromium opens the report in headless Chromium from a
// file:// URL and checks what a reader sees: no console error or exception,
// every plot decoded, the tables complete, a screenshot that is not blank
// and looks like the golden one, and a PDF printout.
func TestIntegrationHTMLChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the Chromium test")
	}
	chromium, err := findChromium()
	if err != nil {
		if citest.InCI() {
			t.Fatalf("CI is set and Chromium is missing: %v", err)
		}
		t.Skipf("Chromium is missing, skipping (install the chromium package; with CI set this fails): %v", err)
	}
	dir := *screenshotDir
	if dir == "" {
		dir = t.TempDir()
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}

	sum := htmlSummary()
	figs := htmlFigures(t)
	path, err := filepath.Abs(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(renderHTML(t, sum, HTMLInput{Figures: figs, ScenarioYAML: []byte(testScenario), RunDir: "results/20261130-compare-all"})), 0o644); err != nil {
		t.Fatal(err)
	}

	ctx, problems := openInChromium(t, chromium, path)

	title, err := chromedp.Run(ctx, chromedp.Title())
	if err != nil || title != "droprun report: compare-all" {
		t.Errorf("title %q, %v", title, err)
	}
	type img struct {
		Alt      string `json:"alt"`
		Complete bool   `json:"complete"`
		Width    int    `json:"width"`
		Height   int    `json:"height"`
	}
	imgs, err := chromedp.Run(ctx, chromedp.Evaluate[[]img](`Array.from(document.images, i => ({alt: i.alt, complete: i.complete, width: i.naturalWidth, height: i.naturalHeight}))`))
	if err != nil {
		t.Fatal(err)
	}
	if len(imgs) != len(figs) {
		t.Errorf("%d images, want %d", len(imgs), len(figs))
	}
	for _, i := range imgs {
		if !i.Complete || i.Width <= 0 || i.Height <= 0 {
			t.Errorf("image %q did not render: %+v", i.Alt, i)
		}
	}
	summaryRows, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll('table.summary tbody tr'), r => r.cells[0].querySelector('a').textContent)`))
	if err != nil {
		t.Fatal(err)
	}
	rolloutRows, err := chromedp.Run(ctx, chromedp.Evaluate[[]int](`Array.from(document.querySelectorAll('section.variant'), s => s.querySelectorAll('table.rollouts tbody tr').length)`))
	if err != nil {
		t.Fatal(err)
	}
	if len(summaryRows) != len(sum.Variants) || len(rolloutRows) != len(sum.Variants) {
		t.Fatalf("summary rows %q, rollout rows %v: want %d variants", summaryRows, rolloutRows, len(sum.Variants))
	}
	for k, v := range sum.Variants {
		if summaryRows[k] != v.Variant || rolloutRows[k] != len(v.Rollouts) {
			t.Errorf("row %d: %q with %d rollouts, want %q with %d", k, summaryRows[k], rolloutRows[k], v.Variant, len(v.Rollouts))
		}
	}
	// The suspect warning is on screen, above the summary.
	warn, err := chromedp.Run(ctx, chromedp.Evaluate[[]float64](`(() => { const w = document.getElementById('suspect'), s = document.getElementById('summary');
		return [w.getBoundingClientRect().height, w.getBoundingClientRect().top, s.getBoundingClientRect().top]; })()`))
	if err != nil {
		t.Fatal(err)
	}
	if len(warn) != 3 || warn[0] < 20 || warn[1] >= warn[2] {
		t.Errorf("the suspect warning is not shown above the summary: %v", warn)
	}

	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	shotPath := filepath.Join(dir, "report-chromium.png")
	if err := os.WriteFile(shotPath, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", shotPath)
	env, err := renderingEnv(ctx)
	if err != nil {
		t.Fatal(err)
	}
	checkScreenshot(t, shot, env, filepath.Join("testdata", "report-chromium.thumb.png"))

	pdf, err := chromedp.Run(ctx, chromedp.PrintToPDF(chromedp.PDFPaper(chromedp.PaperA4), chromedp.PDFPrintBackground()))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(pdf, []byte("%PDF-")) || len(pdf) < 10000 {
		t.Errorf("the printout is not a PDF with content (%d bytes)", len(pdf))
	}
	if err := os.WriteFile(filepath.Join(dir, "report.pdf"), pdf, 0o644); err != nil {
		t.Fatal(err)
	}

	// Events may arrive just after the last command; give them a moment.
	time.Sleep(300 * time.Millisecond)
	seen := problems()
	for _, p := range seen {
		t.Errorf("the browser reported %s", p)
	}

	// The listener does hear errors: a page that logs one and throws.
	canary := filepath.Join(dir, "canary.html")
	if err := os.WriteFile(canary, []byte(`<!DOCTYPE html><title>canary</title><script>console.error("canary-error"); throw new Error("canary-exception")</script>`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate((&url.URL{Scheme: "file", Path: filepath.ToSlash(canary)}).String())); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		got := strings.Join(problems()[len(seen):], "\n")
		if strings.Contains(got, "canary-error") && strings.Contains(got, "canary-exception") {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("the listener missed the canary page's error and exception: %q", got)
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// openInChromium opens the page at path in headless Chromium from a file://
// URL, at a 1280×900 viewport. problems returns every console error,
// uncaught exception and error log entry (such as a blocked or failed load)
// the page has caused so far.
func openInChromium(t *testing.T, chromium, path string) (ctx context.Context, problems func() []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	var browserLog bytes.Buffer
	actx, cancel := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(chromium), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(1280, 900), chromedp.CombinedOutput(&browserLog))
	t.Cleanup(cancel)
	ctx, cancel = chromedp.NewContext(actx)
	t.Cleanup(cancel)

	var (
		mu   sync.Mutex
		seen []string
	)
	report := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, fmt.Sprintf(format, args...))
	}
	if err := chromedp.Listen(ctx, func(ev any) {
		switch ev := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeAssert {
				var args []string
				for _, a := range ev.Args {
					args = append(args, string(a.Value)+a.Description)
				}
				report("console.%s: %s", ev.Type, strings.Join(args, " "))
			}
		case *runtime.EventExceptionThrown:
			d := ev.ExceptionDetails
			if d.Exception != nil {
				report("exception: %s %s", d.Text, d.Exception.Description)
			} else {
				report("exception: %s", d.Text)
			}
		case *log.EventEntryAdded:
			if ev.Entry.Level == log.EntryLevelError {
				report("log (%s): %s %s", ev.Entry.Source, ev.Entry.Text, ev.Entry.URL)
			}
		}
	}); err != nil {
		t.Fatalf("starting %s: %v\n%s", chromium, err, browserLog.String())
	}
	u := (&url.URL{Scheme: "file", Path: filepath.ToSlash(path)}).String()
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 900), chromedp.Navigate(u)); err != nil {
		t.Fatalf("opening %s: %v\n%s", u, err, browserLog.String())
	}
	return ctx, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(seen)
	}
}

// renderingEnv names what decides how the page renders, apart from the
// page: the browser's major version and the platform fonts its body text
// and its code were drawn with.
func renderingEnv(ctx context.Context) (string, error) {
	v, err := chromedp.CallBrowser(ctx, browser.GetVersion, cdp.Empty{})
	if err != nil {
		return "", err
	}
	env, _, _ := strings.Cut(v.Product, ".")
	doc, err := chromedp.Call(ctx, dom.GetDocument, dom.GetDocumentParams{})
	if err != nil {
		return "", err
	}
	for _, sel := range []string{"p.legend", "pre.scenario"} {
		q, err := chromedp.Call(ctx, dom.QuerySelector, dom.QuerySelectorParams{NodeID: doc.Root.NodeID, Selector: sel})
		if err != nil {
			return "", fmt.Errorf("%s: %w", sel, err)
		}
		f, err := chromedp.Call(ctx, css.GetPlatformFontsForNode, css.GetPlatformFontsForNodeParams{NodeID: q.NodeID})
		if err != nil {
			return "", fmt.Errorf("fonts of %s: %w", sel, err)
		}
		var names []string
		for _, u := range f.Fonts {
			names = append(names, u.FamilyName)
		}
		slices.Sort(names)
		env += "; " + sel + ": " + strings.Join(slices.Compact(names), ", ")
	}
	return env, nil
}

// thumbWidth is the width of the golden thumbnail: small enough to ignore
// font hinting, large enough to see a missing figure, table or style sheet.
const thumbWidth = 96

// checkScreenshot checks that shot is a sane, non-blank page and compares
// its thumbnail with the golden one (or rewrites it under -update). The
// golden file's .txt sidecar records the rendering environment (env) it was
// made in; another browser version or other fonts wrap lines elsewhere, so
// the comparison is only made in the same environment.
func checkScreenshot(t *testing.T, shot []byte, env, golden string) {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatalf("the screenshot is not a PNG: %v", err)
	}
	b := img.Bounds()
	if b.Dx() != 1280 || b.Dy() < 900 || b.Dy() > 40000 {
		t.Errorf("screenshot %dx%d: want 1280 wide, 900 to 40000 high", b.Dx(), b.Dy())
	}
	var ink, n int
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			r, g, bl, _ := img.At(x, y).RGBA()
			if r < 0xf000 || g < 0xf000 || bl < 0xf000 {
				ink++
			}
			n++
		}
	}
	if share := float64(ink) / float64(n); share < 0.05 {
		t.Errorf("the screenshot is nearly blank: %.1f%% of the pixels are not white", 100*share)
	} else {
		t.Logf("screenshot %dx%d, %.1f%% non-white", b.Dx(), b.Dy(), 100*share)
	}

	thumb := thumbnail(img, thumbWidth, 0)
	envFile := strings.TrimSuffix(golden, ".png") + ".txt"
	if *update {
		if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := png.Encode(&buf, thumb); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(envFile, []byte(env+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s (%s)", golden, env)
		return
	}
	if b, err := os.ReadFile(envFile); err != nil {
		t.Fatalf("no golden thumbnail environment (run the test with -update to write it): %v", err)
	} else if made := strings.TrimSpace(string(b)); made != env {
		t.Logf("not comparing with the golden thumbnail: it was made with %q, this is %q (-update makes one here)", made, env)
		return
	}
	f, err := os.Open(golden)
	if err != nil {
		t.Fatalf("no golden thumbnail (run the test with -update to write it): %v", err)
	}
	defer f.Close()
	want, err := png.Decode(f)
	if err != nil {
		t.Fatalf("%s: %v", golden, err)
	}
	wb := want.Bounds()
	if ratio := float64(thumb.Bounds().Dy()) / float64(wb.Dy()); ratio < 0.85 || ratio > 1.15 {
		t.Errorf("the page is %.0f%% as long as the golden one: the layout changed (inspect the screenshot, then -update)", 100*ratio)
		return
	}
	// Compare at the golden's size: the share of thumbnail pixels whose
	// grey level moved by more than thumbLevels. Text is a grey blur at
	// this size, so another font moves few pixels that far; a missing
	// figure, table or style sheet moves many.
	got := thumbnail(img, wb.Dx(), wb.Dy())
	var moved int
	for y := range wb.Dy() {
		for x := range wb.Dx() {
			if math.Abs(float64(got.GrayAt(x, y).Y)-float64(grayAt(want, wb.Min.X+x, wb.Min.Y+y))) > thumbLevels {
				moved++
			}
		}
	}
	share := float64(moved) / float64(wb.Dx()*wb.Dy())
	t.Logf("%.2f%% of the thumbnail differs from the golden one by more than %d grey levels", 100*share, thumbLevels)
	if share > thumbShare {
		var buf bytes.Buffer
		_ = png.Encode(&buf, got)
		gotPath := filepath.Join(t.TempDir(), "got.thumb.png")
		_ = os.WriteFile(gotPath, buf.Bytes(), 0o644)
		t.Errorf("the screenshot differs from %s: %.1f%% of its thumbnail (%s) moved, tolerance %.0f%%: inspect the screenshot, then -update",
			golden, 100*share, gotPath, 100*thumbShare)
	}
}

// The golden comparison's tolerance: at most thumbShare of the thumbnail's
// pixels may differ by more than thumbLevels grey levels.
const (
	thumbLevels = 40
	thumbShare  = 0.01
)

func grayAt(img image.Image, x, y int) uint8 {
	return color.GrayModel.Convert(img.At(x, y)).(color.Gray).Y
}

// thumbnail shrinks img to w×h grey pixels by averaging boxes; h == 0 keeps
// the aspect ratio.
func thumbnail(img image.Image, w, h int) *image.Gray {
	b := img.Bounds()
	if h == 0 {
		h = max(1, int(math.Round(float64(b.Dy())*float64(w)/float64(b.Dx()))))
	}
	out := image.NewGray(image.Rect(0, 0, w, h))
	for ty := range h {
		y0, y1 := b.Min.Y+ty*b.Dy()/h, b.Min.Y+(ty+1)*b.Dy()/h
		for tx := range w {
			x0, x1 := b.Min.X+tx*b.Dx()/w, b.Min.X+(tx+1)*b.Dx()/w
			var sum, n float64
			for y := y0; y < max(y1, y0+1); y++ {
				for x := x0; x < max(x1, x0+1); x++ {
					sum += float64(grayAt(img, x, y))
					n++
				}
			}
			out.SetGray(tx, ty, color.Gray{Y: uint8(math.Round(sum / n))})
		}
	}
	return out
}

// A row whose rollouts measured the new pods' share gets a column for it,
// tagged when a new pod got under half an even share; a row without
// gets no such column.
func TestHTMLNewPodShare(t *testing.T) {
	sum := htmlSummary()
	sum.Variants[0].Rollouts[0].Balance = &analysis.Balance{Seconds: 30, Answered: 9000, Least: 0.17,
		Pods: []analysis.PodShare{{Pod: "web-a", Answered: 750, OfEven: 0.17}, {Pod: "web-b", Answered: 8250, OfEven: 1.83}}}
	page := renderHTML(t, sum, HTMLInput{})
	for _, want := range []string{"New pods' share after it", "a new pod under half its share", "web-a 0.17, web-b 1.83; least 0.17"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page does not say %q", want)
		}
	}
	if n := strings.Count(page, "New pods' share after it"); n != 1 {
		t.Errorf("%d share columns, want 1 (only the row that measured it)", n)
	}
}
