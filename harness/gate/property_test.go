package gate

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/droprun/droprun/harness/analysis"
	"github.com/droprun/droprun/harness/stats"
)

// genRow draws a row of 1–6 rollouts: clean, a few drops, or bursts, with
// some masked drops and now and then a rollout that sent nothing.
func genRow(rng *rand.Rand, name string, rollouts int) analysis.VariantSummary {
	v := analysis.VariantSummary{Variant: name}
	mode := rng.IntN(3)
	for i := range rollouts {
		n := uint64(rng.IntN(20000))
		if rng.IntN(20) == 0 {
			n = 0
		}
		var d uint64
		switch mode {
		case 1:
			d = uint64(rng.IntN(3))
		case 2:
			d = uint64(rng.Float64() * rng.Float64() * 0.2 * float64(n))
		}
		d = min(d, n)
		ro := analysis.RolloutSummary{N: i + 1, Window: analysis.Tally{Requests: n, Failures: d}}
		if rng.IntN(8) == 0 {
			ro.Window.Masked = uint64(rng.IntN(5))
			v.Masked += ro.Window.Masked
		}
		v.Rollouts = append(v.Rollouts, ro)
		v.Drops += d
		v.WindowRequests += n
	}
	if rng.IntN(10) == 0 {
		v.Suspect = []string{"the client held 300 of 500 req/s"}
	}
	return v
}

// TestCheckNeverPassesABrokenLimit: over thousands of generated runs,
// baselines and limits, check never passes (exit 0) when a row's own
// point estimate breaks the rate limit, a rollout breaks the per-rollout
// limit, a bound is NaN, the run or the baseline is not whole or is
// suspect, or masked drops would break a limit; and every confidence
// outside [0.5, 1) and rate limit of 1 or more is bad usage.
func TestCheckNeverPassesABrokenLimit(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 1))
	confs := []float64{0.5, 0.8, 0.9, 0.95, 0.99, 0.999}
	passes := 0
	for trial := range 5000 {
		rollouts := 1 + rng.IntN(6)
		a := run(genRow(rng, "no-prestop", rollouts), genRow(rng, "graceful-drain", rollouts))
		sum := a.Summary
		switch rng.IntN(12) {
		case 0:
			sum.Interrupted = true
		case 1:
			sum.Error = "rollout 2: timed out"
		case 2:
			sum.Finished = time.Time{}
		case 3:
			v := &sum.Variants[1]
			v.Rollouts = v.Rollouts[:len(v.Rollouts)-1]
		}
		l := Limits{Confidence: confs[rng.IntN(len(confs))]}
		if rng.IntN(3) > 0 {
			l.MaxDropRate = f64(math.Pow(10, -5+5*rng.Float64()) * 0.5)
		}
		if rng.IntN(2) == 0 {
			l.MaxDropsPerRollout = i64(int64(rng.IntN(50)))
		}
		var baseWhole bool
		if rng.IntN(3) == 0 {
			b := whole(genRow(rng, "no-prestop", rollouts), genRow(rng, "graceful-drain", rollouts))
			b.Traffic.Rollouts = rollouts
			baseWhole = true
			switch rng.IntN(6) {
			case 0:
				b.Interrupted, baseWhole = true, false
			case 1:
				b.Suspect, baseWhole = []string{"graceful-drain: the control window was not clean"}, false
			case 2:
				b.Traffic.Rollouts, baseWhole = rollouts+1, false
			}
			l.Baseline = b
		}
		if l.MaxDropRate == nil && l.MaxDropsPerRollout == nil && l.Baseline == nil {
			l.MaxDropsPerRollout = i64(0)
		}
		r, err := Check(a, l)
		if err != nil {
			t.Fatalf("trial %d: %v", trial, err)
		}
		if r.Verdict() != Pass {
			continue
		}
		passes++
		why := func(format string, args ...any) {
			t.Helper()
			t.Errorf("trial %d passed although "+format+"; limits %+v; results %+v", append(append([]any{trial}, args...), l, r.Results)...)
		}
		if sum.Interrupted || sum.Error != "" || sum.Finished.IsZero() || len(sum.Variants[1].Rollouts) < rollouts {
			why("the run is not whole")
		}
		if l.Baseline != nil && !baseWhole {
			why("the baseline is not whole or is suspect")
		}
		for _, res := range r.Results {
			if strings.Contains(res.Message, "NaN") {
				why("a result shows NaN: %s", res.Message)
			}
		}
		for _, v := range sum.Variants {
			if len(v.Suspect) > 0 {
				why("%s is suspect", v.Variant)
			}
			if v.WindowRequests == 0 {
				why("%s measured nothing", v.Variant)
				continue
			}
			k := v.Drops + v.Masked
			if l.MaxDropRate != nil && float64(k)/float64(v.WindowRequests) > *l.MaxDropRate {
				why("%s's own rate %d/%d (masked included) is above %v", v.Variant, k, v.WindowRequests, *l.MaxDropRate)
			}
			over := 0
			for _, ro := range v.Rollouts {
				if l.MaxDropsPerRollout != nil && int64(ro.Window.Failures+ro.Window.Masked) > *l.MaxDropsPerRollout {
					over++
				}
			}
			// A per-rollout limit passes only when the exact upper bound
			// on the share of rollouts breaking it, every rollout above
			// it counted, is within the tolerance.
			if _, hi := stats.OneSided(uint64(over), uint64(len(v.Rollouts)), l.Confidence); l.MaxDropsPerRollout != nil && hi > l.tolerance() {
				why("%s: %d of %d rollouts above %d (masked included), up to %.3f of rollouts, above the tolerance %v", v.Variant, over, len(v.Rollouts), *l.MaxDropsPerRollout, hi, l.tolerance())
			}
		}
	}
	if passes < 100 {
		t.Errorf("only %d of 5000 trials passed: the generator no longer exercises passing gates", passes)
	}
	t.Logf("%d of 5000 generated runs passed", passes)

	for range 1000 {
		c := rng.Float64()*3 - 1
		if c >= 0.5 && c < 1 {
			continue
		}
		if err := (&Limits{Confidence: c, MaxDropsPerRollout: i64(0)}).Validate(); err == nil {
			t.Errorf("--confidence %v was accepted", c)
		}
	}
	for _, x := range []float64{1, 1.5, math.Inf(1), math.NaN(), -1e-9} {
		if err := (&Limits{Confidence: 0.95, MaxDropRate: &x}).Validate(); err == nil {
			t.Errorf("--max-drop-rate %v was accepted", x)
		}
	}
}

