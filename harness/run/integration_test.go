package run

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/droprun/droprun/harness/analysis"
	"github.com/droprun/droprun/harness/cluster"
	"github.com/droprun/droprun/harness/engine"
	"github.com/droprun/droprun/harness/jsonl"
	"github.com/droprun/droprun/harness/nodeimage"
	"github.com/droprun/droprun/harness/report"
	"github.com/droprun/droprun/harness/rig"
	"github.com/droprun/droprun/harness/runfile"
	"github.com/droprun/droprun/harness/scenario"
	"github.com/droprun/droprun/harness/testbed"
	"github.com/droprun/droprun/harness/testbed/render"
	"github.com/droprun/droprun/harness/timeline"
	"github.com/droprun/droprun/harness/traffic"
	"github.com/droprun/droprun/harness/variant"
	"github.com/droprun/droprun/internal/citest"
)

// The integration tests share one kind cluster, created by the first test
// that needs it (reused when it exists with the same config) and deleted
// when the package's tests end, unless DROPRUN_KEEP_CLUSTER=1. It has its
// own name and host ports so it never touches the user's cluster.
const itCluster = `
cluster:
  kind: {name: droprun-it, nodes: 3, hostPort: 31080, gatewayHostPort: 31081}
namespace: droprun-it
`

var itCreated bool

func TestMain(m *testing.M) {
	code := m.Run()
	if itCreated && os.Getenv("DROPRUN_KEEP_CLUSTER") != "1" {
		if k, err := testbed.NewKind(os.Stderr); err == nil {
			if err := k.Down(context.Background(), "droprun-it"); err != nil {
				fmt.Fprintln(os.Stderr, "deleting the integration cluster:", err)
				code = 1
			}
		}
	}
	os.Exit(code)
}

// needCluster skips t where no engine or node image exists, saying how to
// get them (in CI it fails t: citest.Missing).
func needCluster(t testing.TB, ctx context.Context) {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: skipped with -short")
	}
	if _, err := engine.DockerInfo(ctx); err != nil {
		citest.Missing(t, "no container engine here (%v): run `droprun engine setup` to run this test", err)
	}
	if ok, err := nodeimage.Exists(ctx, nodeimage.DefaultImage); err != nil || !ok {
		citest.Missing(t, "node image %s not built (%v): run `droprun node-image build` to run this test", nodeimage.DefaultImage, err)
	}
}

