package report

import (
	"fmt"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/droprun/droprun/harness/analysis"
	"github.com/droprun/droprun/harness/traffic"
)

// TestShippedFronts holds the table "Through Traefik and Caddy" of
// results/README.md to the shipped runs (results/examples/fronts, which
// re-derive from their raw data: TestShippedExamplesRederive): clean
// control windows through both fronts; no-prestop drops 502s in every
// rollout, each drop charged to the front pod, to the way before it, or
// to the rig where the front's log says it answered 2xx; no-prestop's
// split into race windows, the rig's (excused, none) and unexplained;
// through Caddy every 502 it logged was a refused connection to the pod
// (its error log); the 5 s preStop sleep and graceful-drain drop
// nothing; the hop that sets the advised bound (Traefik's own list
// through Traefik, the nodes' rules through Caddy); and how closely each
// front's stops were placed: every one within 100 ms, or, where not, in a
// pause of its front pod (fewer requests started inside the bracket than
// the pod starts in 100 ms on average), as the e2e tests hold them
// (checkPausedStops).
func TestShippedFronts(t *testing.T) {
	type row struct {
		drops, excused, race, unexplained uint64
		answered                          uint64 // charged to HopFrontAnswered
		late, lost                        uint64 // of those explained, WhyFrontLate and WhyFrontLost
	}
	for _, tc := range []struct {
		run, front          string
		noPrestop, graceful row
		boundHop            string
		// placed is how closely the front's stops were placed (median,
		// p90, max: advise.txt), and widest the requests the front pod
		// started inside the widest bracket.
		placed string
		widest int
	}{
		{"fronts-traefik-newconn", "traefik", row{1125, 0, 1111, 14, 0, 0, 0}, row{}, "hop traefik sets the bound, 3.029 s", "12 ms (median), 30 ms (p90), 31 ms (max)", 7},
		{"fronts-traefik-keepalive", "traefik", row{1496, 0, 1496, 0, 0, 0, 0}, row{}, "hop traefik sets the bound, 2.532 s", "14 ms (median), 26 ms (p90), 27 ms (max)", 3},
		{"fronts-caddy-newconn", "caddy", row{228, 0, 228, 0, 0, 0, 0}, row{}, "hop kube-proxy sets the bound, 2.204 s", "6 ms (median), 25 ms (p90), 119 ms (max)", 1},
		{"fronts-caddy-keepalive", "caddy", row{531, 0, 531, 0, 0, 0, 0}, row{}, "hop kube-proxy sets the bound, 2.494 s", "2 ms (median), 78 ms (p90), 90 ms (max)", 1},
	} {
		t.Run(tc.run, func(t *testing.T) {
			sum := shipped(t, "fronts/"+tc.run)
			if sum.Traffic.Target != tc.front || sum.Traffic.Rate != 300 || sum.Traffic.Rollouts != 3 {
				t.Fatalf("traffic %+v, want %s at 300 req/s, 3 rollouts", sum.Traffic, tc.front)
			}
			rows := map[string]analysis.VariantSummary{}
			for _, v := range sum.Variants {
				rows[v.Variant] = v
				if len(v.Suspect) > 0 {
					t.Errorf("%s is suspect: %q; results/README.md says no row is", v.Variant, v.Suspect)
				}
				if v.Control.Failures > 0 || v.Control.Requests < 3000 {
					t.Errorf("%s: control %d failures in %d, want clean", v.Variant, v.Control.Failures, v.Control.Requests)
				}
			}
			split := func(v analysis.VariantSummary) row {
				var r row
				r.drops, r.excused = v.Drops, v.Excused
				if e := v.Explained; e != nil {
					r.race, r.unexplained = e.Explained, e.Unexplained
					r.late, r.lost = e.Why[analysis.WhyFrontLate], e.Why[analysis.WhyFrontLost]
					if e.Explained+e.Cut+v.Excused+e.Unexplained != v.Drops {
						t.Errorf("%s: explained %+v and %d excused do not add up to its %d drops", v.Variant, e, v.Excused, v.Drops)
					}
				}
				var byHop uint64
				for _, ro := range v.Rollouts {
					for h, n := range ro.ByHop {
						byHop += n
						switch {
						case h == analysis.HopFrontAnswered:
							r.answered += n
						case strings.HasPrefix(h, "front pod "+tc.front+"-"), h == analysis.HopBeforeFront:
						default:
							t.Errorf("%s rollout %d: %d drops charged to %q, want the %s pod, the way before it or the rig", v.Variant, ro.N, n, h, tc.front)
						}
					}
				}
				if byHop != v.Drops {
					t.Errorf("%s: %d drops by hop, want all %d", v.Variant, byHop, v.Drops)
				}
				return r
			}
			// One rollout short of CPU (Caddy, new connections, the 5 s
			// preStop's first: a node 1 s without CPU), and it dropped
			// nothing.
			short := 0
			for _, v := range sum.Variants {
				for _, ro := range v.Rollouts {
					if ro.Rig != nil && ro.Rig.Saturated {
						short++
						if ro.Window.Failures > 0 {
							t.Errorf("%s rollout %d: short of CPU (%s) and dropped %d", v.Variant, ro.N, ro.Rig, ro.Window.Failures)
						}
					}
				}
			}
			if short != 0 {
				t.Errorf("%d rollouts short of CPU, want none", short)
			}
			checkShippedPauses(t, sum)
			np := rows["no-prestop"]
			// results/README.md: the times-shifted baseline of Traefik's
			// new-connection no-prestop, and its bursts.
			if c := np.Explained.Chance; tc.run == "fronts-traefik-newconn" && (c == nil || math.Round(c.TimesShifted) != 117 || c.Bursts != 5 || c.BurstsExplained != 5 || math.Round(c.PShifted*1000) != 5) {
				t.Errorf("no-prestop's chance baselines %+v; want 117 with the times shifted, 5 of 5 bursts in a window, p = 0.005", c)
			}
			if got := split(np); got != tc.noPrestop || np.Classes[traffic.Class502] == 0 || np.RolloutsWithDrops != 3 {
				t.Errorf("no-prestop: %+v (classes %v) in %d rollouts, want %+v with 502s in all 3", got, np.Classes, np.RolloutsWithDrops, tc.noPrestop)
			}
			if e := np.Explained; tc.front == "caddy" && (e == nil || len(e.FrontErrors) != 1 || e.FrontErrors[traffic.ClassRefused] != np.Classes[traffic.Class502]) {
				t.Errorf("no-prestop through Caddy: %d 502s, the front's errors %v; want every one a refusal", np.Classes[traffic.Class502], e)
			}
			if v := rows["prestop-sleep-action"]; v.Drops != 0 || v.WindowRequests == 0 {
				t.Errorf("prestop-sleep-action (5 s): %d drops in %d, want none", v.Drops, v.WindowRequests)
			}
			if got := split(rows["graceful-drain"]); got != tc.graceful {
				t.Errorf("graceful-drain: %+v, want %+v", got, tc.graceful)
			}
			advice, err := os.ReadFile("../../results/examples/fronts/" + tc.run + "/advise.txt")
			if err != nil || !strings.Contains(string(advice), "The path: "+tc.boundHop) {
				t.Errorf("advise.txt (%v) lacks %q", err, "The path: "+tc.boundHop)
			}
			if placed := "each of 18 stops was placed to within " + tc.placed; !strings.Contains(string(advice), placed) {
				t.Errorf("advise.txt lacks %q", placed)
			}
			if widest := fmt.Sprintf("the front pod started %d request(s) inside the widest bracket", tc.widest); !strings.Contains(string(advice), widest) {
				t.Errorf("advise.txt lacks %q", widest)
			}
			// The hops' delays of results/README.md's second table (every
			// pair, the nodes' rules, then the front's list).
			words := strings.Join(strings.Fields(string(advice)), " ")
			for _, h := range hopDelays[tc.run] {
				if !strings.Contains(words, h) {
					t.Errorf("advise.txt lacks %q", h)
				}
			}
			// The first table's window requests and no-prestop's timeouts.
			for k, v := range sum.Variants {
				if want := windowRequests[tc.run][k]; v.WindowRequests != want {
					t.Errorf("%s: %d window requests, want %d", v.Variant, v.WindowRequests, want)
				}
			}
			if got, want := np.Classes[traffic.ClassTimeout], npTimeouts[tc.run]; got != want {
				t.Errorf("no-prestop: %d timeouts, want %d", got, want)
			}
		})
	}
}

