package opchar

import (
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/droprun/droprun/harness/analysis"
	"github.com/droprun/droprun/harness/gate"
	"github.com/droprun/droprun/harness/history"
	"github.com/droprun/droprun/harness/stats"
)

// Modes are the gate modes the suite measures and holds to its targets
// (TestOperatingCharacteristics); Measured are measured and reported only.
var Modes = []Mode{
	{
		Name:   gate.CheckDropRate,
		Truths: "breach: mean rate 1.5x the limit; good: 0.5x",
		Check: func(rng *rand.Rand, f Family, t Truth, r int) gate.Verdict {
			a := analysisOf(row(rng, f, mean(f, t), r))
			return verdict(a, gate.Limits{MaxDropRate: &f.Limit}, gate.CheckDropRate)
		},
	},
	{
		Name:   gate.CheckPerRollout,
		Truths: "the limit in drops is set from the family: breach: 1.5x the tolerance of rollouts drop more than it (none such where the family's drops cannot: n/a); good: half the tolerance",
		Check: func(rng *rand.Rand, f Family, t Truth, r int) gate.Verdict {
			// Nearest rank: P(K ≥ q) > 1 − p and P(K > q) ≤ 1 − p.
			lim := int64(quantile(f, 1-1.5*gate.DefaultTolerance)) - 1
			if t == Good {
				lim = int64(quantile(f, 1-gate.DefaultTolerance/2))
			}
			if lim < 0 {
				return NoSuchTruth
			}
			a := analysisOf(row(rng, f, f.Limit, r))
			return verdict(a, gate.Limits{MaxDropsPerRollout: &lim}, gate.CheckPerRollout)
		},
	},
	{
		Name:     gate.CheckBaseline,
		Truths:   "breach: rate 1.5x the margin (default 2) times the baseline's; good: the baseline's own; the day effect stated with --between-runs",
		CrossRun: true,
		Check: func(rng *rand.Rand, f Family, t Truth, r int) gate.Verdict {
			base := row(rng, f, f.Limit*f.day(rng), r)
			ratio := 1.0
			if t == Breach {
				ratio = 1.5 * gate.DefaultMargin
			}
			a := analysisOf(row(rng, f, ratio*f.Limit*f.day(rng), r))
			b := analysisOf(base).Summary
			return verdict(a, gate.Limits{Baseline: b, BetweenRuns: f.Day}, gate.CheckBaseline)
		},
	},
	{
		Name:   gate.CheckBalance,
		Truths: "each rollout's least-served new pod answers about 1/(1 + x) of an even share, x the family's rate over its mean; the limit is set so that a share of rollouts below it of 1.5x the tolerance is the breach, half of it the good release",
		Check: func(rng *rand.Rand, f Family, t Truth, r int) gate.Verdict {
			below := 1.5 * gate.DefaultTolerance
			if t == Good {
				below = gate.DefaultTolerance / 2
			}
			limit := shareQuantile(f, below)
			v := analysis.VariantSummary{Variant: Variant}
			for i := range r {
				least := leastShare(rng, f)
				b := &analysis.Balance{Seconds: 30, Answered: 1000, Least: least,
					Pods: []analysis.PodShare{{Pod: "web-a", Answered: int(500 * least), OfEven: least}, {Pod: "web-b", Answered: 1000 - int(500*least), OfEven: 2 - least}}}
				v.Rollouts = append(v.Rollouts, analysis.RolloutSummary{N: i + 1, Window: analysis.Tally{Requests: Requests}, Balance: b})
				v.WindowRequests += Requests
			}
			return verdict(analysisOf(v), gate.Limits{MinNewPodShare: &limit}, gate.CheckBalance)
		},
	},
}

func init() { Modes = append(Modes, History) }

// History is --history, held to the targets with the rest.
var History = Mode{
	Name:     gate.CheckHistory,
	Truths:   "a history of 8 runs at the family's limit rate; breach: this run at 1.5x the margin (default 2) times it; good: at it",
	CrossRun: true,
	Check: func(rng *rand.Rand, f Family, t Truth, r int) gate.Verdict {
		ratio := 1.0
		if t == Breach {
			ratio = 1.5 * gate.DefaultMargin
		}
		return historyVerdict(rng, f, ratio, r)
	},
}

// Regression is how often a 2x regression fails its first run against a
// stable history of 8 runs, per family and rollout count: --history's
// power, measured beside its ceiling (Regressions), not held to the 5 %
// targets.
var Regression = Mode{
	Name:     "history, 2x regression",
	Truths:   "a history of 8 runs at the family's limit rate, this run at 2x it; its ceiling: the most powerful test at 5 % that knows the family, the limit rate and each rollout's true rate (Ceiling)",
	CrossRun: true,
	Check: func(rng *rand.Rand, f Family, t Truth, r int) gate.Verdict {
		if t == Good {
			return NoSuchTruth
		}
		return historyVerdict(rng, f, 2, r)
	},
}

// historyVerdict draws a history of 8 runs at f's limit rate and a run
// at ratio times it, and returns --history's verdict on the run.
func historyVerdict(rng *rand.Rand, f Family, ratio float64, r int) gate.Verdict {
	const pastRuns = 8
	s := series(rng, f, f.Limit, pastRuns, r)
	a := analysisOf(row(rng, f, ratio*f.Limit*f.day(rng), r))
	past := s.Before(time.Unix(pastRuns*86400, 0), "this-run", stats.DefaultConfidence)
	h := &gate.HistoryLimit{MinAllowance: 2, MinRollouts: 20, Past: map[string]history.Past{Variant: past}}
	return verdict(a, gate.Limits{History: h}, gate.CheckHistory)
}

// leastShare draws a rollout's least-served new pod's share of an even
// share: 1/(1 + x), x the family's rate over its mean, times a uniform
// 0.9-1 (so that a clean rollout is not an atom at 1).
func leastShare(rng *rand.Rand, f Family) float64 {
	return (0.9 + 0.1*rng.Float64()) / (1 + f.Rate(rng, f.Limit)/f.Limit)
}

// shareQuantile is the p quantile of a rollout's least-served share
// under f (1/(1 + x), x the family's rate over its mean), from 200,000
// draws.
func shareQuantile(f Family, p float64) float64 {
	return cached(quantileKey{"share " + f.Name, p}, func() float64 {
		rng := rand.New(rand.NewPCG(11, uint64(len(f.Name))))
		xs := make([]float64, 200_000)
		for i := range xs {
			xs[i] = leastShare(rng, f)
		}
		slices.Sort(xs)
		return stats.SampleQuantile(xs, p)
	})
}

// quantiles caches quantile's answers.
var (
	quantilesMu sync.Mutex
	quantiles   = map[quantileKey]float64{}
)

type quantileKey struct {
	family string
	p      float64
}

// quantile is the p quantile of one rollout's drops under f at its limit
// rate, from 200,000 simulated rollouts.
func quantile(f Family, p float64) float64 {
	return cached(quantileKey{f.Name, p}, func() float64 {
		rng := rand.New(rand.NewPCG(7, uint64(len(f.Name))))
		xs := make([]float64, 200_000)
		for i := range xs {
			d, _ := rollout(rng, f, f.Limit)
			xs[i] = float64(d)
		}
		slices.Sort(xs)
		return stats.SampleQuantile(xs, p)
	})
}

// cached returns the cached value of key, computing it once.
func cached(key quantileKey, compute func() float64) float64 {
	quantilesMu.Lock()
	defer quantilesMu.Unlock()
	if q, ok := quantiles[key]; ok {
		return q
	}
	q := compute()
	quantiles[key] = q
	return q
}