// itScenario parses an end-to-end scenario: body on the shared cluster.
// The end-to-end scenarios set traffic.balance to 10s, which their settle,
// between and baseline wait mostly cover already: the default 30s would
// add some 15 s to every rollout of the suite.
func itScenario(t testing.TB, body string) *scenario.Scenario {
	t.Helper()
	sc, err := scenario.Parse("integration", []byte("apiVersion: droprun/v1alpha1\nkind: Scenario\n"+itCluster+body))
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

func moduleDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// itVersion is the droprun version the integration tests' runs record:
// the checkout's commit as make build stamps it (git describe), since a
// test binary's build info holds no VCS revision; so a run recorded for
// shipping (DROPRUN_E2E_DIR) names the commit that made it. "test" where
// git cannot tell.
var itVersion = sync.OnceValue(func() string {
	out, err := exec.Command("git", "-C", moduleDir(), "describe", "--tags", "--always", "--dirty").Output()
	if v := strings.TrimSpace(string(out)); err == nil && v != "" {
		return v
	}
	return "test"
})

// TestIntegrationClusterBookshop proves the chain of the cluster issue on a
// real kind cluster: create 3 nodes through the kind library, wait until all
// are Ready, build and load the bookshop images, deploy the web Deployment,
// and get an answer from a pod on 127.0.0.1; then roll to v2 and see v2
// answer.
func TestIntegrationClusterBookshop(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	needCluster(t, ctx)
	sc := itScenario(t, "metadata: {name: integration}\nvariants:\n  - variant: no-prestop\n")
	log := testWriter{t}
	start := time.Now()
	checked, err := testbed.Check(sc, nil)
	if err != nil {
		t.Fatal(err)
	}
	tb, err := testbed.Prepare(ctx, checked, testbed.Options{Log: log, ModuleDir: moduleDir(), ImageDir: t.TempDir(), CreateCluster: true})
	if err != nil {
		t.Fatal(err)
	}
	itCreated = itCreated || tb.Cluster.Created
	t.Logf("cluster up and images loaded in %s", time.Since(start).Round(time.Second))

	k, err := testbed.NewKind(log)
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := k.Status(ctx, "droprun-it")
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) != 3 {
		t.Fatalf("%d nodes, want 3", len(nodes))
	}
	for _, n := range nodes {
		if !n.Ready {
			t.Errorf("node %s not Ready: %s", n.Name, n.Reason)
		}
	}

	for version, want := range scenario.Versions {
		start := time.Now()
		if err := tb.Deploy(ctx, render.Of(sc, 0), version, false); err != nil {
			t.Fatal(err)
		}
		a, err := tb.WaitAnswering(ctx, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		// Right after a rollout an old pod may still answer; wait for the
		// new version the way a user would, by asking again.
		deadline := time.Now().Add(30 * time.Second)
		for a.Version != want && time.Now().Before(deadline) {
			if a, err = tb.WaitAnswering(ctx, time.Minute); err != nil {
				t.Fatal(err)
			}
		}
		if a.Version != want || !strings.HasPrefix(a.Pod, "web-") {
			t.Fatalf("answer %+v, want version %s from a web pod", a, want)
		}
		t.Logf("%s answered by pod %s in %s", want, a.Pod, time.Since(start).Round(100*time.Millisecond))
	}

	pods, err := tb.Cluster.Client.CoreV1().Pods(sc.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.Labels[variant.LabelVariant] != "no-prestop" {
			t.Errorf("pod %s labels %v", p.Name, p.Labels)
		}
	}

	if err := tb.Teardown(ctx); err != nil {
		t.Errorf("teardown: %v", err)
	}
	if err := tb.Release(ctx); err != nil {
		t.Errorf("releasing the namespace: %v", err)
	}
	if _, err := tb.Cluster.Client.CoreV1().Namespaces().Get(ctx, sc.Namespace, metav1.GetOptions{}); err == nil {
		t.Error("namespace still exists after teardown")
	}
}

// TestIntegrationConnectMissingCluster: asking for a cluster that does not
// exist, without --create, says how to create it.
func TestIntegrationConnectMissingCluster(t *testing.T) {
	ctx := context.Background()
	if testing.Short() {
		t.Skip("integration test: skipped with -short")
	}
	if _, err := engine.DockerInfo(ctx); err != nil {
		citest.Missing(t, "no container engine here (%v): run `droprun engine setup` to run this test", err)
	}
	k, err := testbed.NewKind(testWriter{t})
	if err != nil {
		t.Fatal(err)
	}
	_, err = k.Connect(ctx, cluster.Config{Name: "droprun-does-not-exist", Nodes: 1})
	if !errors.Is(err, cluster.ErrNoCluster) || !strings.Contains(err.Error(), "droprun cluster up --name droprun-does-not-exist") {
		t.Fatalf("err = %v", err)
	}
}

// testWriter passes a run's log to the test's, each line marked "run> "
// so that .ci/run can leave the logs out when it prints again what the
// failing tests said.
type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log("run> " + strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// TestIntegrationRun is the end-to-end proof of droprun run on a real
// cluster with real traffic (4 rollouts each, 500 req/s, as the demo):
// no-prestop drops in every rollout, graceful-drain at least 100 times
// less, decided over the rollouts, the control windows are clean, and
// every recorded file reads back to the summary's counts and to the same
// numbers when re-analysed.
func TestIntegrationRun(t *testing.T) {
	testRun(t, itScenario(t, `metadata: {name: e2e}
variants:
  - variant: no-prestop
  - variant: graceful-drain
rollouts: 4
traffic: {rate: 500, control: 5s, between: 5s, settle: 3s, balance: 10s}
`))
}

// TestIntegrationRunCatalogue runs the variants of scenarios/compare-all.yaml
// that no other CI test measures, with its traffic (1000 req/s, a new
// connection per request) over 2 rollouts, with the suite's shorter
// windows (shortWindows): naive-shutdown drops;
// prestop-exec-distroless drops and its failed hook is reported; the
// trap's first rollout drops and its second (prestop-sleep, the exec
// hook) drops at least 100 times less than no-prestop, the reference.
// graceful-drain is TestIntegrationRun's, prestop-sleep-action the sweep's
// (TestIntegrationSweepNftables). The whole scenario, every variant over 3
// rollouts, is TestIntegrationRunAllVariants (make test-all).
func TestIntegrationRunCatalogue(t *testing.T) {
	sc := compareAll(t)
	var keep []scenario.Variant
	for _, v := range sc.Variants {
		switch v.Name {
		case "no-prestop", "naive-shutdown", "prestop-exec-distroless", "the-trap":
			keep = append(keep, v)
		}
	}
	if len(keep) != 4 {
		t.Fatalf("compare-all.yaml has %d of the 4 variants this test measures", len(keep))
	}
	two := 2
	sc.Variants, sc.Rollouts = keep, &two
	shortWindows(sc)
	testRun(t, sc)
}

// shortWindows gives a shipped scenario the suite's windows (itScenario's
// bodies: a 5 s control window, 5 s between rollouts, 3 s settle) in
// place of the defaults' 10, 10 and 5 s, which would add over a minute
// per test to CI.
func shortWindows(sc *scenario.Scenario) {
	sc.Traffic.Control, sc.Traffic.Between, sc.Traffic.Settle = scenario.D(5*time.Second), scenario.D(5*time.Second), scenario.D(3*time.Second)
}

// TestIntegrationRunAllVariants runs scenarios/compare-all.yaml itself (every
// variant, 3 rollouts each at 1000 req/s) on the test cluster and checks
// what each variant is expected to show: prestop-sleep,
// prestop-sleep-action, graceful-drain and the trap's later rollouts drop
// at least 100 times less than no-prestop; naive-shutdown drops;
// prestop-exec-distroless drops and its failed hook is reported; the
// trap's first rollout drops. A variant the rig stalled in is checked in
// another measurement of it alone, after no-prestop. It takes about 16
// minutes (about 4 more per such measurement), too long for CI, which
// measures each variant in a shorter test (TestIntegrationRunCatalogue,
// TestIntegrationRun, the sweep): DROPRUN_E2E_ALL=1 (make test-all) runs
// it, and DROPRUN_E2E_DIR=DIR keeps its run directory
// (DIR/TestIntegrationRunAllVariants), as results/examples/compare-all was made.
func TestIntegrationRunAllVariants(t *testing.T) {
	if os.Getenv("DROPRUN_E2E_ALL") != "1" {
		t.Skip("every variant of compare-all end to end (~16 minutes): DROPRUN_E2E_ALL=1 (make test-all) runs it")
	}
	testRun(t, compareAll(t))
}

// compareAll loads scenarios/compare-all.yaml onto the test cluster.
func compareAll(t *testing.T) *scenario.Scenario {
	t.Helper()
	sc, err := scenario.Load(filepath.Join(moduleDir(), "scenarios", "compare-all.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	it := itScenario(t, "metadata: {name: it}\nvariants: [{variant: no-prestop}]\n")
	sc.Cluster, sc.Namespace = it.Cluster, it.Namespace
	return sc
}

// testRun runs sc and checks every expectation that applies to the rows
// present. It also serves the live metrics and pushes them to a fake
// Pushgateway, and checks both.
func testRun(t *testing.T, sc *scenario.Scenario) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Minute)
	defer cancel()
	needCluster(t, ctx)
	dir := runDir(t)
	metricsAddr := freeAddr(t)
	pushed := make(chan string, 1)
	gateway := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		select {
		case pushed <- req.Method + " " + req.URL.Path + "\n" + string(body):
		default:
		}
	}))
	defer gateway.Close()
	sawRollout := make(chan bool, 1)
	scrapeCtx, stopScraping := context.WithCancel(ctx)
	defer stopScraping()
	go scrapeUntilRollout(scrapeCtx, "http://"+metricsAddr+"/metrics", sawRollout)

	weight, weightErr := rig.FindDockerCPU("/sys/fs/cgroup")
	// A run killed before restoring the weight (a cancelled CI job) leaves
	// its marker; this run puts the marker's original back, not the
	// lowered value found now.
	if m, err := rig.ReadMarker(rig.DefaultMarker); err != nil {
		t.Fatal(err)
	} else if m != nil && m.File == weight.File {
		t.Logf("%s holds %d left by pid %d; the run must restore the original %d", weight.File, weight.Old, m.PID, m.Original)
		weight.Old = m.Original
	}
	a, err := Run(ctx, sc, Options{Dir: dir, Log: testWriter{t}, Keep: true, Version: itVersion(),
		MetricsAddr: metricsAddr, Pushgateway: gateway.URL,
		Testbed: testbed.Options{ModuleDir: moduleDir(), ImageDir: t.TempDir()}})
	if a != nil {
		itCreated = true // Run created or reused it; the package deletes it
	}
	if err != nil {
		t.Fatal(err)
	}
	stopScraping()
	checkMetrics(t, dir, sawRollout, pushed)
	// The nodes' CPU weight was lowered for the run and is back now.
	if weightErr == nil {
		if a.Summary.Cluster.CPUWeight == "" {
			t.Errorf("the run did not lower the nodes' CPU weight (%s)", weight.File)
		}
		if after, err := rig.FindDockerCPU("/sys/fs/cgroup"); err != nil || after.Old != weight.Old {
			t.Errorf("%s is %d after the run, was %d (%v)", weight.File, after.Old, weight.Old, err)
		}
	}
	// The expectations below hold for a quiet rig only, and a shared CI
	// machine is not always one. When the rig stalled (rigStalls) and
	// every check passes all the same (trialCheck), the stall changed
	// nothing. Otherwise the variants the rig stalled in are checked in
	// another measurement of them alone (with no-prestop, the reference),
	// not in this one; up to two more, as a busy CI machine has stalled
	// no-prestop twice running. A variant the rig stalled in every time
	// fails the test: its quiet-only checks were never made.
	stalled := rigStalls(a.Summary)
	if len(stalled) > 0 {
		why := strings.Join(slices.Sorted(maps.Values(stalled)), "; ")
		faults := trialCheck(t, func(tb testing.TB) { checkRun(tb, sc, a, dir, nil) })
		if len(faults) == 0 {
			t.Logf("the rig stalled in %s, which the analysis holds suspect; every check passes all the same", why)
			return
		}
		t.Logf("the rig stalled in %s, and %d checks failed with every row held to them (%s)", why, len(faults), strings.Join(faults, "; "))
	}
	checkRun(t, sc, a, dir, stalled)
	quietOnce := map[string]bool{} // variants whose quiet-only checks were made
	for _, name := range rowNames(sc) {
		if _, ok := stalled[name]; !ok {
			quietOnce[name] = true
		}
	}
	for try := 1; len(stalled) > 0; try++ {
		if try > maxRemeasures {
			t.Errorf("the rig stalled in %s in all %d measurements: their quiet-only checks were never made", strings.Join(slices.Sorted(maps.Keys(stalled)), ", "), try)
			return
		}
		again := stalledOnly(sc, stalled)
		t.Logf("the rig stalled in %s, which the analysis holds suspect: measuring %s again",
			strings.Join(slices.Sorted(maps.Values(stalled)), "; "), strings.Join(rowNames(again), ", "))
		a = measure(ctx, t, again, fmt.Sprintf("%s-again%d", dir, try))
		now := rigStalls(a.Summary)
		// No-prestop measured again only as the reference, after its
		// quiet-only checks passed, is not held to them again.
		skip := maps.Clone(now)
		if _, ok := now["no-prestop"]; !ok && quietOnce["no-prestop"] {
			skip["no-prestop"] = "the reference, quiet in an earlier measurement"
		}
		checkRun(t, again, a, fmt.Sprintf("%s-again%d", dir, try), skip)
		stalled = map[string]string{}
		for _, name := range rowNames(again) {
			if why, ok := now[name]; !ok {
				quietOnce[name] = true
			} else if !quietOnce[name] {
				stalled[name] = why
			}
		}
	}
}