// hopDelays, windowRequests (by row, in the scenario's order: no-prestop,
// the 5 s preStop, graceful-drain) and npTimeouts are results/README.md's
// numbers for the shipped fronts' runs (TestShippedFronts).
var (
	hopDelays = map[string][]string{
		"fronts-traefik-newconn":   {"all pairs n=54 median 968 ms p90 1.54 s max 2.53 s", "all pairs n=18 median 2.02 s p90 2.37 s max 3.03 s"},
		"fronts-traefik-keepalive": {"all pairs n=54 median 958 ms p90 1.39 s max 1.71 s", "all pairs n=18 median 2.01 s p90 2.49 s max 2.53 s"},
		"fronts-caddy-newconn":     {"all pairs n=54 median 1.09 s p90 1.90 s max 2.20 s", "all pairs n=18 median 614 ms p90 914 ms max 959 ms"},
		"fronts-caddy-keepalive":   {"all pairs n=54 median 801 ms p90 1.58 s max 2.49 s", "all pairs n=18 median 826 ms p90 1.37 s max 1.43 s"},
	}
	windowRequests = map[string][]uint64{
		"fronts-traefik-newconn":   {9437, 14677, 13407},
		"fronts-traefik-keepalive": {8945, 14550, 13518},
		"fronts-caddy-newconn":     {13520, 15703, 17169},
		"fronts-caddy-keepalive":   {12400, 14876, 15819},
	}
	npTimeouts = map[string]uint64{"fronts-traefik-newconn": 751, "fronts-traefik-keepalive": 1051, "fronts-caddy-newconn": 0, "fronts-caddy-keepalive": 124}
)

