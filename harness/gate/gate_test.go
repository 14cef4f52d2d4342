package gate

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	junit "github.com/joshdk/go-junit"

	"github.com/droprun/droprun/harness/analysis"
	"github.com/droprun/droprun/harness/history"
	"github.com/droprun/droprun/harness/runfile"
	"github.com/droprun/droprun/harness/scenario"
	"github.com/droprun/droprun/harness/stats"
	"github.com/droprun/droprun/harness/traffic"
)

const twoVariants = `apiVersion: droprun/v1alpha1
kind: Scenario
metadata:
  name: gate
variants:
  - variant: no-prestop
  - variant: graceful-drain
rollouts: 2
traffic:
  rate: 500
`

// row is a variant row with the given drops per rollout, requests each.
func row(name string, requests uint64, drops ...uint64) analysis.VariantSummary {
	v := analysis.VariantSummary{Variant: name}
	for i, d := range drops {
		v.Rollouts = append(v.Rollouts, analysis.RolloutSummary{N: i + 1, Window: analysis.Tally{Requests: requests, Failures: d}})
		v.Drops += d
		v.WindowRequests += requests
	}
	return v
}

// run is a whole run of rows (the scenario asks for len(drops) rollouts).
func run(rows ...analysis.VariantSummary) *analysis.Analysis {
	sum := &analysis.Summary{Variants: rows}
	sum.Finished = time.Unix(1, 0)
	sum.Traffic.Rollouts = len(rows[0].Rollouts)
	yaml := strings.Replace(twoVariants, "rollouts: 2", "rollouts: "+strconv.Itoa(sum.Traffic.Rollouts), 1)
	sc, err := scenario.Parse(runfile.ScenarioFile, []byte(yaml))
	if err != nil {
		panic(err)
	}
	return &analysis.Analysis{Summary: sum, ScenarioYAML: []byte(yaml), Scenario: sc}
}

// whole is a finished run of rows, as a baseline.
func whole(rows ...analysis.VariantSummary) *analysis.Summary {
	sum := &analysis.Summary{Variants: rows}
	sum.Finished = time.Unix(1, 0)
	return sum
}

func f64(x float64) *float64 { return &x }
func i64(x int64) *int64     { return &x }

// result returns the report's result for row and check.
func result(t *testing.T, r *Report, row, check string) Result {
	t.Helper()
	for _, res := range r.Results {
		if res.Row == row && res.Check == check {
			return res
		}
	}
	t.Fatalf("no %s result for %q in %+v", check, row, r.Results)
	return Result{}
}

// Every way a gate could pass without checking is bad usage (exit 2) or a
// failure, never a pass.
func TestCheckIsNeverVacuous(t *testing.T) {
	good := func() *analysis.Analysis {
		return run(row("no-prestop", 5000, 300, 280), row("graceful-drain", 5000, 0, 0))
	}
	usageCases := []struct {
		name string
		a    *analysis.Analysis
		l    Limits
		want string
	}{
		{"no limit", good(), Limits{Confidence: 0.95}, "give at least one of"},
		{"a typo in --variant", good(), Limits{Confidence: 0.95, MaxDropsPerRollout: i64(0), Rows: []string{"no-prestopp"}}, `--variant "no-prestopp": the run has no such row; its rows are "no-prestop", "graceful-drain"`},
		{"NaN rate", good(), Limits{Confidence: 0.95, MaxDropRate: f64(math.NaN())}, "--max-drop-rate NaN"},
		{"infinite rate", good(), Limits{Confidence: 0.95, MaxDropRate: f64(math.Inf(1))}, "--max-drop-rate +Inf"},
		{"negative rate", good(), Limits{Confidence: 0.95, MaxDropRate: f64(-0.1)}, "--max-drop-rate -0.1"},
		{"negative per rollout", good(), Limits{Confidence: 0.95, MaxDropsPerRollout: i64(-1)}, "--max-drops-per-rollout -1"},
		{"confidence 1", good(), Limits{Confidence: 1, MaxDropsPerRollout: i64(0)}, "--confidence 1"},
		{"confidence 0", good(), Limits{Confidence: 0, MaxDropsPerRollout: i64(0)}, "--confidence 0"},
		{"confidence below 0.5", good(), Limits{Confidence: 0.2, MaxDropRate: f64(0.064)}, "--confidence 0.2"},
		{"rate limit 1", good(), Limits{Confidence: 0.95, MaxDropRate: f64(1)}, "--max-drop-rate 1"},
		{"an unknown row the scenario lacks too", good(), Limits{Confidence: 0.95, MaxDropsPerRollout: i64(0), Rows: []string{"prestop-sleep"}}, `--variant "prestop-sleep": the run has no such row`},
		{"baseline lacks the row", good(), Limits{Confidence: 0.95, Baseline: &analysis.Summary{Variants: []analysis.VariantSummary{row("no-prestop", 10, 1)}}}, `the baseline has no row "graceful-drain"`},
	}
	for _, tc := range usageCases {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Check(tc.a, tc.l)
			var ue *UsageError
			if !errors.As(err, &ue) || r != nil {
				t.Fatalf("Check = %v, %v; want a *UsageError", r, err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q, want it to contain %q", err, tc.want)
			}
		})
	}

	failCases := []struct {
		name   string
		break_ func(a *analysis.Analysis)
		want   string
	}{
		{"interrupted", func(a *analysis.Analysis) { a.Summary.Interrupted = true }, "the run was interrupted"},
		{"errored", func(a *analysis.Analysis) { a.Summary.Error = "rollout 2: timed out" }, "the run ended in an error: rollout 2: timed out"},
		{"killed", func(a *analysis.Analysis) { a.Summary.Finished = time.Time{} }, "the run never finished"},
		{"a variant missing", func(a *analysis.Analysis) { a.Summary.Variants = a.Summary.Variants[1:] }, "variant no-prestop was never measured"},
		{"fewer rollouts than asked", func(a *analysis.Analysis) {
			v := &a.Summary.Variants[1]
			v.Rollouts = v.Rollouts[:1]
		}, "variant graceful-drain has 1 of the 2 rollouts asked for"},
	}
	for _, tc := range failCases {
		t.Run(tc.name, func(t *testing.T) {
			a := good()
			tc.break_(a)
			r, err := Check(a, Limits{Confidence: 0.95, MaxDropsPerRollout: i64(0), Rows: []string{"graceful-drain"}})
			if err != nil {
				t.Fatal(err)
			}
			res := result(t, r, "", CheckRun)
			if res.Verdict != Fail || !strings.Contains(res.Message, tc.want) || r.Verdict() != Fail {
				t.Errorf("run check %+v (report %v); want a failure saying %q", res, r.Verdict(), tc.want)
			}
		})
	}

	t.Run("a row with no window requests", func(t *testing.T) {
		a := good()
		a.Summary.Variants[1] = analysis.VariantSummary{Variant: "graceful-drain", Rollouts: a.Summary.Variants[1].Rollouts}
		for i := range a.Summary.Variants[1].Rollouts {
			a.Summary.Variants[1].Rollouts[i].Window = analysis.Tally{}
		}
		r, err := Check(a, Limits{Confidence: 0.95, MaxDropsPerRollout: i64(0), Rows: []string{"graceful-drain"}})
		if err != nil {
			t.Fatal(err)
		}
		if res := result(t, r, "graceful-drain", CheckMeasured); res.Verdict != Fail || r.Verdict() != Fail {
			t.Errorf("%+v; want a failure: nothing was measured", res)
		}
	})
}

