package run

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/droprun/droprun/harness/analysis"
	"github.com/droprun/droprun/harness/cluster"
	"github.com/droprun/droprun/harness/gate"
	"github.com/droprun/droprun/harness/generators/pods"
	"github.com/droprun/droprun/harness/runfile"
	"github.com/droprun/droprun/harness/testbed"
	"github.com/droprun/droprun/harness/testbed/render"
	"github.com/droprun/droprun/harness/timeline"
	"github.com/droprun/droprun/harness/traffic"
)

// checkEastWest holds row v, measured east-west from three generator
// pods while generator 1's pod was killed (victim) in its first rollout:
// the kill is one gap, generator 1's, and makes that rollout incomplete,
// so `droprun check` is inconclusive, not passed; each generator's clock
// offset, estimated at its start and stop, holds kind's 0 within its
// bound; the drops are put down to the sending pods' nodes, no hop goes
// unseen, and no generator Job is left after the run.
func checkEastWest(ctx context.Context, t testing.TB, a *analysis.Analysis, events []timeline.Event, v analysis.VariantSummary, cfg cluster.Config, ns string) {
	t.Helper()
	gaps := map[string]int{}
	nodes := map[string]bool{}
	ends := 0
	for _, e := range events {
		switch e.Kind {
		case timeline.KindGeneratorGap:
			gaps[e.Detail["origin"]]++
			continue
		case timeline.KindGeneratorPlaced:
			nodes[e.Detail["node"]] = true
		case timeline.KindGeneratorClock:
			ends++
		default:
			continue
		}
		// kind's nodes share the host's clock: each estimate of a
		// generator's offset, at its start and at its stop, must hold 0
		// within its bound.
		if e.Detail["bound"] == "" {
			continue // a replacement, started without an estimate
		}
		offset, oerr := time.ParseDuration(e.Detail["offset"])
		bound, berr := time.ParseDuration(e.Detail["bound"])
		if oerr != nil || berr != nil || bound <= 0 || offset.Abs() > bound {
			t.Errorf("%s's clock offset %s ± %s: want 0 within a positive bound on kind", e.Detail["origin"], e.Detail["offset"], e.Detail["bound"])
		}
	}
	if gaps[pods.OriginOf(1)] != 1 || gaps[pods.OriginOf(0)]+gaps[pods.OriginOf(2)] != 0 {
		t.Errorf("gaps by generator %v; want one, the killed generator's", gaps)
	}
	if want := 3 * len(a.Summary.Variants); ends != want {
		t.Errorf("%d clock estimates at the stops, want one per generator and variant (%d)", ends, want)
	}
	if len(v.ByNode) == 0 {
		t.Errorf("%s east-west: drops by node %v; want them put down to the generators' nodes", v.Variant, v.ByNode)
	}
	for n := range v.ByNode {
		if !nodes[n] {
			t.Errorf("drops put down to node %q, which ran no generator (%v)", n, nodes)
		}
	}
	if a.Summary.Unseen != "" {
		t.Errorf("east-west, the analysis says a hop went unseen: %s", a.Summary.Unseen)
	}
	// The kill made rollout 1 incomplete, and check cannot pass it.
	if r1 := v.Rollouts[0]; !strings.Contains(r1.Incomplete, "generator pod-1 missing") {
		t.Errorf("rollout 1 incomplete %q; want generator pod-1's gap", r1.Incomplete)
	}
	zero := int64(1 << 40)
	r, err := gate.Check(a, gate.Limits{Confidence: 0.95, MaxDropsPerRollout: &zero, Rows: []string{v.Variant}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Verdict() != gate.Inconclusive {
		t.Errorf("check with no limit the drops break: %v; want inconclusive on an incomplete rollout", r.Verdict())
	}
	k, err := testbed.NewKind(testWriter{t})
	if err != nil {
		t.Fatal(err)
	}
	cl, err := k.Connect(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if l, err := cl.Client.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + render.GeneratorsName}); err == nil && len(l.Items) > 0 {
		t.Errorf("the generators' Job is left after the run")
	}
}

// checkGeneratorsAccount checks that every request v's generators sent
// came home once: their account (the traffic.stop event's), the records
// in their results files, the requests analysed and the sum of the
// classes are one number, and none of their results went unread.
func checkGeneratorsAccount(t testing.TB, dir string, events []timeline.Event, v analysis.VariantSummary, generators int) {
	t.Helper()
	var stats *traffic.Stats
	for _, e := range events {
		if e.Kind == timeline.KindTrafficStop && e.Detail["variant"] == v.Variant {
			stats = e.Stats
		}
	}
	if stats == nil {
		t.Fatalf("%s: no traffic.stop event with the generators' account", v.Variant)
	}
	var lines uint64
	for i := range generators {
		lines += countLines(t, filepath.Join(dir, runfile.ResultsFileOf(v.Variant, pods.OriginOf(i))))
	}
	var classes uint64
	for _, n := range stats.ByClass {
		classes += n
	}
	if lines == 0 || stats.Requests != lines || v.Requests != lines || classes != lines {
		t.Errorf("%s: sent %d, %d records in the generators' files, %d requests analysed, classes adding up to %d: want one number, not 0", v.Variant, stats.Requests, lines, v.Requests, classes)
	}
	for _, s := range stats.Suspect {
		if strings.Contains(s, "never read") {
			t.Errorf("results lost between a generator and droprun: %s", s)
		}
	}
}

// killGeneratorInRollout deletes generator 1's pod once Deployment
// deployment's first rollout has begun, and says which pod it killed.
func killGeneratorInRollout(ctx context.Context, cfg cluster.Config, ns, deployment string, killed chan<- string) {
	k, err := testbed.NewKind(io.Discard)
	if err != nil {
		return
	}
	var cl *cluster.Cluster
	var generation int64
	for ctx.Err() == nil {
		time.Sleep(200 * time.Millisecond) // polling the cluster's state, not waiting out a condition
		if cl == nil {
			if cl, err = k.Connect(ctx, cfg); err != nil {
				cl = nil
				continue
			}
		}
		l, err := cl.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + render.GeneratorsName + ",batch.kubernetes.io/job-completion-index=1"})
		if err != nil || len(l.Items) != 1 || l.Items[0].Status.Phase != corev1.PodRunning {
			continue
		}
		d, err := cl.Client.AppsV1().Deployments(ns).Get(ctx, deployment, metav1.GetOptions{})
		if err != nil {
			continue
		}
		if generation == 0 {
			generation = d.Generation // the variant as deployed, before its rollouts
			continue
		}
		if d.Generation == generation {
			continue
		}
		grace := int64(0)
		if err := cl.Client.CoreV1().Pods(ns).Delete(ctx, l.Items[0].Name, metav1.DeleteOptions{GracePeriodSeconds: &grace}); err == nil {
			killed <- l.Items[0].Name
		}
		return
	}
}