// TestShippedSweepTraefik holds "A sweep through Traefik" of
// results/README.md to the shipped run (results/examples/fronts/
// sweep-traefik, which re-derives from its raw data): the native preStop
// sleep at 0-4 s, 3 rollouts each, clean controls; per row the drops
// split into race windows, the rig's (excused) and unexplained, and
// charged to the Traefik pod or, where Traefik's log answered them 2xx,
// to the rig; drops fall with the sleep to none at 3 s and stay none at
// 4 s, and advise says the sweep agrees with its bound (Traefik's hop,
// 2.784 s: preStop 3 s).
func TestShippedSweepTraefik(t *testing.T) {
	sum := shipped(t, "fronts/sweep-traefik")
	if sum.Traffic.Target != "traefik" || sum.Traffic.Rate != 300 || sum.Traffic.Rollouts != 3 {
		t.Fatalf("traffic %+v, want traefik at 300 req/s, 3 rollouts", sum.Traffic)
	}
	// answered: charged to HopFrontAnswered; of those explained, late
	// (WhyFrontLate), lost (WhyFrontLost) and too close to the client's
	// failure to tell (WhyFrontAnswered).
	type row struct{ drops, excused, race, unexplained, answered, late, lost, close uint64 }
	want := map[string]row{
		"0": {1188, 0, 1162, 26, 0, 0, 0, 0},
		"1": {525, 0, 525, 0, 0, 0, 0, 0},
		"2": {92, 0, 91, 1, 0, 0, 0, 0},
		"3": {},
		"4": {},
	}
	if len(sum.Variants) != len(want) {
		t.Fatalf("%d rows, want %d", len(sum.Variants), len(want))
	}
	for _, v := range sum.Variants {
		if v.Sweep == nil || v.Sweep.Field != "preStopSeconds" {
			t.Fatalf("%s: sweep %+v, want preStopSeconds", v.Variant, v.Sweep)
		}
		if v.Control.Failures > 0 || v.Control.Requests < 1500 || v.WindowRequests < 7000 {
			t.Errorf("preStop %s s: control %d/%d, %d window requests; want a clean control and 3 rollouts' windows", v.Sweep.Value, v.Control.Failures, v.Control.Requests, v.WindowRequests)
		}
		for _, ro := range v.Rollouts {
			if ro.Rig != nil && ro.Rig.Saturated {
				t.Errorf("preStop %s s rollout %d: short of CPU (%s); results/README.md says none was", v.Sweep.Value, ro.N, ro.Rig)
			}
		}
		// The table's window requests and timeouts.
		windows := map[string]uint64{"0": 7566, "1": 9013, "2": 9633, "3": 10586, "4": 12030}
		timeouts := map[string]uint64{"0": 926, "1": 299, "2": 51}
		if v.WindowRequests != windows[v.Sweep.Value] || v.Classes[traffic.ClassTimeout] != timeouts[v.Sweep.Value] {
			t.Errorf("preStop %s s: %d window requests, %d timeouts; want %d, %d", v.Sweep.Value, v.WindowRequests, v.Classes[traffic.ClassTimeout], windows[v.Sweep.Value], timeouts[v.Sweep.Value])
		}
		got := row{drops: v.Drops, excused: v.Excused}
		if e := v.Explained; e != nil {
			got.race, got.unexplained = e.Explained, e.Unexplained
			got.late, got.lost, got.close = e.Why[analysis.WhyFrontLate], e.Why[analysis.WhyFrontLost], e.Why[analysis.WhyFrontAnswered]
			if e.Explained+e.Cut+v.Excused+e.Unexplained != v.Drops {
				t.Errorf("preStop %s s: explained %+v and %d excused do not add up to %d drops", v.Sweep.Value, e, v.Excused, v.Drops)
			}
		}
		var byHop uint64
		for h, n := range v.ByHop {
			byHop += n
			switch {
			case h == analysis.HopFrontAnswered:
				got.answered += n
			case strings.HasPrefix(h, "front pod traefik-"):
			default:
				t.Errorf("preStop %s s: %d drops charged to %q, want the Traefik pod or the rig", v.Sweep.Value, n, h)
			}
		}
		if byHop != v.Drops || got != want[v.Sweep.Value] {
			t.Errorf("preStop %s s: %+v (%d by hop), want %+v", v.Sweep.Value, got, byHop, want[v.Sweep.Value])
		}
	}
	advice, err := os.ReadFile("../../results/examples/fronts/sweep-traefik/advise.txt")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		"The path: hop traefik sets the bound, 2.784 s, the largest (beside kube-proxy's 2.079 s)",
		"0: 1188 dropped; 1: 525 dropped; 2: 92 dropped; 3: clean; 4: clean",
		"AGREES: clean from 3, the recommended value",
		"each of 30 stops was placed to within 14 ms (median), 45 ms (p90), 82 ms (max)",
		"latest node per deletion n=30 median 1.01 s p90 1.78 s max 2.08 s",
		"all pairs n=30 median 1.97 s p90 2.50 s max 2.78 s",
	} {
		if !strings.Contains(strings.Join(strings.Fields(string(advice)), " "), s) {
			t.Errorf("advise.txt lacks %q", s)
		}
	}
}