// A rate limit passes only when its upper bound over rollouts is within
// it; a run too small to show it is inconclusive and says what it would
// take. A row stands on its own rollouts: the run's other rows change
// nothing. A row without drops is bounded for any burst shape unless a
// burstiness is stated; a row with drops is never taken as calmer than
// the gate's floor.
func TestDropRateLimit(t *testing.T) {
	half := uint64(14657 / 2)
	steady := row("no-prestop", half, 300, 280) // no burstier than independent requests
	bursty := row("no-prestop", half, 100, 600) // φ in the hundreds
	clean := row("no-prestop", half, 0, 0)      // nothing in the run dropped
	zero := func(b *float64) *float64 { return b }
	tests := []struct {
		name       string
		other      analysis.VariantSummary
		v          analysis.VariantSummary
		limit      float64
		burstiness *float64
		want       Verdict
		message    string
	}{
		// The review's case: 0 drops beside a calm row used to borrow its
		// ρ and pass; now it is bounded for any shape, whatever the other
		// row did.
		{"0 drops beside calm drops", steady, row("graceful-drain", half, 0, 0), 1e-3, nil, Inconclusive, "at most 78% of rollouts drop at all, whatever the shape of their bursts"},
		{"0 drops beside bursty drops", bursty, row("graceful-drain", half, 0, 0), 1e-3, nil, Inconclusive, "at most 78% of rollouts drop at all, whatever the shape of their bursts"},
		{"0 drops, nothing dropped", clean, row("graceful-drain", 5000, 0, 0, 0), 1e-3, nil, Inconclusive, "state how bursty its drops would be with --burstiness"},
		// Stated independent (ρ 0), 0 in 14,656 bounds the rate at 2.1e-4.
		{"0 drops, stated independent, limit above", clean, row("graceful-drain", half, 0, 0), 1e-3, zero(f64(0)), Pass, "at most 0.00021 over rollouts, for drops as bursty as ρ 0 (stated with --burstiness): within the limit 0.001"},
		{"0 drops, stated independent, limit below", clean, row("graceful-drain", half, 0, 0), 1e-4, zero(f64(0)), Inconclusive, "stated with --burstiness"},
		{"many drops", steady, row("graceful-drain", 5000, 300, 280), 1e-3, nil, Fail, "above the limit 0.001"},
		{"observed above, not significantly", clean, row("graceful-drain", 500, 1, 0), 5e-4, nil, Inconclusive, "the observed rate is above the limit"},
		{"limit 0 never passes", steady, row("graceful-drain", 50000, 0, 0), 0, nil, Inconclusive, "use --max-drops-per-rollout 0"},
		// Calm-looking drops, 2 or 3 a rollout: their own φ is 1 and would
		// pass 0.001; the floor (ρ 0.005, φ 26 at 5,000) does not.
		{"calm drops take the floor", clean, row("graceful-drain", 5000, 2, 3, 1, 2, 2), 1e-3, nil, Inconclusive, "for drops at least as bursty as ρ 0.005 (the gate's floor"},
		{"calm drops, stated independent", clean, row("graceful-drain", 5000, 2, 3, 1, 2, 2), 1e-3, zero(f64(0)), Pass, "within the limit 0.001"},
		// Bursts: 60 drops in one rollout of 10, none in the others. Per
		// request the bound is 9.3e-4; over rollouts it is far wider.
		{"one burst", clean, row("graceful-drain", 10000, 60, 0, 0, 0, 0, 0, 0, 0, 0, 0), 1e-3, nil, Inconclusive, "at most 0.0031 over rollouts (drops 60x as bursty"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			other := tc.other
			for len(other.Rollouts) < len(tc.v.Rollouts) {
				other.Rollouts = append(other.Rollouts, other.Rollouts[0])
			}
			other.Rollouts = other.Rollouts[:len(tc.v.Rollouts)]
			a := run(other, tc.v)
			r, err := Check(a, Limits{Confidence: 0.95, MaxDropRate: &tc.limit, Burstiness: tc.burstiness, Rows: []string{"graceful-drain"}})
			if err != nil {
				t.Fatal(err)
			}
			res := result(t, r, "graceful-drain", CheckDropRate)
			if res.Verdict != tc.want || !strings.Contains(res.Message, tc.message) {
				t.Errorf("%v: %s\nwant %v containing %q", res.Verdict, res.Message, tc.want, tc.message)
			}
			if tc.want == Inconclusive && tc.limit > 0 && !strings.Contains(res.Message, "it would take about") {
				t.Errorf("an inconclusive rate check must say what it would take: %s", res.Message)
			}
		})
	}
	if _, err := Check(run(clean), Limits{Confidence: 0.95, MaxDropRate: f64(1e-3), Burstiness: f64(1.5)}); !errors.As(err, new(*UsageError)) {
		t.Errorf("--burstiness 1.5: %v, want a usage error", err)
	}
}

