package metrics

import (
	"fmt"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"

	"github.com/droprun/droprun/harness/traffic"
)

const (
	testRun      = "20260102-030405-smoke"
	testScenario = "smoke"
	testVersion  = "v0.1.0-test"
)

// requests is droprun_requests_total{variant, class}.
func requests(t *testing.T, m *Metrics, variant string, c traffic.Class) float64 {
	t.Helper()
	return testutil.ToFloat64(m.requests.WithLabelValues(variant, string(c)))
}

// family gathers m and returns the family called name, or fails.
func family(t *testing.T, m *Metrics, name string) *dto.MetricFamily {
	t.Helper()
	mfs, err := m.reg.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf
		}
	}
	t.Fatalf("no metric family %s", name)
	return nil
}

// labels returns a metric's labels as a map.
func labels(metric *dto.Metric) map[string]string {
	l := map[string]string{}
	for _, p := range metric.GetLabel() {
		l[p.GetName()] = p.GetValue()
	}
	return l
}

// histogram returns the variant's sample count and sum of the histogram
// family name.
func histogram(t *testing.T, m *Metrics, name, variant string) (uint64, float64) {
	t.Helper()
	for _, metric := range family(t, m, name).GetMetric() {
		if labels(metric)["variant"] == variant {
			h := metric.GetHistogram()
			return h.GetSampleCount(), h.GetSampleSum()
		}
	}
	t.Fatalf("%s has no variant %q", name, variant)
	return 0, 0
}

func TestObserveCountsEachClass(t *testing.T) {
	m := New(testRun, testScenario, testVersion)
	all := traffic.Classes()
	total := 0
	for i, c := range all {
		for range i + 1 {
			m.Observe("a", traffic.Record{Class: c, Latency: 10 * time.Millisecond})
			total++
		}
	}
	// Another variant is counted apart.
	m.Observe("b", traffic.Record{Class: traffic.Class502, Latency: time.Millisecond})

	for i, c := range all {
		if got, want := requests(t, m, "a", c), float64(i+1); got != want {
			t.Errorf("requests{a, %s} = %v, want %v", c, got, want)
		}
	}
	for _, c := range all {
		want := 0.0
		if c == traffic.Class502 {
			want = 1
		}
		if got := requests(t, m, "b", c); got != want {
			t.Errorf("requests{b, %s} = %v, want %v", c, got, want)
		}
	}
	n, sum := histogram(t, m, RequestDurationSeconds, "a")
	if n != uint64(total) || math.Abs(sum-0.01*float64(total)) > 1e-9 {
		t.Errorf("duration{a}: count %d sum %v, want %d and %v", n, sum, total, 0.01*float64(total))
	}
	if got := testutil.CollectAndCount(m.requests); got != 2*len(all) {
		t.Errorf("%d request series, want %d (every class of both variants)", got, 2*len(all))
	}
}

func TestEveryTrafficClassHasItsOwnSeries(t *testing.T) {
	seen := map[int]traffic.Class{}
	for _, c := range traffic.Classes() {
		i := classIndex(c)
		if classes[i] != c {
			t.Errorf("class %s counted as %s", c, classes[i])
		}
		if d, dup := seen[i]; dup {
			t.Errorf("classes %s and %s share index %d", c, d, i)
		}
		seen[i] = c
	}
}

func TestUnknownClassCountsAsOther(t *testing.T) {
	m := New(testRun, testScenario, testVersion)
	m.Observe("a", traffic.Record{})                          // zero Class
	m.Observe("a", traffic.Record{Class: "418 I'm a teapot"}) // not a traffic class
	if got := requests(t, m, "a", traffic.ClassOther); got != 2 {
		t.Errorf("requests{a, 000:other} = %v, want 2", got)
	}
	if got := testutil.CollectAndCount(m.requests); got != len(traffic.Classes()) {
		t.Errorf("%d request series, want %d: an unknown class must not add one", got, len(traffic.Classes()))
	}
}

func TestVariantStartedPreinitialises(t *testing.T) {
	m := New(testRun, testScenario, testVersion)
	m.VariantStarted("a")
	for _, c := range traffic.Classes() {
		if got := requests(t, m, "a", c); got != 0 {
			t.Errorf("requests{a, %s} = %v, want 0", c, got)
		}
	}
	// The series exist, at zero: the exposition holds them.
	if got, want := testutil.CollectAndCount(m.requests), len(traffic.Classes()); got != want {
		t.Errorf("%d request series after VariantStarted, want %d", got, want)
	}
	for _, name := range []string{RequestDurationSeconds, RolloutsTotal, RolloutDurationSeconds, RolloutWindowDropsTotal, CurrentRollout} {
		if got := len(family(t, m, name).GetMetric()); got != 1 {
			t.Errorf("%s: %d series after VariantStarted, want 1", name, got)
		}
	}
	checkPhase(t, m, "a", PhaseDeploy)
	if got := testutil.ToFloat64(m.rollout.WithLabelValues("a")); got != 0 {
		t.Errorf("current rollout = %v, want 0", got)
	}
}