// checkShippedPauses holds each front stop placed less closely than 100 ms
// to a pause of its front pod: fewer requests started inside its bracket
// than the pod starts in 100 ms on average (the run's rate shared by its
// front pods), so no request's fate turns on where in it the stop lies.
func checkShippedPauses(t *testing.T, sum *analysis.Summary) {
	t.Helper()
	pods := map[string]bool{}
	for _, v := range sum.Variants {
		for _, g := range v.Routes {
			if g.Source == analysis.RouteSourceFront {
				pods[g.Node] = true
			}
		}
	}
	if len(pods) == 0 {
		t.Fatal("no front stop in the summary")
	}
	per100ms := float64(sum.Traffic.Rate) / float64(len(pods)) / 10
	for _, v := range sum.Variants {
		for _, g := range v.Routes {
			if g.Source != analysis.RouteSourceFront || g.UnroutedResolution <= 0.1 {
				continue
			}
			t.Logf("%s: the stop of %s by %s placed to within %.0f ms held %v requests (%.0f in 100 ms on average)", v.Variant, g.Pod, g.Node, 1000*g.UnroutedResolution, deref(g.UnroutedRequests), per100ms)
			if g.UnroutedRequests == nil || float64(*g.UnroutedRequests) >= per100ms {
				t.Errorf("%s: the stop of %s by %s placed to within %.0f ms held %d requests (-1: not counted), not a pause (%.0f in 100 ms on average)", v.Variant, g.Pod, g.Node, 1000*g.UnroutedResolution, deref(g.UnroutedRequests), per100ms)
			}
		}
	}
}

// deref is *p, or -1 for nil.
func deref(p *int) int {
	if p == nil {
		return -1
	}
	return *p
}
