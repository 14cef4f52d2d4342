package stats

import "math"

// Interval is a point estimate with a confidence interval around it.
type Interval struct {
	// Point is the estimate itself (for a proportion, k/n). It is NaN when
	// Empty, and may be +Inf for a rate ratio whose denominator rate is 0.
	Point float64
	// Lo and Hi bound the values the data does not rule out at the
	// requested confidence. Hi may be +Inf (a rate ratio whose denominator
	// variant dropped nothing, or a rate with no exposure).
	Lo, Hi float64
	// Empty reports that there was no data (no trials, no exposure): Lo and
	// Hi then span every possible value and carry no information.
	Empty bool
}

// emptyInterval is the interval of no data on [lo, hi].
func emptyInterval(lo, hi float64) Interval {
	return Interval{Point: math.NaN(), Lo: lo, Hi: hi, Empty: true}
}

// nanInterval is returned for invalid arguments.
func nanInterval() Interval {
	return Interval{Point: math.NaN(), Lo: math.NaN(), Hi: math.NaN()}
}

// Wilson returns the Wilson score interval for the proportion k/n (for
// example drops/requests, or rollouts that dropped anything/rollouts) at
// confidence conf (0.95 for 95%). It is the interval droprun shows for rates:
// unlike the textbook p ± z·SE it stays inside [0, 1] and is sensible for k
// = 0 and k = n. For n == 0 it returns the Empty interval [0, 1]. It returns
// NaN bounds when k > n or conf is not in (0, 1).
func Wilson(k, n uint64, conf float64) Interval {
	if !validConf(conf) || k > n {
		return nanInterval()
	}
	if n == 0 {
		return emptyInterval(0, 1)
	}
	return wilsonZ(float64(k), float64(n), twoSidedZ(conf))
}

// wilsonZ is the Wilson score interval of k successes in n trials at the
// normal (or t) quantile z. k and n may be fractional: the interval over
// rollouts passes the counts divided by their dispersion.
func wilsonZ(k, nf, z float64) Interval {
	ph := k / nf
	qh := (nf - k) / nf
	z2n := z * z / nf
	den := 1 + z2n
	center := (ph + z2n/2) / den
	half := z / den * math.Sqrt(ph*qh/nf+z2n/(4*nf))
	// The bounds are the roots of den·p² - (2ph + z²/n)·p + ph² = 0. The root
	// nearer the middle is computed directly; the other from the product of
	// the roots (ph²/den, or qh²/den for 1-p), which avoids cancellation when
	// the rate is tiny (1 drop in 10^9 requests).
	var lo, hi float64
	if ph <= 0.5 {
		hi = center + half
		lo = ph * ph / (den * hi)
	} else {
		lo = center - half
		hi = 1 - qh*qh/(den*(1-lo))
	}
	return Interval{Point: ph, Lo: clamp01(lo), Hi: clamp01(hi)}
}

// ClopperPearson returns the exact (Clopper-Pearson) interval for the
// proportion k/n at confidence conf: the set of proportions p for which
// neither tail of Binomial(n, p) at k is below (1-conf)/2. It is guaranteed
// to cover the true proportion at least conf of the time, so it is slightly
// wider than Wilson. For n == 0 it returns the Empty interval [0, 1]; for
// k > n or conf not in (0, 1), NaN bounds.
func ClopperPearson(k, n uint64, conf float64) Interval {
	if !validConf(conf) || k > n {
		return nanInterval()
	}
	if n == 0 {
		return emptyInterval(0, 1)
	}
	tail := (1 - conf) / 2
	return Interval{
		Point: float64(k) / float64(n),
		Lo:    binomLower(k, n, tail),
		Hi:    binomUpper(k, n, tail),
	}
}

// UpperBoundZero returns the exact one-sided upper confidence bound on a
// rate after 0 events in n trials: the rate r with (1-r)^n = 1-conf, i.e.
// 1-(1-conf)^(1/n). At 95% it is close to 3/n (the "rule of three"): 0 drops
// in 214,000 requests means the drop rate is below 1.4e-5. It returns 1 for
// n == 0 (no data bounds nothing) and NaN when conf is not in (0, 1).
func UpperBoundZero(n uint64, conf float64) float64 {
	if !validConf(conf) {
		return math.NaN()
	}
	if n == 0 {
		return 1
	}
	return -math.Expm1(math.Log1p(-conf) / float64(n))
}