// A per-rollout limit is exact over rollouts: it passes when at most the
// tolerance of rollouts could break it (Clopper-Pearson at 95 %), fails
// when more than the tolerance are shown to, and otherwise says how many
// rollouts without a breach would pass it.
func TestDropsPerRolloutLimit(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    analysis.VariantSummary
		tol  float64
		want Verdict
		says string
	}{
		{"10 clean rollouts", row("graceful-drain", 5000, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0), 0, Pass, "at 95% at most 26% of rollouts break it (exact, over 10 rollouts): within the tolerance 30% of rollouts"},
		{"3 clean rollouts", row("graceful-drain", 5000, 0, 0, 0), 0, Inconclusive, "between 0% and 64% of rollouts break it (exact, 0 of 3 here)"},
		{"3 clean rollouts say how many more", row("graceful-drain", 5000, 0, 0, 0), 0, Inconclusive, "6 more rollout(s) without a breach would show it met (traffic.rollouts 9 in all)"},
		{"every rollout over", row("no-prestop", 5000, 300, 2, 280), 0.1, Fail, "rollout 1 dropped 300; rollout 2 dropped 2; rollout 3 dropped 280: above the limit 1 per rollout; at 95% at least 37% of rollouts break it (exact, 3 of 3 here): above the tolerance 10%"},
		{"one of three over", row("no-prestop", 5000, 300, 0, 0), 0, Inconclusive, "rollout 1 dropped 300: above the limit 1 per rollout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Check(run(tc.v), Limits{Confidence: 0.95, MaxDropsPerRollout: i64(1), Tolerance: tc.tol})
			if err != nil {
				t.Fatal(err)
			}
			if res := result(t, r, tc.v.Variant, CheckPerRollout); res.Verdict != tc.want || !strings.Contains(res.Message, tc.says) {
				t.Errorf("%v: %s\nwant %v containing %q", res.Verdict, res.Message, tc.want, tc.says)
			}
		})
	}
	for _, bad := range []float64{-0.1, 1, math.NaN()} {
		if _, err := Check(run(row("graceful-drain", 1000, 0)), Limits{Confidence: 0.95, MaxDropsPerRollout: i64(0), Tolerance: bad}); !errors.As(err, new(*UsageError)) {
			t.Errorf("--rollout-tolerance %v: %v, want a usage error", bad, err)
		}
	}
}

// A suspect measurement cannot pass, but a limit its drops break still fails.
func TestSuspectIsInconclusive(t *testing.T) {
	a := run(row("no-prestop", 5000, 300, 280), row("graceful-drain", 50000, 0, 0))
	a.Summary.Variants[1].Suspect = []string{"the client held 610 of 1000 req/s"}
	// As Analyze writes it: the run's notes repeat the row's, prefixed.
	a.Summary.Suspect = []string{"graceful-drain: the client held 610 of 1000 req/s"}
	r, err := Check(a, Limits{Confidence: 0.95, MaxDropsPerRollout: i64(0), Tolerance: 0.1})
	if err != nil {
		t.Fatal(err)
	}
	if res := result(t, r, "graceful-drain", CheckMeasured); res.Verdict != Inconclusive || strings.Count(res.Message, "610 of 1000") != 1 {
		t.Errorf("graceful-drain: %+v; want inconclusive, its reason said once", res)
	}
	if r.Verdict() != Fail {
		t.Errorf("verdict %v: no-prestop's drops still fail the run", r.Verdict())
	}
	r, _ = Check(a, Limits{Confidence: 0.95, MaxDropsPerRollout: i64(0), Tolerance: 0.1, Rows: []string{"graceful-drain"}})
	if r.Verdict() != Inconclusive {
		t.Errorf("verdict %v, want inconclusive", r.Verdict())
	}
}

// doubtCase is a row checked on a cluster of its own (kind or not) and
// the verdict, with a part of its message, a limit should give it.
type doubtCase struct {
	name    string
	row     analysis.VariantSummary
	kind    bool
	verdict Verdict
	want    string
}