// maxRemeasures bounds testRun's measurements of the variants a stalled
// rig made suspect (each about 4 minutes for no-prestop alone).
const maxRemeasures = 2

// checkRun checks every expectation of testRun that applies to the rows of
// a, sc's run in dir, except those a stalled rig may break in the rows of
// the variants in stalled: their drops, control windows, race windows and
// suspicion. The accounting of every row is checked regardless.
func checkRun(t testing.TB, sc *scenario.Scenario, a *analysis.Analysis, dir string, stalled map[string]string) {
	t.Helper()
	rollouts := *sc.Rollouts
	sum := a.Summary
	quiet := func(row string) bool { _, ok := stalled[analysis.RowVariant(row)]; return !ok }
	rows := map[string]analysis.VariantSummary{}
	for _, v := range sum.Variants {
		rows[v.Variant] = v
		t.Logf("%s: %d drops / %d window requests in %d rollouts (%d with drops), classes %v, control %d/%d, tail %d, rate %.0f/%.0f, hooks %d",
			v.Variant, v.Drops, v.WindowRequests, len(v.Rollouts), v.RolloutsWithDrops, v.Classes, v.Control.Failures, v.Control.Requests, v.Tail.Failures, v.Client.AchievedRate, v.Client.AskedRate, len(v.HookFailures))
	}
	bad := rows["no-prestop"]
	if bad.RolloutsWithDrops != rollouts || bad.Drops == 0 {
		t.Errorf("no-prestop dropped in %d of %d rollouts (%d drops): the race was not reproduced", bad.RolloutsWithDrops, rollouts, bad.Drops)
	}
	// Good variants drop (next to) nothing: at most 3 in all their
	// rollouts, excused timeouts included, and 100 times less than
	// no-prestop. Saturation excuses nothing here: the rig must keep the
	// client apart from the race.
	for _, name := range []string{"prestop-sleep", "prestop-sleep-action", "graceful-drain", "the-trap"} {
		good, ok := rows[name]
		if !ok || !quiet(name) {
			continue
		}
		t.Logf("%s: %d of %d rollouts saturated the rig; drops %d (%d excused timeouts)", name, good.SaturatedRollouts, len(good.Rollouts), good.Drops, good.Excused)
		if good.Drops > 3 || good.Drops*100 > bad.Drops {
			t.Errorf("%s dropped %d (classes %v), want at most 3 and 100 times less than no-prestop's %d", name, good.Drops, good.Classes, bad.Drops)
		}
	}
	// Every request entered through one of the nodes, round robin: each
	// rollout's window shows requests through every node.
	for _, v := range sum.Variants {
		for _, r := range v.Rollouts {
			if len(r.ByNode) != 3 {
				t.Errorf("%s rollout %d: requests by entry node %v, want 3 nodes", v.Variant, r.N, r.ByNode)
			}
			for node, tl := range r.ByNode {
				if tl.Requests == 0 {
					t.Errorf("%s rollout %d: no request entered through %s", v.Variant, r.N, node)
				}
			}
		}
	}
	for _, r := range bad.Rollouts {
		if r.SlowestNode == "" {
			t.Errorf("no-prestop rollout %d: no node's kube-proxy sync seen after its endpoint changes", r.N)
		}
	}
	// The data plane: every deleted pod on every node, seen in the node's
	// rules, beside bookshop's own SIGTERM and listener close; the race
	// windows explain no-prestop's drops, and the good variants' pairs
	// all stopped routing before the listener closed.
	for _, v := range sum.Variants {
		checkPairs(t, v)
	}
	if quiet("no-prestop") {
		checkExplained(t, dir, bad)
	}
	checkProbedCloses(t, dir)
	// What the scenario exists to show, over its rollouts: every fix drops
	// less than no-prestop (the test over rollouts, 95 %). With 4
	// rollouts a side (the demo) the test decides in 99 % of runs shaped
	// like the demo's (TestDemoRollouts), so it must; with 3 (compare-all)
	// in 95.4 % of runs as bursty as compare-all's (TestRolloutTestLevel),
	// so there an undecided verdict that says what it would take is
	// accepted, and logged (one CI run: no-prestop dropped about 252, 629
	// and 358, 190x as bursty as independent requests, p = 0.07). A fix
	// is never found to drop more.
	if len(sum.Variants) > 1 && sum.Variants[0].Variant == "no-prestop" {
		for k, c := range report.CompareVariants(sum) {
			v := sum.Variants[k+1]
			if _, fix := map[string]bool{"prestop-sleep": true, "prestop-sleep-action": true, "graceful-drain": true, "the-trap": true}[v.Variant]; !fix || !quiet(v.Variant) {
				continue
			}
			undecided := (strings.HasPrefix(c, "no difference detected between "+v.Variant+" and no-prestop") ||
				strings.HasPrefix(c, v.Variant+" drops less than no-prestop in this comparison alone, but not across")) && strings.Contains(c, "would detect")
			switch {
			case strings.HasPrefix(c, v.Variant+" drops less than no-prestop: rate ratio"):
			case undecided && len(bad.Rollouts) < 4:
				t.Logf("%s against no-prestop is undecided over %d rollouts: %s", v.Variant, len(bad.Rollouts), c)
			default:
				t.Errorf("%s against no-prestop is not decided: %s", v.Variant, c)
			}
		}
	}
	for _, name := range []string{"prestop-sleep", "prestop-sleep-action", "graceful-drain", "the-trap"} {
		if !quiet(name) {
			continue
		}
		for _, g := range rows[name].Routes {
			if g.Known() && g.Window >= 0 {
				t.Errorf("%s rollout %d: %s", name, g.Rollout, g.RaceText())
			}
		}
	}
	for _, name := range []string{"naive-shutdown", "prestop-exec-distroless", "the-trap/introducing"} {
		if v, ok := rows[name]; ok && v.Drops == 0 {
			t.Errorf("%s dropped nothing", name)
		}
	}
	if v, ok := rows["prestop-exec-distroless"]; ok && len(v.HookFailures) == 0 {
		t.Error("the distroless variant's failed preStop hook was not reported")
	}
	for _, v := range sum.Variants {
		if v.Control.Requests == 0 || v.Control.Failures != 0 && quiet(v.Variant) {
			t.Errorf("%s control window: %d failures in %d requests", v.Variant, v.Control.Failures, v.Control.Requests)
		}
		// The README's claims rest on clean rows: none suspect, and every
		// request inside a window (the catch-all Outside bucket empty).
		for _, why := range v.Suspect {
			if quiet(v.Variant) {
				t.Errorf("%s is suspect: %s", v.Variant, why)
			}
		}
		if v.Outside.Requests != 0 {
			t.Errorf("%s: %d requests outside every window", v.Variant, v.Outside.Requests)
		}
		expected := v.Builtin
		if v.Variant == "the-trap/introducing" {
			expected = "no-prestop"
		}
		for _, r := range v.Rollouts {
			if r.MeasuredVariant != expected {
				t.Errorf("%s rollout %d measured %s (%s)", v.Variant, r.N, r.MeasuredVariant, r.LiveTemplate)
			}
		}
	}
	// The report rebuilt from the raw data agrees with the live run.
	again, err := analysis.Analyze(dir, analysis.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range again.Summary.Variants {
		if v.Drops != sum.Variants[i].Drops || v.Requests != sum.Variants[i].Requests {
			t.Errorf("re-analysis of %s: %d drops / %d requests, the run said %d / %d", v.Variant, v.Drops, v.Requests, sum.Variants[i].Drops, sum.Variants[i].Requests)
		}
	}

	// The raw data is there and reads back to the summary's counts.
	var failuresInResults uint64
	for _, v := range sum.Variants {
		if strings.HasSuffix(v.Variant, "/introducing") {
			continue // the same results file as its variant's row
		}
		f, err := os.Open(filepath.Join(dir, runfile.ResultsFile(v.Variant)))
		if err != nil {
			t.Fatal(err)
		}
		var n uint64
		err = traffic.ReadResults(f, func(r traffic.Record) error {
			n++
			if r.Class.Failed() {
				failuresInResults++
			}
			return nil
		})
		f.Close()
		if err != nil || n != v.Requests {
			t.Errorf("%s: read %d results back (%v), summary says %d", v.Variant, n, err, v.Requests)
		}
		// Every request is in exactly one window, and its classes sum to it.
		inWindows, classes := sum.Accounted(v.Variant)
		if inWindows != n || classes != n {
			t.Errorf("%s: %d results, %d in windows, %d by class", v.Variant, n, inWindows, classes)
		}
	}
	failures, err := os.ReadFile(filepath.Join(dir, runfile.FailuresFile))
	if err != nil {
		t.Fatal(err)
	}
	if got := uint64(strings.Count(string(failures), "\n")); got != failuresInResults {
		t.Errorf("failures.jsonl has %d lines, the results %d failures", got, failuresInResults)
	}
	events := readEvents(t, dir)
	kinds := map[timeline.Kind]int{}
	for _, e := range events {
		kinds[e.Kind]++
	}
	n := rollouts * len(sc.Variants)
	if kinds[timeline.KindRolloutStart] != n || kinds[timeline.KindPodDeletionRequested] < 2*n || kinds[timeline.KindEndpointRemoved] < 2*n || kinds[timeline.KindKubeProxySynced] == 0 || kinds[timeline.KindRigSample] == 0 {
		t.Errorf("events by kind: %v", kinds)
	}
	if len(bad.Gaps) == 0 {
		t.Error("no deletion→endpoint-removal gaps measured")
	}
	// The pods' own counts are exact and equal the client's 2xx in every
	// row. The deleted pods left their exit totals.
	for _, v := range sum.Variants {
		sv := v.Server
		if sv == nil {
			t.Errorf("%s: no pods' view", v.Variant)
			continue
		}
		t.Logf("%s: client sent %d, got %d 2xx; %d pods answered %d (%d 2xx); %d final, %d uncertain, %d scrape errors",
			v.Variant, sv.ClientSent, sv.ClientGot2xx, sv.Pods, sv.PodsAnswered, sv.PodsAnswered2xx, sv.PodsFinal, sv.Uncertain, sv.ScrapeErrors)
		// A pod cannot answer fewer 2xx than the client got, unless a
		// failed scrape left its count short, or it exited with requests
		// in flight that it answered without counting (named, allowed up
		// to that many). It can
		// answer more only for requests the client saw fail after the pod
		// answered (a pod killed mid-response): no more than those.
		got := uint64(max(sv.PodsAnswered2xx, 0))
		// The pods' view covers the variant's whole traffic, both rows of
		// a variant with `from`.
		var lossy uint64 // client failures a sent answer may hide behind
		for _, row := range sum.Variants {
			if analysis.RowVariant(row.Variant) != analysis.RowVariant(v.Variant) {
				continue
			}
			tallies := append([]analysis.Tally{row.Tail}, windowsOf(row)...)
			if row.Variant == v.Variant {
				tallies = append(tallies, row.Control, row.Outside)
			}
			for _, tl := range tallies {
				lossy += tl.Classes[traffic.ClassTimeout] + tl.Classes[traffic.ClassReset] + tl.Classes[traffic.ClassEOF] + tl.Classes[traffic.ClassIdleClosed]
			}
		}
		// Bookshop seals its exit totals exactly (every response it
		// counted was written whole before it exited, and none after), so
		// the pods' view is exact and equal to the client's 2xx. A surplus
		// is only allowed up to the timeouts, resets and EOFs the client
		// saw (an answer written as the client gave up), and is logged.
		if !sv.Exact() {
			t.Errorf("%s: the pods' view is not exact: %s", v.Variant, report.ServerText(sv))
		}
		switch {
		case got < sv.ClientGot2xx:
			t.Errorf("%s: the pods answered %d 2xx, the client got %d: %s", v.Variant, got, sv.ClientGot2xx, report.ServerText(sv))
		case got-sv.ClientGot2xx > lossy:
			t.Errorf("%s: the pods answered %d 2xx, %d more than the client got, but the client saw only %d timeouts, resets or EOFs", v.Variant, got, got-sv.ClientGot2xx, lossy)
		case got > sv.ClientGot2xx:
			t.Logf("%s: the pods answered %d 2xx the client never received (it saw %d timeouts, resets or EOFs)", v.Variant, got-sv.ClientGot2xx, lossy)
		}
		if sv.PodsFinal < 2*rollouts {
			t.Errorf("%s: %d pods left their exit totals, want at least %d", v.Variant, sv.PodsFinal, 2*rollouts)
		}
	}
}

// freeAddr returns a loopback address with a port that was free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// scrapeUntilRollout scrapes url until it shows a variant in its rollout
// phase, then reports true; false if ctx ends first.
func scrapeUntilRollout(ctx context.Context, url string, saw chan<- bool) {
	err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		resp, err := http.Get(url)
		if err != nil {
			return false, nil
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return regexp.MustCompile(`droprun_phase\{phase="rollout",variant="[^"]+"\} 1`).Match(b), nil
	})
	saw <- err == nil
}