// TestNewPodShareNeverPassesABrokenLimit: over thousands of generated
// rows and tolerances, --min-new-pod-share is exact over rollouts: it
// passes exactly when the upper bound on the share of rollouts under the
// limit, every undecided rollout counted as under, is within the
// tolerance; fails exactly when the lower bound, counting the rollouts
// under it alone, is above it; and is otherwise inconclusive.
func TestNewPodShareNeverPassesABrokenLimit(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 1))
	counts := map[Verdict]int{}
	for range 5000 {
		limit := rng.Float64()
		tol := []float64{0.01, 0.1, 0.3, 0.5}[rng.IntN(4)]
		v := row("graceful-drain", 1000, make([]uint64, 1+rng.IntN(12))...)
		under, unsure := 0, 0
		for k := range v.Rollouts {
			switch rng.IntN(8) {
			case 0:
				unsure++ // not measured
			case 1:
				unsure++
				v.Rollouts[k].Balance = &analysis.Balance{Least: rng.Float64(), Undecided: "too few requests"}
			default:
				least := 1 - rng.Float64()*rng.Float64()*rng.Float64()
				if least < limit {
					under++
				}
				v.Rollouts[k].Balance = &analysis.Balance{Seconds: 30, Answered: 100, Least: least,
					Pods: []analysis.PodShare{{Pod: "web-a", Answered: 50, OfEven: least}, {Pod: "web-b", Answered: 50, OfEven: 2 - least}}}
			}
		}
		rep, err := Check(run(v), Limits{MinNewPodShare: &limit, Tolerance: tol, Confidence: 0.95})
		if err != nil {
			t.Fatal(err)
		}
		got := result(t, rep, "graceful-drain", CheckBalance).Verdict
		n := uint64(len(v.Rollouts))
		lo, _ := stats.OneSided(uint64(under), n, 0.95)
		_, hi := stats.OneSided(uint64(under+unsure), n, 0.95)
		want := Inconclusive
		switch {
		case hi <= tol:
			want = Pass
		case lo > tol:
			want = Fail
		}
		if got != want {
			t.Fatalf("limit %.3f, tolerance %v: %d of %d rollouts under it, %d undecided: verdict %s, want %s", limit, tol, under, n, unsure, got, want)
		}
		counts[got]++
	}
	if counts[Pass] == 0 || counts[Fail] == 0 || counts[Inconclusive] == 0 {
		t.Errorf("verdicts %v: the generator no longer reaches every verdict", counts)
	}
}