// checkPhase checks that want is the variant's only phase at 1.
func checkPhase(t *testing.T, m *Metrics, variant string, want Phase) {
	t.Helper()
	for _, p := range Phases() {
		v := testutil.ToFloat64(m.phase.WithLabelValues(variant, string(p)))
		if (p == want) != (v == 1) || (v != 0 && v != 1) {
			t.Errorf("phase{%s, %s} = %v with %q current", variant, p, v, want)
		}
	}
}

func TestPhaseAndRollouts(t *testing.T) {
	m := New(testRun, testScenario, testVersion)
	m.VariantStarted("a")
	m.Phase("a", PhaseControl)
	checkPhase(t, m, "a", PhaseControl)

	m.RolloutStarted("a", 1)
	checkPhase(t, m, "a", PhaseRollout)
	if got := testutil.ToFloat64(m.rollout.WithLabelValues("a")); got != 1 {
		t.Errorf("current rollout = %v, want 1", got)
	}
	m.Phase("a", PhaseSettle)
	m.RolloutDone("a", 12*time.Second, 7)
	checkPhase(t, m, "a", PhaseSettle) // RolloutDone leaves the phase alone
	m.Phase("a", PhaseBetween)
	m.RolloutStarted("a", 2)
	m.RolloutDone("a", 30*time.Second, 0)
	m.Phase("a", PhaseDone)
	checkPhase(t, m, "a", PhaseDone)

	if got := testutil.ToFloat64(m.rollout.WithLabelValues("a")); got != 2 {
		t.Errorf("current rollout = %v, want 2", got)
	}
	if got := testutil.ToFloat64(m.rollouts.WithLabelValues("a")); got != 2 {
		t.Errorf("rollouts = %v, want 2", got)
	}
	if got := testutil.ToFloat64(m.windowDrops.WithLabelValues("a")); got != 7 {
		t.Errorf("window drops = %v, want 7", got)
	}
	if n, sum := histogram(t, m, RolloutDurationSeconds, "a"); n != 2 || sum != 42 {
		t.Errorf("rollout duration: count %d sum %v, want 2 and 42", n, sum)
	}

	// A phase that is not one of Phases is no label value.
	m.Phase("a", "tail")
	checkPhase(t, m, "a", "")
	for _, metric := range family(t, m, PhaseGauge).GetMetric() {
		if p := labels(metric)["phase"]; !slices.Contains(Phases(), Phase(p)) {
			t.Errorf("phase label %q", p)
		}
	}
}

func TestRunInfo(t *testing.T) {
	m := New(testRun, testScenario, testVersion)
	mf := family(t, m, RunInfo)
	if len(mf.GetMetric()) != 1 {
		t.Fatalf("%d run_info series", len(mf.GetMetric()))
	}
	got := labels(mf.GetMetric()[0])
	want := map[string]string{"scenario": testScenario, "run_id": testRun, "droprun_version": testVersion}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("run_info labels %v, want %v", got, want)
	}
	if v := mf.GetMetric()[0].GetGauge().GetValue(); v != 1 {
		t.Errorf("run_info = %v, want 1", v)
	}
}

// TestNoLabelFromErrorText feeds records whose error text, pod and class
// are all over the place, and checks that every label value in the
// exposition comes from a bounded set.
func TestNoLabelFromErrorText(t *testing.T) {
	m := New(testRun, testScenario, testVersion)
	errs := []string{
		`Get "http://127.0.0.1:30080/": dial tcp 127.0.0.1:30080: connect: connection refused`,
		`Get "http://127.0.0.1:30080/": read tcp 127.0.0.1:51234->127.0.0.1:30080: read: connection reset by peer`,
		`Get "http://127.0.0.1:30080/": context deadline exceeded (Client.Timeout exceeded while awaiting headers)`,
		"502 Bad Gateway",
		"something new \xff\xfe",
	}
	for i, e := range errs {
		code := uint16(0)
		if i == 3 {
			code = 502
		}
		rec := traffic.Record{
			Code: code, Error: e, Class: traffic.Classify(code, e),
			Pod: fmt.Sprintf("web-7d9f8b6c5d-%05d", i), Latency: time.Duration(i) * time.Second,
		}
		m.Observe("a", rec)
		rec.Class = traffic.Class(e) // a caller passing error text as a class
		m.Observe("a", rec)
	}
	m.RolloutStarted("a", 1)
	m.RolloutDone("a", time.Second, 3)

	allowed := map[string][]string{
		"variant":         {"a"},
		"class":           classStrings(),
		"phase":           phaseStrings(),
		"scenario":        {testScenario},
		"run_id":          {testRun},
		"droprun_version": {testVersion},
	}
	mfs, err := m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		for _, metric := range mf.GetMetric() {
			for name, value := range labels(metric) {
				ok, known := allowed[name]
				if !known {
					t.Errorf("%s: unexpected label %s=%q", mf.GetName(), name, value)
				} else if !slices.Contains(ok, value) {
					t.Errorf("%s: label %s=%q is not one of %q", mf.GetName(), name, value, ok)
				}
			}
		}
	}
	if got := requests(t, m, "a", traffic.ClassOther); got != float64(len(errs))+1 {
		t.Errorf("000:other = %v, want %d (the error-text classes plus the unmatched error)", got, len(errs)+1)
	}
}

