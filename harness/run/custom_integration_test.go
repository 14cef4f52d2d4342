package run

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/droprun/droprun/harness/analysis"
	"github.com/droprun/droprun/harness/frontlog"
	"github.com/droprun/droprun/harness/image"
	"github.com/droprun/droprun/harness/scenario"
	"github.com/droprun/droprun/harness/testbed"
	"github.com/droprun/droprun/harness/timeline"
	"github.com/droprun/droprun/harness/traffic"
)

// shopManifest is bookshop packaged as a user's own service (app.custom),
// as the shipped history packages it: a Deployment named shop, container
// app, no preStop hook. env makes the build: none exits at SIGTERM, the
// drain settings fail readiness and keep serving 5 s first.
const shopManifest = `apiVersion: apps/v1
kind: Deployment
metadata: {name: shop}
spec:
  replicas: 2
  selector: {matchLabels: {app: shop}}
  template:
    metadata: {labels: {app: shop}}
    spec:
      terminationGracePeriodSeconds: 30
      containers:
        - name: app
          image: bookshop:v1
          env: [{name: GOMAXPROCS, value: "1"}%s]
          ports: [{name: http, containerPort: 8080}]
          readinessProbe:
            httpGet: {path: /readyz, port: 8080}
            periodSeconds: 1
            failureThreshold: 2
`

