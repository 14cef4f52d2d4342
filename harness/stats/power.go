package stats

import "math"

// Defaults Compare uses to say how many rollouts would detect a difference.
const (
	// DetectRatio is the difference in drop rate Compare asks about: 2x.
	DetectRatio = 2.0
	// DetectPower is the chance of detecting that difference: 80%, the
	// usual convention.
	DetectPower = 0.8
)

// RolloutsToDetect returns about how many rollouts per variant are needed
// to detect, with probability power and a two-sided test at level alpha
// (0.05 for 95% confidence), that one variant drops at ratio times the rate
// of the other: the reference drops baseRate per request, the other
// baseRate·ratio, each with requestsPerRollout requests per rollout.
//
// Approximation: the drop count of each variant over m rollouts is taken to
// be Poisson with mean m·λ, where λ = baseRate·requestsPerRollout (and
// λ·ratio). The square root of a Poisson count has variance close to 1/4
// whatever its mean, so the difference of the two square roots is roughly
// normal with mean √m·(√λ1 - √λ2) and variance 1/2, which gives
//
//	m = (z_{1-alpha/2} + z_{power})² / (2·(√λ1 - √λ2)²),
//
// rounded up (van Belle, "Statistical Rules of Thumb", 2nd ed., rule 2.5:
// m ≈ 4/(√λ1 - √λ2)² at alpha 0.05 and power 0.8). Drops cluster within
// rollouts, so real data usually needs more rollouts than this; treat the
// result as a lower estimate. With requestsPerRollout = 1 the answer is in
// requests instead of rollouts.
//
// It returns -1 when the question has no answer: a base rate or request
// count that is not positive, a ratio of 1 or not positive, or alpha or
// power outside (0, 1). It returns at least 1, and math.MaxInt when the
// answer does not fit an int.
func RolloutsToDetect(baseRate, ratio float64, requestsPerRollout float64, alpha, power float64) int {
	l1 := baseRate * requestsPerRollout
	l2 := l1 * ratio
	if !(baseRate > 0) || !(requestsPerRollout > 0) || !(ratio > 0) || ratio == 1 ||
		math.IsInf(l1, 0) || math.IsInf(l2, 0) || !validConf(alpha) || !validConf(power) {
		return -1
	}
	z := -NormalQuantile(alpha/2) + NormalQuantile(power)
	diff := math.Sqrt(l1) - math.Sqrt(l2)
	m := math.Ceil(z * z / (2 * diff * diff))
	switch {
	case !(m < float64(math.MaxInt/2)):
		return math.MaxInt
	case m < 1:
		return 1
	}
	return int(m)
}