// TestUnreceivedAnswers: when the pods answered 2xx the client never
// received (the row's Unreceived), up to that many of a rollout's
// timeouts, resets and EOFs outside race windows may be the rig's (the
// client, or the host's path to the cluster, lost the answers), even with
// no rig sample short of CPU: a limit they alone break is inconclusive.
// Drops beyond them, or of a class no answer hides behind, still fail,
// except, on kind, drops in race windows: the host that lost the answers
// shares its CPU with the nodes' kube-proxy.
// (A CI run here: a CPU hog left the client 0.25 s behind, under the
// stall threshold, while every request timed out for 9 s and the pods
// answered all 9,208.)
func TestUnreceivedAnswers(t *testing.T) {
	lost := func(unreceived uint64, class traffic.Class) analysis.VariantSummary {
		v := row("graceful-drain", 19000, 0, 9208, 0)
		ro := &v.Rollouts[1]
		ro.Window.Classes = map[traffic.Class]uint64{traffic.Class2xx: 19000 - 9208, class: 9208}
		ro.Explained = &analysis.Explained{Unexplained: 9208, Why: map[string]uint64{analysis.WhyOutside: 9208}}
		v.Unreceived = unreceived
		return v
	}
	// 2,000 refusals inside race windows beside 7,208 timeouts outside.
	raced := lost(7208, traffic.ClassTimeout)
	ro := &raced.Rollouts[1]
	ro.Window.Classes[traffic.ClassTimeout], ro.Window.Classes[traffic.ClassRefused] = 7208, 2000
	ro.Explained = &analysis.Explained{Explained: 2000, Unexplained: 7208, Why: map[string]uint64{analysis.WhyOutside: 7208}}
	for _, tc := range []doubtCase{
		{"refusals in race windows beside lost answers", raced, false, Fail,
			"rollout 2 dropped 9,208 (2,000 of them the variant's beyond doubt, while the pods answered 7,208 2xx"},
		{"on kind, refusals in race windows beside lost answers", raced, true, Inconclusive,
			"7,208 of which may hide among this rollout's 7,208 timeouts, resets and EOFs outside every race window (the rest shared out over the other rollouts), 2,000 of them inside a race window (the kind nodes share the rig's CPU"},
		{"every timeout may hide an answer", lost(9208, traffic.ClassTimeout), false, Inconclusive,
			"rollout 2 dropped 9,208 while the pods answered 9,208 2xx the client never received, 9,208 of which may hide among this rollout's 9,208 timeouts, resets and EOFs outside every race window (the rest shared out over the other rollouts): above the limit 5 per rollout (1 of them only with drops the rig, not the variant, may have caused"},
		{"more timeouts than answers lost", lost(100, traffic.ClassTimeout), false, Fail,
			"rollout 2 dropped 9,208 (9,108 of them the variant's beyond doubt, while the pods answered 100 2xx"},
		{"on kind, more timeouts than answers lost", lost(100, traffic.ClassTimeout), true, Fail,
			"rollout 2 dropped 9,208 (9,108 of them the variant's beyond doubt, while the pods answered 100 2xx"},
		{"refusals hide no answer", lost(9208, traffic.ClassRefused), true, Fail,
			"rollout 2 dropped 9,208: above the limit 5 per rollout; at 95% at least 1.7% of rollouts break it (exact, 1 of 3 here)"},
	} {
		a := run(row("no-prestop", 19000, 0, 0, 0), tc.row)
		a.Summary.Cluster.Kind = tc.kind
		r, err := Check(a, Limits{Confidence: 0.95, MaxDropsPerRollout: i64(5), Tolerance: 0.01, MaxDropRate: f64(0.001), Rows: []string{"graceful-drain"}})
		if err != nil {
			t.Fatal(err)
		}
		if res := result(t, r, "graceful-drain", CheckPerRollout); res.Verdict != tc.verdict || !strings.Contains(res.Message, tc.want) {
			t.Errorf("%s: per rollout %v %q; want %v containing %q", tc.name, res.Verdict, res.Message, tc.verdict, tc.want)
		}
		if res := result(t, r, "graceful-drain", CheckDropRate); res.Verdict != tc.verdict {
			t.Errorf("%s: drop rate %v %q; want %v", tc.name, res.Verdict, res.Message, tc.verdict)
		}
		if got := r.Verdict(); got != tc.verdict {
			t.Errorf("%s: check %v, want %v", tc.name, got, tc.verdict)
		}
	}
}

// TestFrontAnsweredDrops: through a front that logs every request, the
// drops it answered 2xx (the client never received the answers) leave a
// breach by them alone inconclusive, named as such; refusals beside them
// still fail.
func TestFrontAnsweredDrops(t *testing.T) {
	after := func(answered, refused uint64) analysis.VariantSummary {
		v := row("graceful-drain", 9500, 0, answered+refused, 0)
		ro := &v.Rollouts[1]
		ro.Window.Classes = map[traffic.Class]uint64{traffic.Class2xx: 9500 - answered - refused, traffic.ClassTimeout: answered, traffic.Class502: refused}
		ro.ByHop = map[string]uint64{analysis.HopFrontAnswered: answered}
		ro.Explained = &analysis.Explained{Unexplained: answered, Why: map[string]uint64{analysis.WhyFrontAnswered: answered}}
		if refused > 0 {
			ro.ByHop["front pod traefik-1"] = refused
			ro.Explained.Explained = refused
		}
		return v
	}
	for _, tc := range []doubtCase{
		{"answered by the front", after(23, 0), false, Inconclusive,
			"rollout 2 dropped 23 while the front answered 23 of them 2xx (its access log) and the client never received the answers: above the limit 5 per rollout (1 of them only with drops the rig"},
		{"answered by the front beside refusals", after(23, 10), false, Fail,
			"rollout 2 dropped 33 (10 of them the variant's beyond doubt, while the front answered 23 of them 2xx"},
		{"nothing answered", after(0, 10), false, Fail,
			"rollout 2 dropped 10: above the limit 5 per rollout; at 95% at least 1.7% of rollouts break it (exact, 1 of 3 here)"},
	} {
		r, err := Check(run(tc.row), Limits{Confidence: 0.95, MaxDropsPerRollout: i64(5), Tolerance: 0.01})
		if err != nil {
			t.Fatal(err)
		}
		if res := result(t, r, "graceful-drain", CheckPerRollout); res.Verdict != tc.verdict || !strings.Contains(res.Message, tc.want) {
			t.Errorf("%s: per rollout %v %q; want %v containing %q", tc.name, res.Verdict, res.Message, tc.verdict, tc.want)
		}
	}
}