// TestIntegrationRunCustomApp measures a user's own app, not bookshop as
// droprun renders it, from generator pods on two paths: east-west to the
// Service droprun renders for it (named after its Deployment, not web)
// and through Traefik's NodePort on every node. On each path the build
// that exits at SIGTERM (exits) drops in every rollout, those drops
// explained by the race windows well above chance, and the build that
// drains (drains) drops nothing beyond the rig's floor. Every request
// comes home once; through Traefik each carries an ID prefixed with the
// variant and its generator pod's name, its access log joins nearly all
// of them, every 502 is one Traefik logged, and Traefik's readings place
// its stop of sending to every deleted pod (checkFrontStops; it is
// measured from the host only with Caddy). East-west, one generator's
// pod is killed during a rollout (checkEastWest).
func TestIntegrationRunCustomApp(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	needCluster(t, ctx)
	work := t.TempDir()
	res, err := image.Build(ctx, image.BuildOptions{ModuleDir: moduleDir(), OutDir: work, Flavours: []image.Flavour{image.FlavourStandard}, Log: testWriter{t}})
	if err != nil {
		t.Fatal(err)
	}
	drain := `, {name: BOOKSHOP_SHUTDOWN, value: drain}, {name: BOOKSHOP_DRAIN_DELAY, value: 5s}`
	for name, body := range map[string]string{"shop.yaml": fmt.Sprintf(shopManifest, ""), "shop-drains.yaml": fmt.Sprintf(shopManifest, drain)} {
		if err := os.WriteFile(filepath.Join(work, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	it := itScenario(t, "metadata: {name: it}\nvariants: [{variant: no-prestop}]\n")
	for _, path := range []struct{ name, target string }{{"east-west", "clusterip"}, {"traefik", "traefik"}} {
		t.Run(path.name, func(t *testing.T) {
			file := filepath.Join(work, path.name+".yaml")
			body := fmt.Sprintf(`apiVersion: droprun/v1alpha1
kind: Scenario
metadata: {name: e2e-custom-%s}
app: {custom: {images: ["bookshop:v1", "bookshop:v2"], imageArchives: [%s], container: app, port: 8080}}
variants:
  - {name: exits, manifest: shop.yaml}
  - {name: drains, manifest: shop-drains.yaml}
rollouts: 2
traffic: {rate: 150, target: %s, generators: {from: pods}, control: 5s, between: 3s, settle: 3s, balance: 10s}
`, path.name, filepath.Base(res.Archive), path.target)
			if err := os.WriteFile(file, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
			sc, err := scenario.Load(file)
			if err != nil {
				t.Fatal(err)
			}
			sc.Cluster, sc.Namespace = it.Cluster, it.Namespace
			if path.target != "clusterip" {
				quietRun(ctx, t, sc, func(t testing.TB, a *analysis.Analysis, dir string) { checkCustomRun(t, dir, a, path.target) })
				return
			}
			// East-west, one generator's pod is killed during exits's
			// first rollout (a run measured again would not repeat it).
			cfg := testbed.KindConfig(sc.Cluster.Kind)
			killed := make(chan string, 1)
			go killGeneratorInRollout(ctx, cfg, sc.Namespace, "shop", killed)
			dir := runDir(t)
			a := measure(ctx, t, sc, dir)
			select {
			case victim := <-killed:
				t.Logf("killed generator 1's pod %s during exits's rollout 1", victim)
			default:
				t.Fatal("no generator was killed during a rollout")
			}
			checkCustomRun(t, dir, a, path.target)
			for _, v := range a.Summary.Variants {
				if v.Variant == "exits" {
					checkEastWest(ctx, t, a, readEvents(t, dir), v, cfg, sc.Namespace)
				}
			}
		})
	}
}

// checkCustomRun holds a custom-app run from three generator pods to
// exits's drops explained against chance and drains's at the floor, with
// every request accounted for; through a front, to its access log.
func checkCustomRun(t testing.TB, dir string, a *analysis.Analysis, target string) {
	t.Helper()
	ri, err := analysis.ReadRunInfo(dir)
	if err != nil {
		t.Fatal(err)
	}
	if ri.Traffic.Generators != 3 {
		t.Errorf("run.json: %d generators, want 3", ri.Traffic.Generators)
	}
	if target == "clusterip" && (len(ri.Traffic.Targets) != 1 || !strings.HasPrefix(ri.Traffic.Targets[0].URL, "http://shop.") || !strings.Contains(ri.Traffic.Targets[0].URL, ".svc.cluster.local.:80/")) {
		t.Errorf("run.json targets %+v: want the app's own Service, shop, by its name, port 80", ri.Traffic.Targets)
	}
	events := readEvents(t, dir)
	placed := map[string]bool{}
	for _, e := range events {
		if e.Kind == timeline.KindGeneratorPlaced {
			placed[e.Detail["pod"]] = true
		}
	}
	var lines map[string]frontlog.Line
	if target == "traefik" {
		lines = readFrontLog(t, dir)
		checkFrontLogFromNode(t, dir)
	}
	rows := map[string]analysis.VariantSummary{}
	for _, v := range a.Summary.Variants {
		rows[v.Variant] = v
		checkGeneratorsAccount(t, dir, events, v, 3)
		if v.Control.Requests == 0 || v.Control.Failures > 0 {
			t.Errorf("%s: control %d failures in %d requests, want a clean control window", v.Variant, v.Control.Failures, v.Control.Requests)
		}
		if lines != nil {
			checkJoined(t, dir, v, lines, placed)
		}
	}
	exits, drains := rows["exits"], rows["drains"]
	if len(exits.Rollouts) != 2 || len(drains.Rollouts) != 2 {
		t.Fatalf("rows %v: want exits and drains, two rollouts each", a.Summary.Variants)
	}
	t.Logf("%s: exits %d drops of %d (%d rollouts with drops), classes %v, explained %+v; drains %d drops, classes %v",
		target, exits.Drops, exits.WindowRequests, exits.RolloutsWithDrops, exits.Classes, exits.Explained, drains.Drops, drains.Classes)
	if exits.RolloutsWithDrops != len(exits.Rollouts) {
		t.Errorf("exits dropped in %d of %d rollouts: the race was not reproduced", exits.RolloutsWithDrops, len(exits.Rollouts))
	}
	if target == "traefik" {
		if exits.Classes[traffic.Class502] == 0 {
			t.Errorf("exits through traefik: classes %v, want 502s among them", exits.Classes)
		}
		checkFrontStops(t, events, lines, a, target, "prober", "shop-")
	}
	checkRaceExplained(t, "exits through "+target, exits)
	checkAtFloor(t, "drains through "+target, drains)
}

// checkRaceExplained holds a no-drain row's drops to its race windows:
// of those that name a pod and a router (not excused as the rig's, not
// missing from a front's log, not answered by the front), at least 90 %
// fall in a (pod, router) race window or were cut by the listener's
// close, and 50 points more than with the send times shifted (chance).
func checkRaceExplained(t testing.TB, label string, v analysis.VariantSummary) {
	t.Helper()
	e := v.Explained
	if v.Drops == 0 || e == nil {
		t.Errorf("%s: %d drops, explanation %+v; want drops, explained", label, v.Drops, e)
		return
	}
	named := v.Drops - v.Excused - e.Why[analysis.WhyFrontNoLine] - e.FrontAnswered()
	shifted := 0.0
	if e.Chance != nil {
		shifted = e.Chance.TimesShifted
	}
	got := float64(e.Explained + e.Cut + e.Conntrack)
	t.Logf("%s: %.0f of the %d drops that name a pod and a router explained (times-shifted baseline %.0f)", label, got, named, shifted)
	if e.Chance == nil || named == 0 || got < 0.9*float64(named) || got < shifted+0.5*float64(named) {
		t.Errorf("%s: %.0f of the %d drops that name a pod and a router explained by its race windows (times-shifted baseline %.0f, %+v); want at least 90%%, and 50 points above the baseline",
			label, got, named, shifted, e.Chance)
	}
}