// checkMetrics: the live metrics showed a rollout while it ran, the final
// values are in the run directory, and they were pushed, grouped by run id.
func checkMetrics(t *testing.T, dir string, sawRollout <-chan bool, pushed <-chan string) {
	t.Helper()
	if !<-sawRollout {
		t.Error("/metrics never showed a variant in its rollout phase")
	}
	b, err := os.ReadFile(filepath.Join(dir, runfile.MetricsFile))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`droprun_requests_total\{class="2xx",variant="no-prestop"\} [1-9]`).Match(b) {
		t.Errorf("%s lacks no-prestop's 2xx count:\n%.2000s", runfile.MetricsFile, b)
	}
	select {
	case p := <-pushed:
		if want := "PUT /metrics/job/droprun/run_id/" + filepath.Base(dir) + "\n"; !strings.HasPrefix(p, want) || !strings.Contains(p, "droprun_requests_total") {
			t.Errorf("push: got %.300q, want %q with the metrics", p, want)
		}
	default:
		t.Error("nothing was pushed to the Pushgateway")
	}
}

// TestIntegrationRunGateway: through the in-cluster proxy, no-prestop's
// drops show as 502, and at least 95% of those the gateway answered are
// explained by the race window of the node whose rules routed the
// gateway's connection: the gateway pod's node, not the entry node. A
// request the client gave up on names no gateway pod, so no routing node:
// the data cannot place it, and the analysis must say so (WhyNoProxyPod)
// rather than count it inside or outside a window. Such requests may not
// be most of the drops. (A CI run had 80 of 917 drops so, all timeouts.)
// Nor is a 502 the gateway made itself after its node had stopped
// routing to the deleted pods, with no unanswered dial there
// (WhyProxyOwn: a clean-clone CI run here had 41 of 519 so, sent 0.50-0.58
// s after the deletion while the gateway's node got 14% of a core, each
// answered after 0.5 s, the gateway's dial timeout); such drops make the
// row suspect and are left out of the 95%, and a run with any is the
// rig's (rigStalls): checked, and measured again if a check fails (a CI
// run had 92 such beside 38 outside every window). The rate is 300 req/s, as the
// fronts' tests: at 500 the gateway's node was starved in CI runs (302 of
// 794 drops the gateway's own once).
func TestIntegrationRunGateway(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	needCluster(t, ctx)
	sc := itScenario(t, `metadata: {name: e2e-gateway}
variants:
  - variant: no-prestop
rollouts: 1
traffic: {rate: 300, control: 5s, between: 3s, settle: 3s, balance: 10s, target: gateway}
`)
	quietRun(ctx, t, sc, func(t testing.TB, a *analysis.Analysis, dir string) {
		v := a.Summary.Variants[0]
		t.Logf("gateway no-prestop: %d drops, classes %v", v.Drops, v.Classes)
		if v.Classes[traffic.Class502] == 0 {
			t.Errorf("no 502 through the gateway: classes %v", v.Classes)
		}
		// The gateway's dials reuse source ports: after its dial to a dead pod
		// timed out, a later dial can match the stale conntrack entry and go
		// there again, after the rules changed; the flush after the rollout
		// counts those entries, and the analysis puts such drops down to them.
		e := v.Explained
		if e == nil || v.Drops == 0 {
			t.Fatalf("gateway no-prestop: %d drops, explained %+v; want drops, and an explanation", v.Drops, e)
		}
		unnamed, own := e.Why[analysis.WhyNoProxyPod], e.Why[analysis.WhyProxyOwn]
		if named := v.Drops - unnamed - own; 2*(unnamed+own) > v.Drops || float64(e.Explained+e.Conntrack+e.Cut) < 0.95*float64(named) {
			t.Errorf("gateway no-prestop: %d drops, %d naming no gateway pod, %d the gateway's own, explained %+v; want at least 95%% of the rest explained by the gateway pod's node's race windows or its stale conntrack entries, and the two left out less than half", v.Drops, unnamed, own, e)
			logOutside(t, dir, v)
		} else {
			t.Logf("gateway no-prestop: of %d drops naming the gateway pod and not its own, %d explained by a race window, %d by stale conntrack entries, %d cut by the close; %d named none, %d the gateway's own", named, e.Explained, e.Conntrack, e.Cut, unnamed, own)
		}
		if own > 0 && len(v.Suspect) == 0 {
			t.Errorf("gateway no-prestop: %d drops the gateway failed itself, and the row is not suspect", own)
		}
	})
}