// TestStarvedRollout: a rollout during which the rig was short of CPU
// breaks a limit only with drops inside race windows (the variant's
// beyond doubt); with none there it is inconclusive, named as the rig's;
// a clean rollout's drops still fail. On a kind cluster, whose nodes
// share the rig's CPU, drops inside race windows prove nothing either.
// The message counts the same drops as the table (excused ones included).
func TestStarvedRollout(t *testing.T) {
	starve := func(v analysis.VariantSummary, k int, excused, inWindows uint64) analysis.VariantSummary {
		ro := &v.Rollouts[k]
		ro.Excused, ro.Rig = excused, &analysis.RigSummary{Saturated: true, ClientLagMax: 1.2}
		ro.Explained = &analysis.Explained{Explained: inWindows, Unexplained: ro.Window.Failures - excused - inWindows}
		return v
	}
	limits := Limits{Confidence: 0.95, MaxDropsPerRollout: i64(0), Tolerance: 0.01}
	for _, tc := range []doubtCase{
		{"starved, nothing in a race window", starve(row("graceful-drain", 15000, 0, 645, 0), 1, 338, 0), false, Inconclusive,
			"rollout 2 dropped 645 while the rig was short of CPU (client up to 1.20s behind schedule"},
		{"starved, but drops in race windows", starve(row("no-prestop", 15000, 300, 645, 280), 1, 338, 200), false, Fail,
			"rollout 1 dropped 300; rollout 2 dropped 645 (200 of them the variant's beyond doubt, while the rig was short of CPU (client up to 1.20s behind schedule"},
		{"starved on kind, drops in race windows", starve(row("graceful-drain", 15000, 0, 645, 0), 1, 338, 200), true, Inconclusive,
			"338 timeouts excused as the rig's stall), 200 of them inside a race window (the kind nodes share the rig's CPU"},
		{"starved on kind beside rollouts that dropped", starve(row("no-prestop", 15000, 300, 645, 280), 1, 338, 200), true, Fail,
			"rollout 1 dropped 300; rollout 3 dropped 280; rollout 2 dropped 645 while the rig was short of CPU"},
		{"starved rollout beside a clean one that dropped", starve(row("graceful-drain", 15000, 0, 645, 1), 1, 338, 0), false, Fail,
			"rollout 3 dropped 1; rollout 2 dropped 645 while the rig was short of CPU"},
	} {
		a := run(tc.row)
		a.Summary.Cluster.Kind = tc.kind
		r, err := Check(a, limits)
		if err != nil {
			t.Fatal(err)
		}
		if res := result(t, r, tc.row.Variant, CheckPerRollout); res.Verdict != tc.verdict || !strings.Contains(res.Message, tc.want) {
			t.Errorf("%s: %v %q; want %v containing %q", tc.name, res.Verdict, res.Message, tc.verdict, tc.want)
		}
	}
	// The drop rate: 645 of 45,000 breaks 0.5 %, but only with the starved
	// rollout's drops, none of them in a race window.
	r, err := Check(run(starve(row("graceful-drain", 15000, 0, 645, 0), 1, 338, 0)), Limits{Confidence: 0.95, MaxDropRate: f64(0.001)})
	if err != nil {
		t.Fatal(err)
	}
	if res := result(t, r, "graceful-drain", CheckDropRate); res.Verdict != Inconclusive || !strings.Contains(res.Message, "the rig, not the variant, may have dropped") {
		t.Errorf("drop rate with a starved rollout: %v %q", res.Verdict, res.Message)
	}
	r, _ = Check(run(starve(row("no-prestop", 15000, 300, 645, 280), 1, 338, 200)), Limits{Confidence: 0.95, MaxDropRate: f64(0.001)})
	if res := result(t, r, "no-prestop", CheckDropRate); res.Verdict != Fail {
		t.Errorf("drop rate of a row that drops in every rollout, one starved: %v %q; want fail", res.Verdict, res.Message)
	}
	// On kind the starved rollout's drops in race windows do not count,
	// but the clean rollouts' drops still break 0.1 %.
	a := run(starve(row("no-prestop", 15000, 300, 645, 280), 1, 338, 200))
	a.Summary.Cluster.Kind = true
	r, _ = Check(a, Limits{Confidence: 0.95, MaxDropRate: f64(0.001)})
	if res := result(t, r, "no-prestop", CheckDropRate); res.Verdict != Fail {
		t.Errorf("drop rate on kind of a row that drops in every rollout, one starved: %v %q; want fail", res.Verdict, res.Message)
	}
	a = run(starve(row("graceful-drain", 15000, 0, 645, 0), 1, 338, 300))
	a.Summary.Cluster.Kind = true
	r, _ = Check(a, Limits{Confidence: 0.95, MaxDropRate: f64(0.001)})
	if res := result(t, r, "graceful-drain", CheckDropRate); res.Verdict != Inconclusive {
		t.Errorf("drop rate on kind broken only by a starved rollout's drops in race windows: %v %q; want inconclusive", res.Verdict, res.Message)
	}
}

