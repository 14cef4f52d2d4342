package report

import (
	"os"
	"strings"
	"testing"

	"github.com/droprun/droprun/harness/analysis"
	"github.com/droprun/droprun/harness/traffic"
)

// TestShippedFronts holds the table "Through Traefik and Caddy" of
// results/README.md to the shipped runs (results/examples/fronts): clean
// control windows through both fronts; no-prestop drops 502s in the
// windows, every drop the rig did not excuse explained by a (pod, front
// pod) race window (but 2 through Caddy) and charged to the front pod, or, for those the front
// logged as answered, to the way before it; the 5 s preStop sleep drops
// nothing; graceful-drain drops nothing but once through Traefik, where
// Traefik's own list, not the nodes' rules, sets the advised bound (and
// the nodes' rules do through Caddy).
func TestShippedFronts(t *testing.T) {
	for _, tc := range []struct {
		run          string
		front        string
		noPrestop    uint64
		gracefulDrop uint64
		boundHop     string
		unexplained  uint64 // no-prestop's drops outside every window
	}{
		{"fronts-traefik-newconn", "traefik", 1193, 0, "hop traefik sets the bound, 4.753 s", 0},
		{"fronts-traefik-keepalive", "traefik", 1516, 154, "hop traefik sets the bound, 6.481 s", 0},
		{"fronts-caddy-newconn", "caddy", 696, 0, "hop kube-proxy sets the bound, 1.918 s", 0},
		{"fronts-caddy-keepalive", "caddy", 425, 0, "hop kube-proxy sets the bound, 2.573 s", 2},
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
			np := rows["no-prestop"]
			if np.Drops != tc.noPrestop || np.Classes[traffic.Class502] == 0 || np.RolloutsWithDrops < 2 {
				t.Errorf("no-prestop: %d drops (classes %v) in %d rollouts, want %d with 502s", np.Drops, np.Classes, np.RolloutsWithDrops, tc.noPrestop)
			}
			var byHop, front uint64
			for _, r := range np.Rollouts {
				for h, n := range r.ByHop {
					byHop += n
					if strings.HasPrefix(h, "front pod "+tc.front+"-") {
						front += n
					} else if h != analysis.HopBeforeFront {
						t.Errorf("rollout %d: %d drops charged to %q, want the %s pod or the way before it", r.N, n, h, tc.front)
					}
				}
			}
			if byHop != np.Drops || front+np.Excused < np.Drops {
				t.Errorf("no-prestop: %d drops by hop (%d the front pod's, %d excused), want all %d, the front's or excused", byHop, front, np.Excused, np.Drops)
			}
			if e := np.Explained; e == nil || e.Explained+e.Cut+np.Excused+tc.unexplained != np.Drops || e.Unexplained != tc.unexplained {
				t.Errorf("no-prestop: explained %+v with %d excused, want every drop but %d", e, np.Excused, tc.unexplained)
			}
			if v := rows["prestop-sleep-action"]; v.Drops != 0 || v.WindowRequests == 0 {
				t.Errorf("prestop-sleep-action (5 s): %d drops in %d, want none", v.Drops, v.WindowRequests)
			}
			if v := rows["graceful-drain"]; v.Drops != tc.gracefulDrop || (v.Drops > 0 && (v.Explained == nil || v.Explained.Explained != v.Drops)) {
				t.Errorf("graceful-drain: %d drops (explained %+v), want %d, each in a race window", v.Drops, v.Explained, tc.gracefulDrop)
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
// sweep-traefik): the native preStop sleep at 0-4 s, 3 rollouts each,
// clean controls; drops fall with the sleep and stop from 3 s; every drop
// not excused is explained by a (pod, Traefik pod) race window and charged
// to the Traefik pod; advise bounds both hops, the nodes' rules set the
// path's bound (3.071 s, beside Traefik's 2.674 s), and it says the sweep
// agrees (clean from 3, below the recommended 4).
func TestShippedSweepTraefik(t *testing.T) {
	sum := shipped(t, "fronts/sweep-traefik")
	if sum.Traffic.Target != "traefik" || sum.Traffic.Rate != 300 || sum.Traffic.Rollouts != 3 {
		t.Fatalf("traffic %+v, want traefik at 300 req/s, 3 rollouts", sum.Traffic)
	}
	want := map[string]uint64{"0": 1376, "1": 331, "2": 1, "3": 0, "4": 0}
	if len(sum.Variants) != len(want) {
		t.Fatalf("%d rows, want %d", len(sum.Variants), len(want))
	}
	for _, v := range sum.Variants {
		if v.Sweep == nil || v.Sweep.Field != "preStopSeconds" {
			t.Fatalf("%s: sweep %+v, want preStopSeconds", v.Variant, v.Sweep)
		}
		drops, ok := want[v.Sweep.Value]
		if !ok || v.Drops != drops {
			t.Errorf("preStop %s s: %d drops, want %d", v.Sweep.Value, v.Drops, drops)
		}
		if v.Control.Failures > 0 || v.Control.Requests < 1500 || v.WindowRequests < 12000 {
			t.Errorf("preStop %s s: control %d/%d, %d window requests; want a clean control and 3 rollouts' windows", v.Sweep.Value, v.Control.Failures, v.Control.Requests, v.WindowRequests)
		}
		var front uint64
		for h, n := range v.ByHop {
			if strings.HasPrefix(h, "front pod traefik-") {
				front += n
			}
		}
		if front != v.Drops {
			t.Errorf("preStop %s s: %d of %d drops charged to the Traefik pod (%v)", v.Sweep.Value, front, v.Drops, v.ByHop)
		}
		if v.Drops > 0 && (v.Explained == nil || v.Explained.Explained+v.Excused != v.Drops) {
			t.Errorf("preStop %s s: %d drops, %d excused, explained %+v; want every other one in a race window", v.Sweep.Value, v.Drops, v.Excused, v.Explained)
		}
	}
	advice, err := os.ReadFile("../../results/examples/fronts/sweep-traefik/advise.txt")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		"The path: hop kube-proxy sets the bound, 3.071 s, the largest (beside traefik's 2.674 s)",
		"0: 1180 dropped; 1: 331 dropped; 2: 1 dropped; 3: clean; 4: clean",
		"CONSERVATIVE: clean from 3, below the recommended 4",
	} {
		if !strings.Contains(string(advice), s) {
			t.Errorf("advise.txt lacks %q", s)
		}
	}
}