func classStrings() []string {
	var s []string
	for _, c := range traffic.Classes() {
		s = append(s, string(c))
	}
	return s
}

func phaseStrings() []string {
	var s []string
	for _, p := range Phases() {
		s = append(s, string(p))
	}
	return s
}

func TestVariantLabelIsBounded(t *testing.T) {
	m := New(testRun, testScenario, testVersion)
	for i := range MaxVariants + 50 {
		m.Observe(fmt.Sprintf("v%d", i), traffic.Record{Class: traffic.Class2xx})
	}
	m.Phase("one-more", PhaseControl)
	if got, want := len(family(t, m, RequestDurationSeconds).GetMetric()), MaxVariants+1; got != want {
		t.Errorf("%d variant series, want %d (MaxVariants plus %s)", got, want, OverflowVariant)
	}
	if got := requests(t, m, OverflowVariant, traffic.Class2xx); got != 50 {
		t.Errorf("requests{%s, 2xx} = %v, want 50", OverflowVariant, got)
	}
	if len(m.variants) != MaxVariants {
		t.Errorf("%d variants cached, want %d", len(m.variants), MaxVariants)
	}
	checkPhase(t, m, OverflowVariant, PhaseControl)
}

func TestInvalidUTF8Variant(t *testing.T) {
	m := New("run\xff", testScenario, testVersion) // must not panic
	m.Observe("bad\xffname", traffic.Record{Class: traffic.Class2xx})
	if got := requests(t, m, "bad\uFFFDname", traffic.Class2xx); got != 1 {
		t.Errorf("requests = %v, want 1", got)
	}
}

func TestNilMetrics(t *testing.T) {
	var m *Metrics
	m.VariantStarted("a")
	m.Phase("a", PhaseControl)
	m.Observe("a", traffic.Record{})
	m.RolloutStarted("a", 1)
	m.RolloutDone("a", time.Second, 1)
	if err := m.WriteFile(t.TempDir() + "/m.prom"); err == nil {
		t.Error("WriteFile on nil: no error")
	}
}

func TestLint(t *testing.T) {
	m := New(testRun, testScenario, testVersion)
	m.VariantStarted("a")
	m.RolloutDone("a", time.Second, 0)
	mfs, err := m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	problems, err := promlint.NewWithMetricFamilies(mfs).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

// TestConcurrentUse observes from one goroutine, as traffic does, while
// the run changes phases and a scraper gathers (run it with -race).
func TestConcurrentUse(t *testing.T) {
	m := New(testRun, testScenario, testVersion)
	const n = 2000
	var wg sync.WaitGroup
	wg.Add(3)
	go func() {
		defer wg.Done()
		for i := range n {
			v := "a"
			if i%2 == 1 {
				v = "b"
			}
			m.Observe(v, traffic.Record{Class: traffic.Class2xx})
		}
	}()
	go func() {
		defer wg.Done()
		for i := range 100 {
			m.RolloutStarted("a", i)
			m.Phase("b", Phases()[i%len(phases)])
			m.RolloutDone("a", time.Second, 1)
		}
	}()
	go func() {
		defer wg.Done()
		for range 20 {
			if _, err := m.reg.Gather(); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	wg.Wait()
	if got := requests(t, m, "a", traffic.Class2xx) + requests(t, m, "b", traffic.Class2xx); got != n {
		t.Errorf("requests = %v, want %d", got, n)
	}
}

func TestObserveDoesNotAllocate(t *testing.T) {
	if testing.CoverMode() != "" || raceEnabled {
		t.Skip("instrumented build")
	}
	m := New(testRun, testScenario, testVersion)
	m.VariantStarted("a")
	m.VariantStarted("b")
	recs := benchRecords()
	i := 0
	allocs := testing.AllocsPerRun(1000, func() {
		v := "a"
		if i%100 == 99 {
			v = "b" // a variant change takes the slow path
		}
		m.Observe(v, recs[i%len(recs)])
		i++
	})
	if allocs != 0 {
		t.Errorf("Observe: %v allocations per call, want 0", allocs)
	}
}
