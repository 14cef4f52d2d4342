package opchar

import (
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/droprun/droprun/harness/gate"
	"github.com/droprun/droprun/harness/history"
	"github.com/droprun/droprun/harness/stats"
)

// Modes are the gate modes the suite measures.
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
		Truths: "the limit in drops is set from the family: breach: a rollout's (1 − tolerance) quantile is 1.5x it; good: 0.5x",
		Check: func(rng *rand.Rand, f Family, t Truth, r int) gate.Verdict {
			q := quantile(f, 1-gate.DefaultTolerance)
			lim := int64(math.Floor(q / 1.5))
			if t == Good {
				lim = int64(math.Ceil(2 * q))
			}
			a := analysisOf(row(rng, f, f.Limit, r))
			return verdict(a, gate.Limits{MaxDropsPerRollout: &lim}, gate.CheckPerRollout)
		},
	},
	{
		Name:     gate.CheckBaseline,
		Truths:   "breach: rate 1.5x the margin times the baseline's; good: the baseline's own",
		CrossRun: true,
		Check: func(rng *rand.Rand, f Family, t Truth, r int) gate.Verdict {
			base := row(rng, f, f.Limit*f.day(rng), r)
			ratio := 1.0
			if t == Breach {
				ratio = 1.5 * gate.DefaultMargin
			}
			a := analysisOf(row(rng, f, ratio*f.Limit*f.day(rng), r))
			b := analysisOf(base).Summary
			return verdict(a, gate.Limits{Baseline: b}, gate.CheckBaseline)
		},
	},
	{
		Name:     gate.CheckHistory,
		Truths:   "a history of 8 runs at the family's limit rate; breach: this run at 2x it; good: at it",
		CrossRun: true,
		Check: func(rng *rand.Rand, f Family, t Truth, r int) gate.Verdict {
			const pastRuns = 8
			s := series(rng, f, f.Limit, pastRuns, r)
			mu := f.Limit
			if t == Breach {
				mu *= 2
			}
			a := analysisOf(row(rng, f, mu*f.day(rng), r))
			past := s.Before(time.Unix(pastRuns*86400, 0), "this-run", stats.DefaultConfidence)
			h := &gate.HistoryLimit{Percentile: 99, MinAllowance: 2, MinRollouts: 20, Past: map[string]history.Past{Variant: past}}
			return verdict(a, gate.Limits{History: h}, gate.CheckHistory)
		},
	},
}

// quantiles caches quantile's answers.
var quantiles = map[quantileKey]float64{}

type quantileKey struct {
	family string
	p      float64
}

// quantile is the p quantile of one rollout's drops under f at its limit
// rate, from 200,000 simulated rollouts.
func quantile(f Family, p float64) float64 {
	key := quantileKey{f.Name, p}
	if q, ok := quantiles[key]; ok {
		return q
	}
	rng := rand.New(rand.NewPCG(7, uint64(len(f.Name))))
	xs := make([]float64, 200_000)
	for i := range xs {
		d, _ := rollout(rng, f, f.Limit)
		xs[i] = float64(d)
	}
	slices.Sort(xs)
	q := stats.SampleQuantile(xs, p)
	quantiles[key] = q
	return q
}
