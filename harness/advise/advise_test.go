package advise

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/droprun/droprun/harness/analysis"
	"github.com/droprun/droprun/harness/stats"
	"github.com/droprun/droprun/harness/variant"
)

var nodes = []string{"droprun-control-plane", "droprun-worker", "droprun-worker2"}

// row is a variant row with rollouts 1..rollouts, one deleted pod each,
// seen by every node: pair j of the row (in rollout, node order) is
// unrouted at delay(j) seconds after deletion. SIGTERM comes at 0.05 s,
// the listener closes 0.02 s later.
func row(name string, rollouts int, delay func(j int) float64) analysis.VariantSummary {
	v := analysis.VariantSummary{Variant: name}
	j := 0
	for r := 1; r <= rollouts; r++ {
		v.Rollouts = append(v.Rollouts, analysis.RolloutSummary{N: r})
		if delay == nil {
			continue
		}
		for _, node := range nodes {
			v.Routes = append(v.Routes, analysis.RouteGap{
				Rollout: r, Pod: fmt.Sprintf("%s-pod-%d", name, r), Node: node,
				Unrouted: delay(j), Source: analysis.RouteSourceDataPlane,
				AppTimes: true, SIGTERM: 0.05, ListenerClosed: 0.07,
			})
			j++
		}
	}
	return v
}

// ramp is delays from 0.2 s up by 1 ms a pair, with the slowest pair at
// top.
func ramp(n int, top float64) func(int) float64 {
	return func(j int) float64 {
		if j == n-1 {
			return top
		}
		return 0.2 + 0.001*float64(j)
	}
}

func summary(mode string, rows ...analysis.VariantSummary) *analysis.Summary {
	s := &analysis.Summary{Variants: rows}
	s.Cluster = analysis.ClusterInfo{Name: "droprun", Kind: true, Nodes: 3, KubeProxyMode: mode}
	return s
}

