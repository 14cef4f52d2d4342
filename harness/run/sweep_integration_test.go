package run

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/droprun/droprun/harness/advise"
	"github.com/droprun/droprun/harness/analysis"
	"github.com/droprun/droprun/harness/jsonl"
	"github.com/droprun/droprun/harness/runfile"
	"github.com/droprun/droprun/harness/scenario"
	"github.com/droprun/droprun/harness/testbed"
)

// TestIntegrationSweepNftables proves issue 13's pieces together on a real
// cluster in kube-proxy's nftables mode (its own 3-node cluster, deleted
// at the end): a sweep of the native preStop sleep over 0, 1, 2 and 3 s (every whole second a recommendation can land on), each
// pair (deleted pod, node) seen in the node's own rules, the drops at 0 s
// explained by their race windows, none at 3 s, and `advise` on the run
// recommending a sleep that the sweep confirms (clean at or below it).
// About 5 minutes; DROPRUN_E2E_DIR=DIR keeps its run directory.
func TestIntegrationSweepNftables(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	needCluster(t, ctx)
	// Host ports below the kernel's ephemeral range (32768 up), where no
	// client connection can hold them.
	sc, err := scenario.Parse("integration", []byte(`apiVersion: droprun/v1alpha1
kind: Scenario
metadata: {name: it-sweep}
cluster:
  kind: {name: droprun-it-nft, nodes: 3, kubeProxyMode: nftables, hostPort: 31180, gatewayHostPort: 31181}
namespace: droprun-it
defaults: {replicas: 2, terminationGracePeriodSeconds: 30}
variants:
  - variant: prestop-sleep-action
    sweep: {field: preStopSeconds, values: [0, 1, 2, 3]}
rollouts: 2
traffic: {rate: 500, control: 5s, between: 5s, settle: 3s, balance: 10s}
`))
	if err != nil {
		t.Fatal(err)
	}
	dir := runDir(t)
	a, err := Run(ctx, sc, Options{Dir: dir, Log: testWriter{t}, Keep: false, Version: "test",
		Testbed: testbed.Options{ModuleDir: moduleDir(), ImageDir: t.TempDir()}})
	t.Cleanup(func() {
		// Run deletes the cluster it created; this covers a failed run.
		if k, kerr := testbed.NewKind(testWriter{t}); kerr == nil {
			_ = k.Down(context.WithoutCancel(ctx), "droprun-it-nft")
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	sum := a.Summary
	if sum.Cluster.KubeProxyMode != "nftables" {
		t.Errorf("kube-proxy mode %q, want nftables", sum.Cluster.KubeProxyMode)
	}
	if len(sum.Variants) != 4 {
		t.Fatalf("%d rows, want one per swept value", len(sum.Variants))
	}
	for i, want := range []string{"0", "1", "2", "3"} {
		v := sum.Variants[i]
		if v.Sweep == nil || v.Sweep.Field != "preStopSeconds" || v.Sweep.Value != want {
			t.Errorf("row %s: sweep point %+v, want preStopSeconds=%s", v.Variant, v.Sweep, want)
		}
		checkPairs(t, v)
		t.Logf("%s: %d drops / %d, explained %+v", v.Variant, v.Drops, v.WindowRequests, v.Explained)
	}
	zero, three := sum.Variants[0], sum.Variants[3]
	if zero.RolloutsWithDrops != len(zero.Rollouts) {
		t.Errorf("a 0 s sleep dropped in %d of %d rollouts: the race was not reproduced", zero.RolloutsWithDrops, len(zero.Rollouts))
	}
	checkExplained(t, dir, zero)
	checkClean(t, three)
	for _, g := range three.Routes {
		if g.Known() && g.Window >= 0 {
			t.Errorf("3 s sleep: %s", g.RaceText())
		}
	}
	adv, err := advise.Advise([]advise.Run{{Dir: dir, Summary: sum}}, advise.Options{})
	if err != nil {
		t.Fatal(err)
	}
	pairs := 0
	for _, v := range sum.Variants {
		pairs += len(v.Routes)
	}
	if adv.Pairs != pairs || adv.Deletions*3 != pairs {
		t.Errorf("advise used %d pairs of %d deletions, the run has %d pairs on 3 nodes", adv.Pairs, adv.Deletions, pairs)
	}
	if s := adv.Recommendation.PreStopSleepSeconds; s < 1 || s > 10 {
		t.Errorf("advise recommends a %d s sleep: %+v", s, adv.Recommendation)
	}
	// The sweep must settle it: clean at the recommendation or below.
	if len(adv.Sweeps) != 1 || adv.Sweeps[0].Verdict != advise.Agrees && adv.Sweeps[0].Verdict != advise.Conservative {
		t.Errorf("sweep check %+v: want one sweep that agrees with the advice", adv.Sweeps)
	}
}

// checkClean holds a row that should drop nothing to the tally the sweep
// verdict decides with (VariantSummary.Measurable): no drop at all, except
// timeouts excused by the rig's own stall, and each of those must carry
// its evidence and make the row suspect. A CI run on a loaded 2-core
// machine saw 2 such timeouts at 3 s (of 21,118), in a rollout that took
// 23.9 s instead of about 10.
func checkClean(t testing.TB, v analysis.VariantSummary) {
	t.Helper()
	if v.Measurable.Failures != 0 || v.Drops != v.Excused {
		t.Errorf("%s dropped %d (%v), %d of them excused: the sweep's clean point is not clean", v.Variant, v.Drops, v.Classes, v.Excused)
	}
	if v.Excused == 0 {
		return
	}
	t.Logf("%s: %d timeouts excused by the rig's stall", v.Variant, v.Excused)
	for _, r := range v.Rollouts {
		if r.Excused > 0 && r.ExcusedWhy == "" {
			t.Errorf("%s rollout %d: %d timeouts excused without saying why", v.Variant, r.N, r.Excused)
		}
	}
	if len(v.Suspect) == 0 {
		t.Errorf("%s: %d excused timeouts and the row is not suspect", v.Variant, v.Excused)
	}
}

// checkPairs checks that every pod a row's rollouts deleted has a pair on
// each of the 3 nodes, each seen in the node's own rules.
func checkPairs(t testing.TB, v analysis.VariantSummary) {
	t.Helper()
	pods := map[string]int{}
	for _, g := range v.Routes {
		pods[g.Pod]++
		if g.Source != analysis.RouteSourceDataPlane || g.Unrouted < 0 {
			t.Errorf("%s rollout %d: pod %s on %s: stop of routing not seen in the node's rules (%+v)", v.Variant, g.Rollout, g.Pod, g.Node, g)
		}
		if !g.AppTimes {
			t.Errorf("%s rollout %d: pod %s: bookshop's SIGTERM or listener close not recorded (%+v)", v.Variant, g.Rollout, g.Pod, g)
		}
	}
	if len(pods) < len(v.Rollouts) {
		t.Errorf("%s: pairs for %d deleted pods in %d rollouts", v.Variant, len(pods), len(v.Rollouts))
	}
	for pod, n := range pods {
		if n != 3 {
			t.Errorf("%s: pod %s has %d (pod, node) pairs, want 3", v.Variant, pod, n)
		}
	}
}

// checkExplained holds a row's drops to the (pod, node) race windows: at
// least 85 % fall inside one (or were cut by a close, or left by a stale
// conntrack entry), and the windows explain at least 50 points more than
// with the send times shifted (chance). Quiet runs here explain 99-100 %;
// one CI run explained 86 %, 147 of 1,057 drops (timeouts) outside every
// window, cause not yet known: every unexplained drop is printed beside
// its node's nearest window, so the next such run shows where they fell.
func checkExplained(t testing.TB, dir string, v analysis.VariantSummary) {
	t.Helper()
	e := v.Explained
	if e == nil {
		t.Errorf("%s: no drop explained or not: the run has no route data", v.Variant)
		return
	}
	total := e.Explained + e.Cut + e.Conntrack + e.Backoff + e.Slow + e.Unexplained
	if e.Unexplained > 0 {
		logUnexplained(t, dir, v)
	}
	if total == 0 || (e.Explained+e.Cut+e.Conntrack)*100 < 85*total {
		t.Errorf("%s: race windows explain %d, the close cut %d and stale conntrack entries left %d of %d drops, want at least 85%% (unexplained: %v)", v.Variant, e.Explained, e.Cut, e.Conntrack, total, e.Why)
		return
	}
	c := e.Chance
	if c == nil {
		t.Errorf("%s: no chance baselines beside %d explained drops", v.Variant, e.Explained)
		return
	}
	share := 100 * float64(e.Explained) / float64(total)
	shifted, shuffled := 100*c.TimesShifted/float64(total), 100*c.NodesShuffled/float64(total)
	t.Logf("%s: race windows explain %.1f%%; by chance %.1f%% with the routing nodes shuffled, %.1f%% with the times shifted", v.Variant, share, shuffled, shifted)
	if share-shifted < 50 {
		t.Errorf("%s: race windows explain %.1f%%, with the send times shifted %.1f%%: want at least 50 points apart", v.Variant, share, shifted)
	}
}

// logUnexplained prints row v's unexplained drops (failures.jsonl) with
// where each fell against the nearest race window of a pod on the node
// that routed it: how long after its listener closed and after the node
// stopped routing to it.
func logUnexplained(t testing.TB, dir string, v analysis.VariantSummary) {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, runfile.FailuresFile))
	if err != nil {
		t.Logf("unexplained drops: %v", err)
		return
	}
	defer f.Close()
	fails, err := jsonl.ReadAll[analysis.Failure](f, runfile.FailuresFile)
	if err != nil {
		t.Logf("unexplained drops: %v", err)
		return
	}
	shown := 0
	for _, fl := range fails {
		if fl.Variant != v.Variant || fl.Explained == "" || fl.RacePod != "" || fl.Explained == analysis.AccountedConntrack {
			continue
		}
		if shown++; shown > 40 {
			continue
		}
		near, best := "no pair on that node", time.Duration(1<<62)
		for _, g := range v.Routes {
			if g.Rollout != fl.Rollout || g.Node != fl.RoutedBy || !g.Known() {
				continue
			}
			closed := g.Deleted.Add(time.Duration(g.ListenerClosed * float64(time.Second)))
			unrouted := g.Deleted.Add(time.Duration(g.Unrouted * float64(time.Second)))
			if d := min(absDur(fl.Time.Sub(closed)), absDur(fl.Time.Sub(unrouted))); d < best {
				best = d
				near = fmt.Sprintf("pod %s: %+.3fs after its close, %+.3fs after the node stopped routing to it", g.Pod, fl.Time.Sub(closed).Seconds(), fl.Time.Sub(unrouted).Seconds())
			}
		}
		t.Logf("unexplained: rollout %d, %s via %s at %s (%.3fs): %s; nearest %s", fl.Rollout, fl.Class, fl.RoutedBy, fl.Time.Format("15:04:05.000"), fl.Latency, fl.Explained, near)
	}
	if shown > 40 {
		t.Logf("unexplained: %d more not shown", shown-40)
	}
}

func absDur(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

// checkProbedCloses holds droprun's prober (harness/closeprobe) to
// bookshop's own record of its listener close (analysis.AgreeProbe): the
// prober saw at least 90 % of the deleted pods close, and bookshop's close
// came after the prober's first refusal for at most 1 in 20 bracketed
// pods, none by more than 20 ms. Bookshop stamps its close just before
// Close, and a node at a quarter CPU weight on a busy host can hold it
// between the two (a CI run: 5 of 51 off by up to 99 ms, direction not
// recorded), so a stamp before the prober's last open connect is allowed
// for 1 in 5.
func checkProbedCloses(t testing.TB, dir string) {
	t.Helper()
	a, err := analysis.AgreeProbeIn(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("prober: %+v", a)
	if a.Deleted == 0 || a.Probed*10 < a.Deleted*9 || a.Bracketed == 0 || a.Outside*20 > a.Bracketed || a.Furthest > 20*time.Millisecond || a.Early*5 > a.Bracketed {
		t.Errorf("the prober saw %d closes of %d deleted pods; %d bracketed against bookshop's record, %d of them closed after its first refusal (the furthest by %s), %d stamped before its last open connect (by up to %s): want at least 90%% seen, some bracketed, at most 1 in 20 after and none by more than 20ms, at most 1 in 5 before",
			a.Probed, a.Deleted, a.Bracketed, a.Outside, a.Furthest, a.Early, a.Earliest)
	}
}