// logOutside logs, for a failed check, v's windows and a sample of its
// drops outside every window or the proxy's own, with their send times
// from the deletion before:
// what a CI log must show to tell why they fell outside.
func logOutside(t testing.TB, dir string, v analysis.VariantSummary) {
	t.Helper()
	for _, g := range v.Routes {
		t.Logf("window: pod %s on %s, deleted %s, listener closed +%.3f s, unrouted +%.3f s, drops %v", g.Pod, g.Node, g.Deleted.Format("15:04:05.000"), g.ListenerClosed, g.Unrouted, g.Drops)
	}
	f, err := os.Open(filepath.Join(dir, runfile.FailuresFile))
	if err != nil {
		t.Logf("no failures to show: %v", err)
		return
	}
	defer f.Close()
	shown := 0
	err = jsonl.Read(f, runfile.FailuresFile, func(x analysis.Failure) error {
		if x.Explained != analysis.WhyOutside && x.Explained != analysis.WhyProxyOwn || shown >= 20 {
			return nil
		}
		shown++
		t.Logf("%s: sent %s (+%.3f s after %s), %s after %.3f s, via %s, routed by %s", x.Explained, x.Time.Format("15:04:05.000"), x.SinceDeletion, x.NearestDeletion, x.Class, x.Latency, x.Via, x.RoutedBy)
		return nil
	})
	if err != nil {
		t.Logf("reading %s: %v", runfile.FailuresFile, err)
	}
}