// ZeroBoundPhrase describes a variant with no drops by the bound its data
// supports, e.g. "0 in 214,000 requests: rate < 1.4e-5 at 95%". The bound is
// UpperBoundZero rounded up to two significant digits, so the phrase never
// claims more than the data shows. For n == 0 it returns
// "0 in 0 requests: rate unknown".
func ZeroBoundPhrase(n uint64, conf float64) string {
	return FormatZeroBound(n, UpperBoundZero(n, conf), conf)
}

// FormatZeroBound words bound, the upper bound at conf on a rate after 0
// events in n trials, as ZeroBoundPhrase does: rounded up to two
// significant digits.
func FormatZeroBound(n uint64, bound, conf float64) string {
	noun := "requests"
	if n == 1 {
		noun = "request"
	}
	head := "0 in " + FormatCount(n) + " " + noun + ": "
	if n == 0 || !validConf(conf) {
		return head + "rate unknown"
	}
	return head + "rate < " + FormatSigUp(bound, 2) + " at " + formatPercent(conf)
}

func clamp01(x float64) float64 {
	return math.Max(0, math.Min(1, x))
}

// OneSided returns the exact one-sided bounds on the proportion k/n at
// confidence conf: the proportion is at least lo with confidence conf,
// and at most hi with confidence conf (Clopper-Pearson, each tail
// 1-conf). It returns NaN bounds for k > n or conf not in (0, 1), and
// [0, 1] for n == 0.
func OneSided(k, n uint64, conf float64) (lo, hi float64) {
	if !validConf(conf) || k > n {
		return math.NaN(), math.NaN()
	}
	if n == 0 {
		return 0, 1
	}
	return binomLower(k, n, 1-conf), binomUpper(k, n, 1-conf)
}

// TrialsToDecide returns about how many trials, at the observed
// proportion p, would put the one-sided bound at confidence conf on the
// far side of limit: the upper bound at or below it when p < limit, the
// lower bound above it when p > limit. It is the sample size a test of
// "rate ≤ limit" would need to decide, if the rate stayed where it was
// seen. It returns -1 when p equals limit (no number of trials decides),
// or for arguments outside their range, and math.MaxInt when the answer
// passes 1e15.
func TrialsToDecide(p, limit, conf float64) int {
	if !validConf(conf) || !(p >= 0 && p <= 1) || !(limit > 0 && limit < 1) || p == limit {
		return -1
	}
	decided := func(n uint64) bool {
		k := uint64(math.Round(p * float64(n)))
		lo, hi := OneSided(k, n, conf)
		if p < limit {
			return hi <= limit
		}
		return lo > limit
	}
	return firstDecided(decided, 1e15)
}

// firstDecided is the smallest n ≥ 1 with decided(n), for decided false
// below some n and true from it on: found by doubling, then bisection.
// It returns math.MaxInt when n would pass limit.
func firstDecided(decided func(n uint64) bool, limit uint64) int {
	var lo, hi uint64 = 0, 1
	for !decided(hi) {
		lo, hi = hi, hi*2
		if hi > limit {
			return math.MaxInt
		}
	}
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if decided(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return int(hi)
}

// CleanTrialsToPass is how many more trials without a success would put
// the exact one-sided upper bound at conf on the proportion of k successes
// in n trials at or below tol: 0 when it already is, math.MaxInt past a
// million, -1 for tol outside (0, 1) or k > n. It is what a per-rollout
// limit says when it cannot yet pass: the rollouts without a breach that
// would show the share of rollouts breaking it is within the tolerance.
func CleanTrialsToPass(k, n uint64, tol, conf float64) int {
	if !validConf(conf) || !(tol > 0 && tol < 1) || k > n {
		return -1
	}
	if _, hi := OneSided(k, n, conf); hi <= tol {
		return 0
	}
	return firstDecided(func(m uint64) bool {
		_, hi := OneSided(k, n+m, conf)
		return hi <= tol
	}, 1_000_000)
}