func TestAdviseEnoughPairs(t *testing.T) {
	// 300 rollouts, one deleted pod each seen by 3 nodes: 900 pairs, 300
	// deletions, enough for the 99th percentile at 95% (299).
	runs := []Run{{Dir: "runs/a", Summary: summary("iptables", row("v", 300, ramp(900, 1.23)))}}
	a, err := Advise(runs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if a.Pairs != 900 || a.Rollouts != 300 || a.PairsPerRollout != 3 || a.Deletions != 300 || a.DeletionsPerRollout != 1 {
		t.Errorf("pairs %d rollouts %d per rollout %g deletions %d per rollout %g, want 900, 300, 3, 300, 1",
			a.Pairs, a.Rollouts, a.PairsPerRollout, a.Deletions, a.DeletionsPerRollout)
	}
	// Each deletion counts its latest node: the third pair of each pod.
	if a.Latest.N != 300 || a.Latest.Max != 1.23 || math.Abs(a.Latest.Median-(0.2+0.001*(3*150-1))) > 0.002 {
		t.Errorf("latest per deletion %+v", a.Latest)
	}
	b := a.Bound
	if !b.Supported || b.Quantile != 0.99 || b.Confidence != 0.95 {
		t.Fatalf("bound %+v, want the 0.99 quantile at 0.95, supported", b)
	}
	// P(Bin(300, 0.99) ≤ 298) = 0.951: the maximum, the 300th.
	if b.Rank != 300 || b.Seconds != 1.23 {
		t.Errorf("bound rank %d = %g s, want the maximum 1.23 s", b.Rank, b.Seconds)
	}
	r := a.Recommendation
	if r.PreStopSleepSeconds != 2 || r.DrainDelaySeconds != 1.3 || r.GracePeriodSeconds != 32 {
		t.Errorf("recommendation %+v, want preStop 2, drain 1.3, grace 32", r)
	}
	// Tightening moves the bound to the second largest.
	if want := stats.PairsForRank(0.99, 0.95, 1); a.Tighten.Rollouts != want || a.Tighten.MoreRollouts != want-300 {
		t.Errorf("tighten %+v, want %d rollouts", a.Tighten, want)
	}
	if a.CleanRollouts != 300 || a.Worst.Max != 1.23 {
		t.Errorf("%d rollouts bound it, worst %+v; want 300, 1.23 s", a.CleanRollouts, a.Worst)
	}
	if len(a.ByMode) != 1 || a.ByMode[0].Name != "iptables" || a.ByMode[0].N != 900 {
		t.Errorf("by mode %+v", a.ByMode)
	}
	if len(a.ByNode) != 3 || a.ByNode[0].N != 300 {
		t.Errorf("by node %+v, want 3 nodes of 300", a.ByNode)
	}
	if a.All.Max != 1.23 || a.All.N != 900 || !(a.All.Median > 0.6 && a.All.Median < 0.7) {
		t.Errorf("distribution %+v", a.All)
	}
	// One pod per rollout: 300 margins, 20 ms SIGTERM → close.
	if m := a.Margins; m.DeletionToSIGTERM.N != 300 || math.Abs(m.SIGTERMToListenerClosed.Max-0.02) > 1e-9 {
		t.Errorf("margins %+v", m)
	}
	var out bytes.Buffer
	if err := a.WriteText(&out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"900 (pod, node) pairs from 300 rollouts (3 pairs per rollout) in runs/a",
		"with 95% confidence, in 99% of rollouts every node stops routing for every deleted pod within 1.230 s of its deletion",
		"the 300th smallest of 300 rollouts' worst delays",
		"latest node per deletion",
		"preStop.sleep.seconds: 2",
		"a drain delay of 1.3s",
		"terminationGracePeriodSeconds: at least 32",
		"kube-proxy iptables",
		"node droprun-worker2",
		"SIGTERM → listener closed (app): median 20 ms",
		"To tighten:",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "missing") {
		t.Errorf("no pair is missing, text says:\n%s", out.String())
	}
}

// A SIGTERM that came sooner after the deletion droprun saw than the
// deleted pods' preStop sleep lasts shows that their kubelet began first:
// the delay a preStop must cover counts from the kubelet's start. The
// sweep run of the nftables e2e: a 2 s sleep, SIGTERM 1.55 s after the
// deletion, the last node unrouted at 1.76 s, so the pod needed 2.21 s
// (and the 2 s sleep dropped requests).
func TestAdviseKubeletFirst(t *testing.T) {
	two := int64(2)
	v := row("v", 300, ramp(900, 1.757))
	for k := range v.Rollouts {
		v.Rollouts[k].LivePods = &variant.PodFacts{PreStop: "sleep", PreStopSeconds: &two}
	}
	for k := range v.Routes {
		v.Routes[k].SIGTERM, v.Routes[k].ListenerClosed = 2.01, 2.02
		if v.Routes[k].Rollout == 300 {
			v.Routes[k].SIGTERM, v.Routes[k].ListenerClosed = 1.546, 1.547
		}
	}
	a, err := Advise([]Run{{Dir: "runs/a", Summary: summary("nftables", v)}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(a.Bound.Seconds-2.211) > 1e-9 || a.Recommendation.PreStopSleepSeconds != 3 {
		t.Errorf("bound %g s, preStop %d: want 1.757 + 0.454 = 2.211 s, a 3 s sleep", a.Bound.Seconds, a.Recommendation.PreStopSleepSeconds)
	}
	if a.All.Max != a.Bound.Seconds || a.Latest.Max != a.Bound.Seconds {
		t.Errorf("distributions %+v, %+v: want the led delays in them too", a.All, a.Latest)
	}
	if want := "1 of 300 deleted pods got SIGTERM sooner after the deletion droprun saw than their preStop hook lasts (by up to 454 ms)"; len(a.Notes) != 1 || !strings.HasPrefix(a.Notes[0], want) {
		t.Errorf("notes %q, want %q", a.Notes, want)
	}
	// Without the hook's length, a SIGTERM after the deletion shows nothing.
	for k := range v.Rollouts {
		v.Rollouts[k].LivePods = &variant.PodFacts{PreStop: "httpGet"}
	}
	a, err = Advise([]Run{{Dir: "runs/a", Summary: summary("nftables", v)}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if a.Bound.Seconds != 1.757 || len(a.Notes) != 0 {
		t.Errorf("hook of unknown length: bound %g s, notes %q; want 1.757 s and none", a.Bound.Seconds, a.Notes)
	}
}

func TestAdviseTooFewPairs(t *testing.T) {
	// 10 rollouts × 3 = 30 pairs, 10 deletions: they bound only the
	// 0.05^(1/10) = 74.1 % quantile.
	runs := []Run{{Dir: "runs/a", Summary: summary("", row("v", 10, ramp(30, 0.9)))}}
	a, err := Advise(runs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	b := a.Bound
	if b.Supported || math.Abs(b.Quantile-stats.MaxSupportedQuantile(10, 0.95)) > 1e-12 || b.Rank != 10 || b.Seconds != 0.9 {
		t.Errorf("bound %+v, want the maximum 0.9 s for the 74.1 %% quantile", b)
	}
	if a.Tighten.Rollouts != 299 || a.Tighten.MoreRollouts != 289 {
		t.Errorf("tighten %+v, want 299 rollouts, 289 more", a.Tighten)
	}
	if r := a.Recommendation; r.PreStopSleepSeconds != 1 || r.DrainDelaySeconds != 0.9 {
		t.Errorf("recommendation %+v, want preStop 1, drain 0.9", r)
	}
	var out bytes.Buffer
	if err := a.WriteText(&out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"too few rollouts for the 99th percentile at 95% confidence: 10 rollouts bound only the 74.1 % quantile, by their worst delay: 0.900 s (with that delay, at 95%, at least 74.1% of rollouts leave no pod routed to after it stops)",
		"To reach the 99th percentile: 299 rollouts, 289 more",
		"kube-proxy mode not recorded",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, out.String())
		}
	}
}

func TestAdviseMissingPairs(t *testing.T) {
	// The slowest node is never seen in rollouts 1–4: those pairs are
	// missing and the bound is over the others.
	v := row("v", 120, func(j int) float64 { return 0.3 + 0.001*float64(j%7) })
	for i := range v.Routes {
		if v.Routes[i].Rollout <= 4 && v.Routes[i].Node == nodes[2] {
			v.Routes[i].Unrouted = -1
		}
	}
	// A second run with kube-proxy-sync pairs.
	w := row("w", 2, func(int) float64 { return 0.5 })
	for i := range w.Routes {
		w.Routes[i].Source = analysis.RouteSourceKubeProxy
	}
	a, err := Advise([]Run{{Dir: "runs/a", Summary: summary("iptables", v)}, {Dir: "runs/b", Summary: summary("nftables", w)}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Missing) != 4 || a.Pairs != 360-4+6 {
		t.Errorf("missing %d, pairs %d; want 4 and 362", len(a.Missing), a.Pairs)
	}
	// Rollouts 1–4 lose their deletions; 116 + 2 remain.
	if a.Incomplete != 4 || a.Deletions != 118 || a.IncompleteRollouts != 4 || a.CleanRollouts != 118 {
		t.Errorf("incomplete %d, deletions %d, rollouts %d incomplete and %d bounding; want 4, 118, 4, 118", a.Incomplete, a.Deletions, a.IncompleteRollouts, a.CleanRollouts)
	}
	if a.Missing[0].Run != "runs/a" || a.Missing[0].Node != nodes[2] {
		t.Errorf("missing[0] = %+v", a.Missing[0])
	}
	if a.Bound.Seconds > 0.5 || a.Bound.Seconds < 0 {
		t.Errorf("bound %g s: it must be one of the seen pairs", a.Bound.Seconds)
	}
	if a.Sources[analysis.RouteSourceKubeProxy] != 6 || len(a.ByMode) != 2 {
		t.Errorf("sources %v, modes %+v", a.Sources, a.ByMode)
	}
	var out bytes.Buffer
	if err := a.WriteText(&out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"missing: 4 pairs whose node's stop of routing was not seen; a missing pair could be the slowest, and the bound excludes their 4 deletions",
		"runs/a: v rollout 1, pod v-pod-1 on node droprun-worker2",
		"6 seen as kube-proxy's first sync after the endpoint change (polled: the poll interval's resolution)",
		"6 of 362 pairs were seen through kube-proxy's sync metric, polled",
		"kube-proxy nftables",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, out.String())
		}
	}
}

func TestAdviseNoRouteData(t *testing.T) {
	old := summary("iptables", analysis.VariantSummary{Variant: "v", Rollouts: []analysis.RolloutSummary{{N: 1}}})
	_, err := Advise([]Run{{Dir: "runs/old", Summary: old}}, Options{})
	var nd *NoRouteDataError
	if !errors.As(err, &nd) || !strings.Contains(err.Error(), "no (pod, node) route data in runs/old") || !strings.Contains(err.Error(), "kind cluster") {
		t.Errorf("err = %v, want a NoRouteDataError naming runs/old", err)
	}
	// Pairs recorded but none seen: still nothing to bound.
	unseen := row("v", 1, func(int) float64 { return -1 })
	_, err = Advise([]Run{{Dir: "runs/x", Summary: summary("", unseen)}}, Options{})
	if !errors.As(err, &nd) || nd.Missing != 3 || !strings.Contains(err.Error(), "3 pairs recorded, none seen") {
		t.Errorf("err = %v, want a NoRouteDataError with 3 missing", err)
	}
}

func TestOptionsValidate(t *testing.T) {
	for _, o := range []Options{{Quantile: 1}, {Quantile: -0.5}, {Confidence: 1.5}, {Quantile: math.NaN()}} {
		if _, err := Advise(nil, o); err == nil {
			t.Errorf("Advise with %+v: no error", o)
		}
	}
	if err := (Options{Quantile: 0.9, Confidence: 0.9}).Validate(); err != nil {
		t.Error(err)
	}
}

func TestRecommend(t *testing.T) {
	for _, tc := range []struct {
		d       float64
		pre     int64
		drain   float64
		graceAt int64
	}{
		{2.0, 2, 2.0, 32}, // exact at a step: not bumped
		{1.3, 2, 1.3, 32},
		{1.301, 2, 1.4, 32},
		{0.04, 1, 0.1, 31}, // at least 1 s and 100 ms
		{7.25, 8, 7.3, 38},
	} {
		r := recommend(tc.d, Dist{})
		if r.PreStopSleepSeconds != tc.pre || r.DrainDelaySeconds != tc.drain || r.GracePeriodSeconds != tc.graceAt {
			t.Errorf("recommend(%g) = %+v, want preStop %d drain %g grace %d", tc.d, r, tc.pre, tc.drain, tc.graceAt)
		}
	}
	// An app that took up to 40 s from SIGTERM to exit needs them after
	// the hook: 3 + 40 + 1 (whole seconds) + 5 of headroom. One that took
	// 2 s keeps the default 30.
	if r := recommend(2.5, Dist{N: 4, Max: 40}); r.GracePeriodSeconds != 49 || !strings.Contains(r.GraceBasis, "longest SIGTERM → exit") {
		t.Errorf("slow exit: %+v", r)
	}
	if r := recommend(2.5, Dist{N: 4, Max: 2}); r.GracePeriodSeconds != 33 || !strings.Contains(r.GraceBasis, "more than its longest") {
		t.Errorf("quick exit: %+v", r)
	}
}

func TestClean(t *testing.T) {
	for _, tc := range []struct {
		failures uint64
		floor    float64
		clean    bool
		allowed  uint64
	}{
		{0, 0, true, 0},
		{1, 0, false, 0}, // a clean control allows nothing
		{2, 2.1, true, 2},
		{3, 2.1, false, 2},
	} {
		if c, al := Clean(tc.failures, tc.floor); c != tc.clean || al != tc.allowed {
			t.Errorf("Clean(%d, %g) = %v, %d; want %v, %d", tc.failures, tc.floor, c, al, tc.clean, tc.allowed)
		}
	}
}

// sweepRow is a row of sweep group "prestop" sweeping field at value, 5
// rollouts with failures measurable failures, and no pairs (routed is the
// row that has them: D = 1.23 s).
func sweepRow(field, value string, number float64, failures uint64, floor float64) analysis.VariantSummary {
	v := row("prestop-"+value, 5, nil)
	v.Routes = nil
	v.Sweep = &analysis.SweepPoint{Field: field, Value: value, Number: number, Group: "prestop"}
	v.Measurable = analysis.Tally{Requests: 10000, Failures: failures}
	v.ExpectedFloor = floor
	return v
}

// routed is a row of 300 pairs that bound D at 1.23 s: preStop 2, drain
// 1.3 s.
func routed() analysis.VariantSummary { return row("v", 100, ramp(300, 1.23)) }

func TestAdviseSweep(t *testing.T) {
	// The pairs bound D at 1.23 s: preStop 2, drain 1.3 s.
	tests := []struct {
		name    string
		rows    []analysis.VariantSummary
		verdict string
		from    float64
		text    string
	}{
		{
			name: "clean from the recommendation",
			rows: []analysis.VariantSummary{
				sweepRow(FieldPreStop, "0", 0, 40, 0), sweepRow(FieldPreStop, "1", 1, 5, 0.2),
				sweepRow(FieldPreStop, "2", 2, 1, 1.4), sweepRow(FieldPreStop, "3", 3, 0, 0),
			},
			verdict: Agrees, from: 2,
			text: "AGREES: clean from 2, the recommended value",
		},
		{
			name: "clean from below the recommendation",
			rows: []analysis.VariantSummary{
				sweepRow(FieldPreStop, "0", 0, 40, 0), sweepRow(FieldPreStop, "1", 1, 0, 0), sweepRow(FieldPreStop, "5", 5, 0, 0),
			},
			verdict: Conservative, from: 1,
			text: "CONSERVATIVE: clean from 1, below the recommended 2: the sweep agrees, and the bound is conservative",
		},
		{
			name: "drops at the recommendation",
			rows: []analysis.VariantSummary{
				sweepRow(FieldPreStop, "1", 1, 40, 0), sweepRow(FieldPreStop, "2", 2, 9, 1.5), sweepRow(FieldPreStop, "4", 4, 0, 0),
			},
			verdict: Disagrees, from: 4,
			text: "!! DISAGREES: preStopSeconds 2, at or above the recommended 2, dropped 9 requests (the floor allows 1) in 5 rollouts: the recommendation would have dropped requests; the sweep was clean from 4",
		},
		{
			name: "a drain delay sweep that never got clean",
			rows: []analysis.VariantSummary{
				sweepRow(FieldDrainDelay, "500ms", 0.5, 30, 0), sweepRow(FieldDrainDelay, "1s", 1, 10, 0),
			},
			verdict: Untested,
			text:    "UNTESTED: every swept value up to 1s dropped requests, all below the recommended 1.3s",
		},
		{
			name: "a gap around the recommendation",
			rows: []analysis.VariantSummary{
				sweepRow(FieldPreStop, "0", 0, 40, 0), sweepRow(FieldPreStop, "1", 1, 3, 0), sweepRow(FieldPreStop, "5", 5, 0, 0),
			},
			verdict: Untested, from: 5,
			text: "clean from 5, above the recommended 2; 1 dropped, and the sweep has no value between",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// The introducing row of a variant measures the variant before
			// it: never a swept value, even with dropped requests.
			intro := sweepRow(tc.rows[0].Sweep.Field, "9", 9, 1000, 0)
			intro.Variant = "prestop-9/introducing"
			rows := append([]analysis.VariantSummary{routed()}, append(tc.rows, intro)...)
			a, err := Advise([]Run{{Dir: "runs/sweep", Summary: summary("iptables", rows...)}}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if len(a.Sweeps) != 1 {
				t.Fatalf("sweeps %+v, want one", a.Sweeps)
			}
			s := a.Sweeps[0]
			if s.Verdict != tc.verdict || s.CleanFrom != tc.from || len(s.Values) != len(tc.rows) {
				t.Errorf("sweep %+v: want %s from %g over %d values", s, tc.verdict, tc.from, len(tc.rows))
			}
			var out bytes.Buffer
			if err := a.WriteText(&out); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out.String(), tc.text) {
				t.Errorf("text lacks %q:\n%s", tc.text, out.String())
			}
			t.Logf("advice:\n%s", out.String())
		})
	}
}

// TestAdviseSweepAcrossRuns: two runs of one sweep add up per value, and
// rows sweeping another field are not checked.
func TestAdviseSweepAcrossRuns(t *testing.T) {
	other := sweepRow("replicas", "3", 3, 50, 0)
	a, err := Advise([]Run{
		{Dir: "runs/1", Summary: summary("iptables", routed(), sweepRow(FieldPreStop, "2", 2, 1, 1.1), other)},
		{Dir: "runs/2", Summary: summary("iptables", sweepRow(FieldPreStop, "2", 2, 1, 1.1))},
	}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Sweeps) != 1 {
		t.Fatalf("sweeps %+v, want one", a.Sweeps)
	}
	v := a.Sweeps[0].Values
	// 2 failures against a floor of 1.1 + 1.1 = 2.2: clean.
	if len(v) != 1 || v[0].Rollouts != 10 || v[0].Failures != 2 || v[0].Allowed != 2 || !v[0].Clean {
		t.Errorf("values %+v, want one clean value over 10 rollouts", v)
	}
	if got := a.Sweeps[0].Runs; len(got) != 2 {
		t.Errorf("runs %v, want both", got)
	}
}

// TestAdviceJSON: the advice encodes (no NaN anywhere) with its keys.
func TestAdviceJSON(t *testing.T) {
	v := row("v", 3, ramp(9, 0.7))
	for i := range v.Routes {
		v.Routes[i].AppTimes, v.Routes[i].SIGTERM, v.Routes[i].ListenerClosed = false, -1, -1
	}
	a, err := Advise([]Run{{Dir: "runs/a", Summary: summary("ipvs", v)}}, Options{Quantile: 0.9, Confidence: 0.9})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	var back map[string]any
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"pairs", "bound", "recommendation", "margins", "tighten", "byKubeProxyMode", "quantile", "confidence"} {
		if _, ok := back[k]; !ok {
			t.Errorf("JSON lacks %q: %s", k, b)
		}
	}
	if rec := back["recommendation"].(map[string]any); rec["preStopSleepSeconds"] != 1.0 {
		t.Errorf("recommendation %v", rec)
	}
}

// TestAdviseThroughAFront: a run through Traefik, which picks the pod
// itself, is bounded per hop: the nodes' rules and the Traefik pods' own
// lists, each over its own pairs; the larger bound sets the
// recommendation, and the advice names that hop. A direct run has one
// hop, and says nothing of hops.
func TestAdviseThroughAFront(t *testing.T) {
	// withFront adds to each deletion of v a pair per Traefik pod, the
	// slowest at top seconds.
	withFront := func(v analysis.VariantSummary, top float64) analysis.VariantSummary {
		for r := 1; r <= len(v.Rollouts); r++ {
			for i, front := range []string{"droprun-traefik-a", "droprun-traefik-b"} {
				d := 0.3 + 0.01*float64(r)
				if r == len(v.Rollouts) && i == 1 {
					d = top
				}
				// Each stop read from the front's API to within 40 ms,
				// but droprun-traefik-b's to within 300 ms, inside
				// which it started 3r requests (the first, 3, is the
				// widest: the others are no wider).
				g := analysis.RouteGap{Rollout: r, Pod: fmt.Sprintf("%s-pod-%d", v.Variant, r), Node: front,
					Unrouted: d, UnroutedResolution: 0.04 + 0.26*float64(i), Source: analysis.RouteSourceFront, AppTimes: true, SIGTERM: 0.05, ListenerClosed: 0.07}
				if i == 1 {
					n := 3 * r
					g.UnroutedRequests = &n
				}
				v.Routes = append(v.Routes, g)
			}
		}
		return v
	}
	for _, c := range []struct {
		name     string
		front    float64 // the front's slowest pair; the nodes' is 0.5 s
		wantHop  string
		wantStop int64
	}{{"front slower", 2.3, "traefik", 3}, {"nodes slower", 0.45, HopKubeProxy, 1}} {
		t.Run(c.name, func(t *testing.T) {
			s := summary("iptables", withFront(row("v", 10, ramp(30, 0.5)), c.front))
			s.Traffic.Target = "traefik"
			a, err := Advise([]Run{{Dir: "runs/a", Summary: s}}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if len(a.Hops) != 2 || a.Hops[0].Name != HopKubeProxy || a.Hops[1].Name != "traefik" {
				t.Fatalf("hops %+v, want kube-proxy then traefik", a.Hops)
			}
			nodes, front := a.Hops[0], a.Hops[1]
			if nodes.Pairs != 30 || nodes.Deletions != 10 || nodes.Latest.Max != 0.5 || len(nodes.ByMode) != 1 {
				t.Errorf("kube-proxy hop: %d pairs, %d deletions, latest max %g, modes %v; want 30, 10, 0.5, one", nodes.Pairs, nodes.Deletions, nodes.Latest.Max, nodes.ByMode)
			}
			if front.Pairs != 20 || front.Deletions != 10 || front.Latest.Max != c.front || len(front.ByNode) != 2 || front.ByMode != nil || front.Sources[analysis.RouteSourceFront] != 20 {
				t.Errorf("traefik hop: %d pairs, %d deletions, latest max %g, %d front pods, modes %v, sources %v; want 20, 10, %g, 2, none, 20 front-api",
					front.Pairs, front.Deletions, front.Latest.Max, len(front.ByNode), front.ByMode, front.Sources, c.front)
			}
			if r := front.Resolution; r == nil || r.N != 20 || r.Max != 0.3 || nodes.Resolution != nil {
				t.Errorf("traefik hop's stops placed to within %+v (the nodes' %+v); want 20 stops, the worst to within 300 ms, the nodes' exact", r, nodes.Resolution)
			}
			if n := front.WidestRequests; n == nil || *n != 3 || nodes.WidestRequests != nil {
				t.Errorf("traefik hop's widest stop holds %v requests (the nodes' %v); want 3, and none for the nodes", n, nodes.WidestRequests)
			}
			// 10 deletions bound only a low quantile, by their maximum.
			if a.Name != c.wantHop || a.Bound.Seconds != max(0.5, c.front) || a.PreStopSleepSeconds != c.wantStop {
				t.Errorf("set by %s at %g s, preStop %d; want %s, %g s, %d", a.Name, a.Bound.Seconds, a.PreStopSleepSeconds, c.wantHop, max(0.5, c.front), c.wantStop)
			}
			if a.Margins.DeletionToSIGTERM.N != 10 {
				t.Errorf("margins over %d pods, want 10: each deleted pod once, whichever hop saw it", a.Margins.DeletionToSIGTERM.N)
			}
			var b bytes.Buffer
			if err := a.WriteText(&b); err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{
				"Measured, hop kube-proxy: when each node stopped routing",
				"Measured, hop traefik: when each traefik pod stopped sending new requests",
				"20 (pod, traefik pod) pairs",
				"traefik pod droprun-traefik-b",
				"latest traefik pod per deletion",
				"each of 20 stops was placed to within",
				"300 ms (max)",
				"the front pod started 3 request(s) inside the widest bracket (300 ms)",
				"The path: hop " + c.wantHop + " sets the bound",
				"Recommendation (D = " + secs(a.Bound.Seconds) + ", hop " + c.wantHop + "'s bound)",
			} {
				if !strings.Contains(b.String(), want) {
					t.Errorf("text lacks %q:\n%s", want, b.String())
				}
			}
			var j bytes.Buffer
			if err := a.WriteJSON(&j); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(j.String(), `"hop": "`+c.wantHop+`"`) || !strings.Contains(j.String(), `"hops": [`) {
				t.Errorf("JSON lacks the hop that sets the bound, or the hops:\n%s", j.String())
			}
		})
	}
	a, err := Advise([]Run{{Dir: "runs/a", Summary: summary("iptables", row("v", 10, ramp(30, 0.5)))}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := a.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if a.Hops != nil || a.Name != HopKubeProxy || strings.Contains(b.String(), "hop") {
		t.Errorf("a direct run: hops %v, set by %q, text:\n%s\nwant one hop, kube-proxy, unnamed in the text", a.Hops, a.Name, b.String())
	}
}

// TestAdvisePerRolloutCoverage: rollouts of 3 deletions whose delays share
// the rollout's moment (a lognormal with correlation 0, 0.5, 0.8 between
// the deletions of one rollout). The order-statistic bound over rollouts'
// worst delays covers the quantile it states of the rollouts' worst
// delay at least 95 % of the time whatever the correlation; the bound
// that took each deletion as independent, on the quantile of deletions,
// falls below 95 % once they are correlated.
func TestAdvisePerRolloutCoverage(t *testing.T) {
	const trials, n, per, q = 4000, 40, 3, 0.9
	for _, corr := range []float64{0, 0.5, 0.8} {
		rng := rand.New(rand.NewPCG(41, uint64(corr*10)))
		draw := func() (worst float64, dels []float64) {
			shared := rng.NormFloat64()
			for range per {
				d := math.Exp(0.5 * (math.Sqrt(corr)*shared + math.Sqrt(1-corr)*rng.NormFloat64()))
				dels = append(dels, d)
				worst = max(worst, d)
			}
			return worst, dels
		}
		// The true quantiles, from 200,000 rollouts.
		var ws, ds []float64
		for range 200_000 {
			w, d := draw()
			ws, ds = append(ws, w), append(ds, d...)
		}
		slices.Sort(ws)
		slices.Sort(ds)
		var rolloutHits, deletionHits, rolloutTrials int
		for range trials {
			var worst, dels []float64
			for range n {
				w, d := draw()
				worst, dels = append(worst, w), append(dels, d...)
			}
			slices.Sort(worst)
			slices.Sort(dels)
			b, _ := bound(worst, Options{Quantile: q, Confidence: 0.95})
			rolloutTrials++
			if b.Seconds >= stats.SampleQuantile(ws, b.Quantile) {
				rolloutHits++
			}
			if d, _, ok := stats.UpperQuantileBound(dels, q, 0.95); ok && d >= stats.SampleQuantile(ds, q) {
				deletionHits++
			}
		}
		over, per := float64(rolloutHits)/float64(rolloutTrials), float64(deletionHits)/trials
		t.Logf("correlation %.1f: over rollouts %.1f %%, per deletion %.1f %%", corr, 100*over, 100*per)
		if over < 0.95 {
			t.Errorf("correlation %.1f: the bound over rollouts covers %.1f %%, below 95 %%", corr, 100*over)
		}
		if corr >= 0.5 && per >= 0.95 {
			t.Errorf("correlation %.1f: the per-deletion bound covers %.1f %%; the test no longer shows what the rollout as the unit fixes", corr, 100*per)
		}
	}
}