// quietRun runs sc in runDir(t) and checks the measurement with check.
// The cluster tests' expectations hold for a quiet rig; a shared CI
// machine is not always one (a CI run's TestIntegrationRun had 16 of
// no-prestop's timeouts excused, and failed on that alone). So when the
// rig stalled in the run with requests in flight (timeouts excused as the
// rig's, a control window that failed while the rig was saturated, or
// answers the pods sent that the client never received: rigStalls) the
// checks are first tried (trialCheck): if they pass, the
// stall changed nothing they hold and the test passes; if they fail, the
// faults are logged with the stall's evidence and sc is measured again
// (in dir-againN), up to maxRemeasures times. A fault on a quiet rig, or
// in the last measurement, fails the test: a rig that stalls every time
// still fails it. A window flagged saturated that lost nothing is not a
// stall: the row stays trusted.
func quietRun(ctx context.Context, t *testing.T, sc *scenario.Scenario, check func(t testing.TB, a *analysis.Analysis, dir string)) {
	t.Helper()
	dir := runDir(t)
	for try := 1; ; try++ {
		a := measure(ctx, t, sc, dir)
		stalls := rigStalls(a.Summary)
		if len(stalls) == 0 || try > maxRemeasures {
			check(t, a, dir)
			return
		}
		why := strings.Join(slices.Sorted(maps.Values(stalls)), "; ")
		faults := trialCheck(t, func(tb testing.TB) { check(tb, a, dir) })
		if len(faults) == 0 {
			t.Logf("the rig stalled in %s, which the analysis holds suspect; the checks pass all the same", why)
			return
		}
		t.Logf("the rig stalled in %s, which the analysis holds suspect, and %d checks failed (%s): measuring again", why, len(faults), strings.Join(faults, "; "))
		if ctx.Err() != nil {
			t.Fatal(ctx.Err())
		}
		dir = fmt.Sprintf("%s-again%d", runDir(t), try)
	}
}