// Against a baseline, a row passes when the upper bound on its rate ratio
// is within the margin (non-inferiority over rollouts), fails when the
// lower bound is beyond it, and is inconclusive between, or when the
// baseline's rate is not shown above 0.
func TestBaseline(t *testing.T) {
	steady := func(name string, drops uint64, n int) analysis.VariantSummary {
		ds := make([]uint64, n)
		for i := range ds {
			ds[i] = drops + uint64(i%3)*drops/10
		}
		return row(name, 20000, ds...)
	}
	for _, tc := range []struct {
		name    string
		this    analysis.VariantSummary
		base    analysis.VariantSummary
		between float64
		want    Verdict
		says    string
	}{
		{"as good, 10 against 10", steady("graceful-drain", 200, 10), steady("graceful-drain", 200, 10), 0, Pass, "rate ratio 1, at 95% at most 1.7, within the margin 2x"},
		{"as good, but runs differ by a day effect", steady("graceful-drain", 200, 10), steady("graceful-drain", 200, 10), 0.35, Inconclusive, "no number of rollouts decides: runs differ by a factor of e^0.35 beyond their rollouts"},
		{"ten times worse", steady("graceful-drain", 2000, 5), steady("graceful-drain", 200, 5), 0, Fail, "worse than the baseline by more than the margin 2x"},
		{"the issue's 4x regression, 3 against 3", row("graceful-drain", 5000, 40, 100, 16), row("graceful-drain", 5000, 10, 25, 4), 0, Inconclusive, "rollouts per run would decide (this run had 3; raise traffic.rollouts)"},
		{"a baseline that dropped nothing", row("graceful-drain", 5000, 160, 0, 0), row("graceful-drain", 5000, 0, 0, 0), 0, Inconclusive, "the baseline's rate is not shown above 0"},
		{"no drops against drops", row("graceful-drain", 5000, 0, 0, 0), steady("graceful-drain", 200, 3), 0, Inconclusive, "rate ratio 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			other := row("no-prestop", 5000, make([]uint64, len(tc.this.Rollouts))...)
			r, err := Check(run(other, tc.this), Limits{Confidence: 0.95, Baseline: whole(tc.base), BetweenRuns: tc.between, Rows: []string{"graceful-drain"}})
			if err != nil {
				t.Fatal(err)
			}
			if res := result(t, r, "graceful-drain", CheckBaseline); res.Verdict != tc.want || !strings.Contains(res.Message, tc.says) {
				t.Errorf("%v: %s\nwant %v containing %q", res.Verdict, res.Message, tc.want, tc.says)
			}
		})
	}
	for _, bad := range []float64{0.5, -1, math.Inf(1), math.NaN()} {
		if _, err := Check(run(row("graceful-drain", 1000, 0)), Limits{Confidence: 0.95, Baseline: whole(row("graceful-drain", 1000, 1)), Margin: bad}); !errors.As(err, new(*UsageError)) {
			t.Errorf("--margin %v: %v, want a usage error", bad, err)
		}
	}
}

// A baseline cut short or suspect lets nothing pass: the case, a
// baseline dropping 700–950 of 5,000 per rollout, interrupted.
func TestBadBaseline(t *testing.T) {
	for _, tc := range []struct {
		name  string
		spoil func(b *analysis.Summary)
		want  Verdict
		says  string
	}{
		{"interrupted", func(b *analysis.Summary) { b.Interrupted = true }, Fail, "the baseline was interrupted"},
		{"errored", func(b *analysis.Summary) { b.Error = "boom" }, Fail, "the baseline ended in an error: boom"},
		{"unfinished", func(b *analysis.Summary) { b.Finished = time.Time{} }, Fail, "the baseline never finished"},
		{"short", func(b *analysis.Summary) { b.Traffic.Rollouts = 5 }, Fail, "its graceful-drain has 3 of the 5 rollouts asked for"},
		{"suspect", func(b *analysis.Summary) { b.Suspect = []string{"the client held 300 of 500 req/s"} }, Inconclusive, "suspect baseline: the client held 300 of 500 req/s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := whole(row("graceful-drain", 5000, 700, 950, 800))
			b.Traffic.Rollouts = 3
			tc.spoil(b)
			a := run(row("no-prestop", 5000, 300, 280, 200), row("graceful-drain", 5000, 20, 50, 30))
			r, err := Check(a, Limits{Confidence: 0.95, Baseline: b, Rows: []string{"graceful-drain"}})
			if err != nil {
				t.Fatal(err)
			}
			res := result(t, r, "", CheckBaseline)
			if res.Verdict != tc.want || !strings.Contains(res.Message, tc.says) || r.Verdict() == Pass {
				t.Errorf("%+v (report %v); want %v saying %q", res, r.Verdict(), tc.want, tc.says)
			}
		})
	}
}

// A row the scenario asks for that the run never measured fails (exit 1),
// it is not bad usage.
func TestAskedButUnmeasured(t *testing.T) {
	a := run(row("no-prestop", 5000, 300, 280), row("graceful-drain", 5000, 0, 0))
	a.Summary.Variants = a.Summary.Variants[:1]
	r, err := Check(a, Limits{Confidence: 0.95, MaxDropsPerRollout: i64(0), Rows: []string{"graceful-drain"}})
	if err != nil {
		t.Fatalf("Check = %v; want a report with a failure", err)
	}
	if res := result(t, r, "graceful-drain", CheckMeasured); res.Verdict != Fail || !strings.Contains(res.Message, "never measured") {
		t.Errorf("%+v", res)
	}
}

// Masked drops count toward every limit: a retry hid them from the
// client, not from the pod that refused them.
func TestMaskedCount(t *testing.T) {
	v := row("graceful-drain", 5000, 0, 0)
	v.Rollouts[1].Window.Masked, v.Masked = 7, 7
	a := run(row("no-prestop", 5000, 300, 280), v)
	r, err := Check(a, Limits{Confidence: 0.95, MaxDropsPerRollout: i64(0), Tolerance: 0.01, MaxDropRate: f64(1e-4), Rows: []string{"graceful-drain"}})
	if err != nil {
		t.Fatal(err)
	}
	if res := result(t, r, "graceful-drain", CheckPerRollout); res.Verdict != Fail || !strings.Contains(res.Message, "rollout 2 dropped 7") {
		t.Errorf("per rollout: %+v", res)
	}
	if res := result(t, r, "graceful-drain", CheckDropRate); res.Verdict == Pass || !strings.Contains(res.Message, "7 of them masked by connection reuse") {
		t.Errorf("rate: %+v", res)
	}
}

