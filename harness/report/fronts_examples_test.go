package report

import (
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
// split into race windows, the rig's (excused) and unexplained; the 5 s
// preStop sleep drops nothing; graceful-drain drops only what the rig
// lost (Traefik) or in one rollout through Caddy with keep-alive; and the
// hop that sets the advised bound (Traefik's own list through Traefik,
// the nodes' rules through Caddy).
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
	}{
		{"fronts-traefik-newconn", "traefik", row{3934, 660, 1434, 1840, 1731, 477, 797}, row{4, 4, 0, 0, 4, 0, 0}, "hop traefik sets the bound, 3.513 s"},
		{"fronts-traefik-keepalive", "traefik", row{1090, 51, 1039, 0, 0, 0, 0}, row{}, "hop traefik sets the bound, 3.583 s"},
		{"fronts-caddy-newconn", "caddy", row{503, 3, 500, 0, 3, 0, 0}, row{}, "hop kube-proxy sets the bound, 2.689 s"},
		{"fronts-caddy-keepalive", "caddy", row{433, 0, 433, 0, 0, 0, 0}, row{265, 0, 0, 265, 193, 164, 0}, "hop kube-proxy sets the bound, 3.307 s"},
	} {
		t.Run(tc.run, func(t *testing.T) {
			sum := shipped(t, "fronts/"+tc.run)
			if sum.Traffic.Target != tc.front || sum.Traffic.Rate != 300 || sum.Traffic.Rollouts != 3 {
				t.Fatalf("traffic %+v, want %s at 300 req/s, 3 rollouts", sum.Traffic, tc.front)
			}
			rows := map[string]analysis.VariantSummary{}
			for _, v := range sum.Variants {
				rows[v.Variant] = v
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
			np := rows["no-prestop"]
			if got := split(np); got != tc.noPrestop || np.Classes[traffic.Class502] == 0 || np.RolloutsWithDrops != 3 {
				t.Errorf("no-prestop: %+v (classes %v) in %d rollouts, want %+v with 502s in all 3", got, np.Classes, np.RolloutsWithDrops, tc.noPrestop)
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
		})
	}
}

// TestShippedSweepTraefik holds "A sweep through Traefik" of
// results/README.md to the shipped run (results/examples/fronts/
// sweep-traefik, which re-derives from its raw data): the native preStop
// sleep at 0-4 s, 3 rollouts each, clean controls; per row the drops
// split into race windows, the rig's (excused) and unexplained, and
// charged to the Traefik pod or, where Traefik's log answered them 2xx,
// to the rig; drops fall with the sleep to none at 3 s, and the 4 s row's
// 532, none in a race window, make advise say the sweep disagrees with
// its bound (Traefik's hop, 3.445 s: preStop 4 s).
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
		"0": {2675, 332, 1294, 1049, 926, 218, 489, 67},
		"1": {601, 0, 598, 3, 2, 0, 2, 0},
		"2": {127, 0, 127, 0, 0, 0, 0, 0},
		"3": {},
		"4": {532, 0, 0, 532, 395, 220, 97, 78},
	}
	if len(sum.Variants) != len(want) {
		t.Fatalf("%d rows, want %d", len(sum.Variants), len(want))
	}
	for _, v := range sum.Variants {
		if v.Sweep == nil || v.Sweep.Field != "preStopSeconds" {
			t.Fatalf("%s: sweep %+v, want preStopSeconds", v.Variant, v.Sweep)
		}
		if v.Control.Failures > 0 || v.Control.Requests < 1500 || v.WindowRequests < 12000 {
			t.Errorf("preStop %s s: control %d/%d, %d window requests; want a clean control and 3 rollouts' windows", v.Sweep.Value, v.Control.Failures, v.Control.Requests, v.WindowRequests)
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
		"The path: hop traefik sets the bound, 3.445 s, the largest (beside kube-proxy's 2.600 s)",
		"0: 2343 dropped; 1: 601 dropped; 2: 127 dropped; 3: clean; 4: 532 dropped",
		"DISAGREES: preStopSeconds 4, at or above the recommended 4, dropped 532 requests",
	} {
		if !strings.Contains(string(advice), s) {
			t.Errorf("advise.txt lacks %q", s)
		}
	}
}
