package run

import (
	"context"
	"testing"
	"time"

	"github.com/droprun/droprun/harness/advise"
	"github.com/droprun/droprun/harness/analysis"
	"github.com/droprun/droprun/harness/cluster"
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
traffic: {rate: 500, control: 5s, between: 5s, settle: 3s}
`))
	if err != nil {
		t.Fatal(err)
	}
	dir := runDir(t)
	a, err := Run(ctx, sc, Options{Dir: dir, Log: testWriter{t}, Keep: false, Version: "test",
		Testbed: testbed.Options{ModuleDir: moduleDir(), ImageDir: t.TempDir()}})
	t.Cleanup(func() {
		// Run deletes the cluster it created; this covers a failed run.
		if k, kerr := cluster.NewKind(testWriter{t}); kerr == nil {
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
	checkExplained(t, zero)
	if three.Drops != 0 {
		t.Errorf("a 3 s sleep dropped %d (%v)", three.Drops, three.Classes)
	}
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

// checkPairs checks that every pod a row's rollouts deleted has a pair on
// each of the 3 nodes, each seen in the node's own rules.
func checkPairs(t *testing.T, v analysis.VariantSummary) {
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

// checkExplained checks that the race windows explain at least 95 % of a
// row's drops.
func checkExplained(t *testing.T, v analysis.VariantSummary) {
	t.Helper()
	e := v.Explained
	if e == nil {
		t.Errorf("%s: no drop explained or not: the run has no route data", v.Variant)
		return
	}
	if total := e.Explained + e.Unexplained; total == 0 || e.Explained*100 < 95*total {
		t.Errorf("%s: the race windows explain %d of %d drops, want at least 95%% (unexplained: %v)", v.Variant, e.Explained, total, e.Why)
	}
}
