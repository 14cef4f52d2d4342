package opchar

import (
	"math"
	"math/rand/v2"

	"github.com/droprun/droprun/internal/draw"
)

// A Family is a shape of bursts: how one rollout's drop rate is drawn
// around the truth's mean rate. Every family keeps the mean exact, so
// the truth is the mean drop rate over rollouts (the rate a long series
// of rollouts would show).
type Family struct {
	Name string
	// Shape says how the rate is drawn, with its parameters.
	Shape string
	// Rate draws one rollout's drop rate with mean mu.
	Rate func(rng *rand.Rand, mu float64) float64
	// Density is the log density of Rate's law at mean mu, as a function
	// of the rate (with respect to length plus an atom where Rate has
	// one: zero-inflated's clean rollouts, a rate capped at 1): the
	// likelihood Ceiling's most powerful test stands on.
	Density func(mu float64) func(rate float64) float64
	// Limit is the rate limit the family is held to, so that the truths
	// (0.5x and 1.5x it) are drop rates a rollout of Requests can show.
	Limit float64
	// Day is the standard deviation of a run's day effect on the log
	// rate: every rollout of one run shares one factor, with mean 1.
	Day float64
}

// day draws a run's factor on the rate: lognormal with sd f.Day on the
// log scale and mean 1; 1 without a day effect.
func (f Family) day(rng *rand.Rand) float64 {
	if f.Day == 0 {
		return 1
	}
	return math.Exp(f.Day*rng.NormFloat64() - f.Day*f.Day/2)
}

// DayEffect is beta-binomial with a day effect between runs: the runs
// a baseline or a history was measured on differ by more than their
// rollouts do (a cluster, a kernel, a neighbour that changed).
var DayEffect = Family{
	Name:    "day-effect",
	Shape:   "beta-binomial, and each run's rate × lognormal(σ 0.35) shared by its rollouts",
	Rate:    betaRate(0.005),
	Density: betaDensity(0.005),
	Limit:   0.01,
	Day:     0.35,
}

// Requests is the mean requests of a simulated rollout: the demo's
// rollout windows at 500 req/s hold about 3,000-5,000.
const Requests = 5000

// Families are the burst shapes every gate mode is measured under.
var Families = []Family{
	{
		Name:    "beta-binomial",
		Shape:   "rate ~ Beta with intraclass correlation 0.005 (φ ≈ 26 at 5,000 requests; this cluster measured 20-90)",
		Rate:    betaRate(0.005),
		Density: betaDensity(0.005),
		Limit:   0.01,
	},
	{
		Name:  "heavy-tailed",
		Shape: "mixed Poisson: rate = mean × lognormal(σ 1.2), the top 5 % of rollouts 3.4x the mean or more",
		Rate: func(rng *rand.Rand, mu float64) float64 {
			return math.Min(1, mu*math.Exp(heavySigma*rng.NormFloat64()-heavySigma*heavySigma/2))
		},
		Density: func(mu float64) func(float64) float64 {
			const s = heavySigma
			m := math.Log(mu) - s*s/2 // the log rate's mean
			return func(x float64) float64 {
				if x >= 1 { // capped: P(log rate ≥ 0)
					return logNormalTail(-m / s)
				}
				z := (math.Log(x) - m) / s
				return -z*z/2 - math.Log(x*s*math.Sqrt(2*math.Pi))
			}
		},
		Limit: 0.01,
	},
	{
		Name:  "zero-inflated",
		Shape: "3 rollouts in 4 clean; the rest burst at 4x the mean × Gamma(shape 2)",
		Rate: func(rng *rand.Rand, mu float64) float64 {
			if rng.Float64() >= zeroBurst {
				return 0
			}
			return math.Min(1, mu/zeroBurst*draw.Gamma(rng, 2)/2)
		},
		Density: func(mu float64) func(float64) float64 {
			scale := mu / zeroBurst / 2 // a burst's rate is Gamma(2, scale)
			return func(x float64) float64 {
				switch {
				case x <= 0:
					return math.Log(1 - zeroBurst)
				case x >= 1: // capped: P(Gamma(2) ≥ 1/scale)
					return math.Log(zeroBurst) - 1/scale + math.Log1p(1/scale)
				}
				return math.Log(zeroBurst) + math.Log(x) - 2*math.Log(scale) - x/scale
			}
		},
		Limit: 0.01,
	},
	{
		Name:    "rare-bursty",
		Shape:   "rate ~ Beta with intraclass correlation 0.005 at a limit of 0.001 (Beta shape 0.25-0.75: most rollouts drop almost nothing)",
		Rate:    betaRate(0.005),
		Density: betaDensity(0.005),
		Limit:   0.001,
	},
}

// betaRate draws a rate from the Beta distribution of mean mu and
// intraclass correlation rho (a + b = 1/rho − 1).
func betaRate(rho float64) func(*rand.Rand, float64) float64 {
	return func(rng *rand.Rand, mu float64) float64 {
		ab := 1/rho - 1
		x, y := draw.Gamma(rng, mu*ab), draw.Gamma(rng, (1-mu)*ab)
		return x / (x + y)
	}
}

// betaDensity is betaRate's log density: Beta(mu·(1/rho − 1),
// (1 − mu)·(1/rho − 1)).
func betaDensity(rho float64) func(mu float64) func(float64) float64 {
	return func(mu float64) func(float64) float64 {
		ab := 1/rho - 1
		a, b := mu*ab, (1-mu)*ab
		if a <= 0 || b <= 0 {
			return func(float64) float64 { return math.Inf(-1) }
		}
		la, _ := math.Lgamma(a)
		lb, _ := math.Lgamma(b)
		lab, _ := math.Lgamma(a + b)
		return func(x float64) float64 {
			x = math.Min(math.Max(x, math.SmallestNonzeroFloat64), 1-1e-16) // a draw's 0 or 1 is its float's rounding
			return lab - la - lb + (a-1)*math.Log(x) + (b-1)*math.Log1p(-x)
		}
	}
}

const (
	// heavySigma is heavy-tailed's lognormal σ.
	heavySigma = 1.2
	// zeroBurst is the share of zero-inflated's rollouts that drop.
	zeroBurst = 0.25
)

// logNormalTail is log P(Z ≥ z) for a standard normal Z.
func logNormalTail(z float64) float64 { return math.Log(math.Erfc(z/math.Sqrt2) / 2) }

// rollout draws one rollout of about Requests requests (±10 %) whose rate
// is f's around mu: its drops and requests.
func rollout(rng *rand.Rand, f Family, mu float64) (drops, requests uint64) {
	requests = uint64(Requests * (0.9 + 0.2*rng.Float64()))
	return draw.Binomial(rng, requests, f.Rate(rng, mu)), requests
}

// newRand is a seeded generator, for tests.
func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0)) }