// The JUnit file parses, with one case per row and check and the failing
// numbers in the failure message.
func TestJUnit(t *testing.T) {
	a := run(row("no-prestop", 5000, 300, 280), row("graceful-drain", 5000, 0, 0))
	r, err := Check(a, Limits{Confidence: 0.95, MaxDropsPerRollout: i64(0), Tolerance: 0.1, MaxDropRate: f64(1e-4)})
	if err != nil {
		t.Fatal(err)
	}
	r.Run = "out/run"
	var buf bytes.Buffer
	if err := r.JUnit(&buf); err != nil {
		t.Fatal(err)
	}
	suites, err := junit.Ingest(buf.Bytes())
	if err != nil {
		t.Fatalf("JUnit does not parse: %v\n%s", err, buf.String())
	}
	if len(suites) != 1 || len(suites[0].Tests) != len(r.Results) {
		t.Fatalf("parsed %d suites, want 1 with %d cases:\n%s", len(suites), len(r.Results), buf.String())
	}
	byName := map[string]junit.Test{}
	for _, tc := range suites[0].Tests {
		byName[tc.Classname+"/"+tc.Name] = tc
	}
	if tc := byName["droprun.no-prestop/max-drops-per-rollout"]; tc.Status != junit.StatusFailed || !strings.Contains(tc.Error.Error(), "rollout 1 dropped 300") {
		t.Errorf("no-prestop per rollout: %+v", tc)
	}
	if tc := byName["droprun.graceful-drain/max-drop-rate"]; tc.Status != junit.StatusError {
		t.Errorf("graceful-drain rate (inconclusive): %+v", tc)
	}
	if tc := byName["droprun.run/run"]; tc.Status != junit.StatusPassed {
		t.Errorf("run: %+v", tc)
	}
	if s := suites[0].Totals; s.Failed != 2 || s.Error != 2 {
		t.Errorf("totals %+v, want 2 failed (no-prestop's two limits), 2 errors (graceful-drain's: 2 clean rollouts show neither limit met)", s)
	}
}

// The new-pod share check fails a rollout whose least-served pod is under
// the limit, and cannot pass a rollout it has no decided shares for.
func TestMinNewPodShare(t *testing.T) {
	shares := func(least float64, undecided string) *analysis.Balance {
		return &analysis.Balance{Seconds: 30, Answered: 9000, Least: least, Undecided: undecided,
			Pods: []analysis.PodShare{{Pod: "web-a", Answered: 4500, OfEven: 1.5}, {Pod: "web-b", Answered: int(3000 * least), OfEven: least}}}
	}
	even := func(n int) []*analysis.Balance {
		out := []*analysis.Balance{shares(0.9, ""), shares(0.7, "")}
		for len(out) < n {
			out = append(out, shares(0.8, ""))
		}
		return out
	}
	for _, tc := range []struct {
		name     string
		balances []*analysis.Balance
		tol      float64
		want     Verdict
		says     string
	}{
		// docs/ci.md: after 3 rollouts above the limit, up to 64% could
		// still fall below it: undecided at any tolerance below that.
		{"three rollouts even enough", even(3), 0.3, Inconclusive, "of 3 rollouts answered 0.70 of an even share: at least 0.50; at 95% between 0% and 64% of rollouts break it"},
		{"ten rollouts even enough", even(10), 0.3, Pass, "at 95% at most 26% of rollouts break it (exact, over 10 rollouts)"},
		{"one rollout under", []*analysis.Balance{shares(0.9, ""), shares(0.2, "")}, 0.01, Fail, "rollout 2: web-b answered 600 of 9,000 (0.20 of an even share)"},
		{"one rollout not measured", []*analysis.Balance{shares(0.9, ""), nil}, 0.01, Inconclusive, "rollout 2: not measured"},
		{"one rollout undecided", []*analysis.Balance{shares(0.9, "too few"), shares(0.9, "")}, 0.01, Inconclusive, "rollout 1: too few"},
		{"a failure outweighs an undecided rollout", []*analysis.Balance{shares(0.1, ""), nil}, 0.01, Fail, "rollout 1: web-b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := row("graceful-drain", 1000, make([]uint64, len(tc.balances))...)
			for k, b := range tc.balances {
				v.Rollouts[k].Balance = b
			}
			rep, err := Check(run(v), Limits{MinNewPodShare: f64(0.5), Tolerance: tc.tol, Confidence: 0.95})
			if err != nil {
				t.Fatal(err)
			}
			res := result(t, rep, "graceful-drain", CheckBalance)
			if res.Verdict != tc.want || !strings.Contains(res.Message, tc.says) {
				t.Errorf("%s: %s; want %s saying %q", res.Outcome, res.Message, tc.want, tc.says)
			}
		})
	}
	for _, bad := range []float64{-0.1, 1.5, math.NaN()} {
		if _, err := Check(run(row("graceful-drain", 1000, 0)), Limits{MinNewPodShare: f64(bad), Confidence: 0.95}); !errors.As(err, new(*UsageError)) {
			t.Errorf("--min-new-pod-share %v: %v, want a usage error", bad, err)
		}
	}
}

// pastOf is a key's past: runs of the given per-rollout drops, 5,000
// requests each.
func pastOf(runs ...[]uint64) history.Past {
	p := history.Past{Key: history.Key{Scenario: "gate", Variant: "no-prestop"}}
	for _, drops := range runs {
		var pt history.Point
		for _, d := range drops {
			pt.Rollouts = append(pt.Rollouts, stats.Rollout{Drops: d, Requests: 5000})
		}
		p.Points = append(p.Points, pt)
	}
	return p
}

