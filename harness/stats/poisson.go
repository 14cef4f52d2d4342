package stats

import "math"

// PoissonRate returns the exact (Garwood) confidence interval for the rate
// k/exposure of a Poisson count: for example k drops over exposure rollouts
// gives drops per rollout. The bounds for the mean count are the gamma
// (equivalently chi-square) quantiles: lower = χ²((1-conf)/2; 2k)/2 (0 when
// k == 0) and upper = χ²((1+conf)/2; 2k+2)/2, both divided by exposure. The
// interval is exact: it covers the true rate at least conf of the time. With
// no exposure (exposure <= 0) it returns the Empty interval [0, +Inf]; with
// conf not in (0, 1), NaN bounds.
func PoissonRate(k uint64, exposure float64, conf float64) Interval {
	if !validConf(conf) || math.IsNaN(exposure) || math.IsInf(exposure, 0) {
		return nanInterval()
	}
	if exposure <= 0 {
		return emptyInterval(0, math.Inf(1))
	}
	tail := (1 - conf) / 2
	return Interval{
		Point: float64(k) / exposure,
		Lo:    poissonMeanLower(k, tail) / exposure,
		Hi:    poissonMeanUpper(k, tail) / exposure,
	}
}

// RateRatio returns the ratio of two rates, (k1/n1)/(k2/n2), with an exact
// confidence interval: k1 drops in n1 requests (or rollouts) against k2 in
// n2. A ratio of 0.5 means the first drops half as often as the second.
//
// The interval is the conditional one R's poisson.test reports: given the
// total k1+k2, k1 is Binomial(k1+k2, p) with p = r·n1/(r·n1 + n2), where r is
// the true ratio. The Clopper-Pearson interval for p is mapped back through
// r = (p/(1-p))·(n2/n1). When k1 == 0 the lower bound is 0; when k2 == 0 the
// point and upper bound are +Inf. With no drops at all (k1 = k2 = 0) or no
// exposure it returns the Empty interval [0, +Inf]; with conf not in (0, 1),
// NaN bounds.
func RateRatio(k1 uint64, n1 float64, k2 uint64, n2 float64, conf float64) Interval {
	if !validConf(conf) || !(n1 >= 0) || !(n2 >= 0) || math.IsInf(n1, 0) || math.IsInf(n2, 0) {
		return nanInterval()
	}
	if n1 == 0 || n2 == 0 || k1+k2 == 0 {
		return emptyInterval(0, math.Inf(1))
	}
	tail := (1 - conf) / 2
	m := k1 + k2
	scale := n2 / n1
	iv := Interval{Point: math.Inf(1), Lo: 0, Hi: math.Inf(1)}
	if k2 > 0 {
		iv.Point = (float64(k1) / n1) / (float64(k2) / n2)
	}
	// 1-p at p's lower bound is the upper bound for k2's share, and vice
	// versa; computing both directly keeps precision when p is near 0 or 1.
	if k1 > 0 {
		iv.Lo = scale * binomLower(k1, m, tail) / binomUpper(k2, m, tail)
	}
	if k2 > 0 {
		iv.Hi = scale * binomUpper(k1, m, tail) / binomLower(k2, m, tail)
	}
	return iv
}

// PoissonTest returns the two-sided p-value for the hypothesis that two
// Poisson counts have the same rate: k1 events over exposure t1 against k2
// over t2 (for example drops over rollouts of two variants). Conditional on
// the total, k1 is Binomial(k1+k2, t1/(t1+t2)) under that hypothesis; the
// p-value is the total probability of the splits no more likely than the
// observed one (relative tolerance 1e-7), exactly as R's binom.test and
// poisson.test compute it. It is 1 when k1 = k2 = 0 and NaN when an exposure
// is not positive.
func PoissonTest(k1 uint64, t1 float64, k2 uint64, t2 float64) (pTwoSided float64) {
	if !(t1 > 0) || !(t2 > 0) || math.IsInf(t1, 0) || math.IsInf(t2, 0) {
		return math.NaN()
	}
	n := k1 + k2
	if n == 0 {
		return 1
	}
	nf := float64(n)
	logP := math.Log(t1 / (t1 + t2))
	logQ := math.Log(t2 / (t1 + t2))
	_, _, two := discreteTest(0, n, k1, func(i uint64) float64 {
		x := float64(i)
		return lchoose(nf, x) + x*logP + (nf-x)*logQ
	})
	return two
}