// measure runs sc into dir on the package's cluster, failing the test if
// the run fails.
func measure(ctx context.Context, t *testing.T, sc *scenario.Scenario, dir string) *analysis.Analysis {
	t.Helper()
	a, err := Run(ctx, sc, Options{Dir: dir, Log: testWriter{t}, Keep: true, Version: itVersion(),
		Testbed: testbed.Options{ModuleDir: moduleDir(), ImageDir: t.TempDir()}})
	if a != nil {
		itCreated = true // Run created or reused it; the package deletes it
	}
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// rigStalls returns the variants of sum with a window that lost requests
// to the rig (timeouts excused as the rig's stall, a control window that
// failed while it was saturated, answers the pods sent that the client
// never received: it gave up on answers that came, beyond what race
// windows explain, or 502s a starved proxy made itself), each with the
// analysis's evidence.
func rigStalls(sum *analysis.Summary) map[string]string {
	out := map[string]string{}
	add := func(row, why string) {
		v := analysis.RowVariant(row)
		if out[v] != "" {
			why = out[v] + "; " + why
		}
		out[v] = why
	}
	for _, v := range sum.Variants {
		if v.Control.Failures > 0 && v.ControlRig != nil && v.ControlRig.Saturated {
			add(v.Variant, fmt.Sprintf("%s's control window (%d failures; rig: %s)", v.Variant, v.Control.Failures, v.ControlRig))
		}
		for _, r := range v.Rollouts {
			if r.Excused > 0 {
				add(v.Variant, fmt.Sprintf("%s rollout %d (%d timeouts excused: %s)", v.Variant, r.N, r.Excused, r.ExcusedWhy))
			}
		}
		// A CI run of the catalogue: the-trap's second rollout lost 173
		// timeouts to answers its pods sent and the client never got, with
		// no stall the sampler saw.
		if v.Unreceived > 0 {
			add(v.Variant, fmt.Sprintf("%s (the pods answered %d 2xx the client never received: it gave up on answers that came)", v.Variant, v.Unreceived))
		}
		// A proxy that made 502s itself after its node stopped routing to
		// the deleted pods, with no unanswered dial there, was starved
		// (WhyProxyOwn). A CI run's gateway test: 92 such, beside 38
		// outside every window, no other stall seen; measured again it
		// passed.
		if e := v.Explained; e != nil && e.Why[analysis.WhyProxyOwn] > 0 {
			add(v.Variant, fmt.Sprintf("%s (%d 502s the proxy made itself: a starved proxy)", v.Variant, e.Why[analysis.WhyProxyOwn]))
		}
	}
	return out
}

// rowNames are sc's variants' names (the defaults set each).
func rowNames(sc *scenario.Scenario) []string {
	var out []string
	for _, v := range sc.Variants {
		out = append(out, v.Name)
	}
	return out
}

// stalledOnly returns a copy of sc that measures only the variants in
// stalled, after no-prestop (the reference the fixes are checked against)
// when sc has it.
func stalledOnly(sc *scenario.Scenario, stalled map[string]string) *scenario.Scenario {
	out := *sc
	out.Variants = nil
	for _, v := range sc.Variants {
		if _, ok := stalled[v.Name]; ok || v.Name == "no-prestop" {
			out.Variants = append(out.Variants, v)
		}
	}
	return &out
}

// runDir is a test's run directory: a temporary one, or DIR/<test name>
// with DROPRUN_E2E_DIR=DIR, kept for a look afterwards.
func runDir(t *testing.T) string {
	if d := os.Getenv("DROPRUN_E2E_DIR"); d != "" {
		return filepath.Join(d, t.Name())
	}
	return filepath.Join(t.TempDir(), "run")
}

// windowsOf returns the window tallies of v's rollouts.
func windowsOf(v analysis.VariantSummary) []analysis.Tally {
	var out []analysis.Tally
	for _, r := range v.Rollouts {
		out = append(out, r.Window)
	}
	return out
}

// readEvents reads a run directory's events.jsonl.
func readEvents(t testing.TB, dir string) []timeline.Event {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, runfile.EventsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	events, err := timeline.ReadEvents(f)
	if err != nil {
		t.Fatal(err)
	}
	return events
}

func countLines(t testing.TB, p string) uint64 {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var n uint64
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		n++
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return n
}