// --history holds a row to its key's past: fail when its rate is shown
// above the past's, pass when shown within the margin, inconclusive
// between; against a past that dropped nothing, rollouts above the
// allowance fail by Fisher's exact test over rollouts.
func TestHistoryLimit(t *testing.T) {
	steady := pastOf([]uint64{100, 120, 90, 110}, []uint64{95, 105, 130, 80}, []uint64{110, 100, 90, 120}, []uint64{85, 115, 105, 95},
		[]uint64{100, 90, 125, 105}, []uint64{120, 95, 100, 85}, []uint64{105, 110, 95, 100}, []uint64{90, 100, 115, 110})
	clean := pastOf(make([]uint64, 4), make([]uint64, 4), make([]uint64, 4), make([]uint64, 4), make([]uint64, 4), make([]uint64, 4))
	two := pastOf(make([]uint64, 10), []uint64{100, 120, 90, 110, 100, 120, 90, 110, 100, 120})
	limits := func(past history.Past, minRollouts int) Limits {
		return Limits{Confidence: 0.95, History: &HistoryLimit{MinAllowance: 2, MinRollouts: minRollouts, Past: map[string]history.Past{"no-prestop": past}}}
	}
	for _, tc := range []struct {
		name  string
		l     Limits
		drops []uint64
		want  Verdict
		says  string
	}{
		{"as the past", limits(steady, 20), []uint64{100, 110, 95, 105, 90, 100, 120, 100, 95, 105}, Pass, "within the margin 2x (--margin"},
		{"four times the past", limits(steady, 20), []uint64{400, 450, 380, 420}, Fail, "worse than its history"},
		{"a little worse, 2 rollouts", limits(steady, 20), []uint64{130, 150}, Inconclusive, "not shown worse than its history, nor within the margin 2x"},
		{"clean as its clean past", limits(clean, 20), []uint64{0, 0, 0, 0}, Pass, "together, at 95% at most 11% of rollouts drop more (exact, over 28 rollouts)"},
		{"a regression after a clean past", limits(clean, 20), []uint64{300, 320, 280, 310}, Fail, "(4 of 4 rollouts), where none of the history's 24 rollouts dropped anything"},
		{"one rollout above the allowance", limits(clean, 20), []uint64{0, 3, 0, 0}, Inconclusive, "but not shown worse (Fisher's exact test over rollouts p = 0.14"},
		{"too short a past", limits(steady, 40), []uint64{100}, Inconclusive, "measure 8 more rollout(s)"},
		{"no past", limits(history.Past{}, 20), []uint64{100}, Inconclusive, "no earlier run in the history has this row's key"},
		{"runs differ, but too few to say by how much", limits(two, 20), []uint64{100, 110}, Inconclusive, "measured on 3 or more past runs that dropped, or stated with --between-runs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Check(run(row("no-prestop", 5000, tc.drops...)), tc.l)
			if err != nil {
				t.Fatal(err)
			}
			if res := result(t, r, "no-prestop", CheckHistory); res.Verdict != tc.want || !strings.Contains(res.Message, tc.says) {
				t.Errorf("%v: %s\nwant %v containing %q", res.Verdict, res.Message, tc.want, tc.says)
			}
		})
	}
	// Bad settings are bad usage.
	for _, h := range []HistoryLimit{{MinAllowance: -1, MinRollouts: 12}, {MinRollouts: 0}, {MinAllowance: math.NaN(), MinRollouts: 12}} {
		var ue *UsageError
		if _, err := Check(run(row("no-prestop", 5000, 1)), Limits{Confidence: 0.95, History: &h}); !errors.As(err, &ue) {
			t.Errorf("%+v: %v, want a usage error", h, err)
		}
	}
}

// TestBaselineSaysWhatWouldDecide: the rollouts an undecided baseline
// says would decide do: the 4x regression (10, 25, 4 → 40, 100,
// 16) repeated to that many rollouts a run is decided.
func TestBaselineSaysWhatWouldDecide(t *testing.T) {
	check := func(this, then []uint64) Result {
		t.Helper()
		r, err := Check(run(row("no-prestop", 5000, make([]uint64, len(this))...), row("graceful-drain", 5000, this...)),
			Limits{Confidence: 0.95, Baseline: whole(row("graceful-drain", 5000, then...)), Rows: []string{"graceful-drain"}})
		if err != nil {
			t.Fatal(err)
		}
		return result(t, r, "graceful-drain", CheckBaseline)
	}
	res := check([]uint64{40, 100, 16}, []uint64{10, 25, 4})
	var n int
	if i := strings.Index(res.Message, "about "); res.Verdict != Inconclusive || i < 0 {
		t.Fatalf("%v: %s", res.Verdict, res.Message)
	} else if _, err := fmt.Sscanf(res.Message[i:], "about %d rollouts per run", &n); err != nil || n <= 3 {
		t.Fatalf("%q: %d rollouts (%v)", res.Message[i:], n, err)
	}
	repeat := func(xs []uint64) []uint64 {
		var out []uint64
		for len(out) < n {
			out = append(out, xs[len(out)%len(xs)])
		}
		return out
	}
	if res := check(repeat([]uint64{40, 100, 16}), repeat([]uint64{10, 25, 4})); res.Verdict == Inconclusive {
		t.Errorf("%d rollouts a run, as the check said: still undecided: %s", n, res.Message)
	}
}

// TestBaselineBetweenRunsFromHistory: with --history, --baseline's bounds
// include how much the key's past runs differ beyond their rollouts, and
// say so; without either, they say it is left out.
func TestBaselineBetweenRunsFromHistory(t *testing.T) {
	past := pastOf([]uint64{100, 120, 90, 110}, []uint64{300, 280, 320, 310}, []uint64{50, 60, 45, 55}, []uint64{150, 160, 140, 170})
	this, then := row("graceful-drain", 5000, 100, 110, 90, 105), row("graceful-drain", 5000, 95, 100, 110, 100)
	l := Limits{Confidence: 0.95, Baseline: whole(then), Rows: []string{"graceful-drain"},
		History: &HistoryLimit{MinRollouts: 1, Past: map[string]history.Past{"graceful-drain": past}}}
	r, err := Check(run(row("no-prestop", 5000, 0, 0, 0, 0), this), l)
	if err != nil {
		t.Fatal(err)
	}
	if res := result(t, r, "graceful-drain", CheckBaseline); !strings.Contains(res.Message, "as this key's 4 past runs that dropped differ (on 3 degrees of freedom)") || res.Verdict == Pass {
		t.Errorf("with a history of runs a factor of 6 apart: %v %s", res.Verdict, res.Message)
	}
	l.History = nil
	r, _ = Check(run(row("no-prestop", 5000, 0, 0, 0, 0), this), l)
	if res := result(t, r, "graceful-drain", CheckBaseline); !strings.Contains(res.Message, "is not included") || res.Verdict == Fail {
		t.Errorf("without: %v %s", res.Verdict, res.Message)
	}
}
