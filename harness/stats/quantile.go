package stats

import "math"

// Distribution-free bounds on a quantile. n values drawn independently
// from any continuous distribution fall below its q-quantile x_q each with
// probability q, so the number below x_q is Binomial(n, q) and the k-th
// smallest value X_(k) is at or above x_q exactly when at most k−1 of them
// fall below: P(X_(k) ≥ x_q) = P(Binomial(n, q) ≤ k−1). The k that makes
// that at least conf gives a one-sided upper confidence bound on x_q whose
// coverage does not depend on the distribution's shape (Hahn & Meeker,
// Statistical Intervals, §5.3). The maximum (k = n) covers with
// probability 1 − q^n, which is why 59 values bound the 95th percentile at
// 95% and 299 the 99th.

// binomCDF returns P(X ≤ m) for X ~ Binomial(n, p), 0 ≤ m, through the
// regularized incomplete beta function: P(X ≤ m) = I_{1−p}(n−m, m+1). It
// is stable for n in the millions and for p near 0 or 1.
func binomCDF(m, n int, p float64) float64 {
	switch {
	case m < 0:
		return 0
	case m >= n:
		return 1
	case p <= 0:
		return 1
	case p >= 1:
		return 0
	}
	lower, _ := betaInc(float64(n-m), float64(m+1), 1-p)
	return lower
}

// validQuantile reports whether q is a quantile level a bound can be put
// on: strictly between 0 and 1.
func validQuantile(q float64) bool { return q > 0 && q < 1 }

// UpperQuantileBound returns the distribution-free one-sided upper
// confidence bound at confidence conf on the q-quantile of the population
// that sorted (ascending) was drawn from: the k-th smallest value, for the
// smallest k with P(Binomial(n, q) ≤ k−1) ≥ conf, so that
// P(X_(k) ≥ x_q) ≥ conf. k is 1-based. ok is false when even the maximum
// (k = n) does not reach conf (n < PairsNeeded(q, conf)), when sorted is
// empty, or when q or conf is not in (0, 1); bound is then NaN and k 0.
func UpperQuantileBound(sorted []float64, q, conf float64) (bound float64, k int, ok bool) {
	n := len(sorted)
	if n == 0 || !validQuantile(q) || !validConf(conf) || binomCDF(n-1, n, q) < conf {
		return math.NaN(), 0, false
	}
	// binomCDF(k−1, n, q) grows with k: find the first k reaching conf.
	lo, hi := 1, n
	for lo < hi {
		mid := lo + (hi-lo)/2
		if binomCDF(mid-1, n, q) >= conf {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return sorted[lo-1], lo, true
}

// MaxSupportedQuantile returns the highest quantile whose upper bound at
// confidence conf the maximum of n values provides: (1−conf)^(1/n), the q
// with 1 − q^n = conf. It is NaN for n < 1 or conf outside (0, 1).
func MaxSupportedQuantile(n int, conf float64) float64 {
	if n < 1 || !validConf(conf) {
		return math.NaN()
	}
	return math.Exp(math.Log1p(-conf) / float64(n))
}

// PairsNeeded returns the smallest n for which the maximum of n values is
// an upper confidence bound at confidence conf on the q-quantile: the
// smallest n with 1 − q^n ≥ conf. It is -1 for q or conf outside (0, 1).
func PairsNeeded(q, conf float64) int { return PairsForRank(q, conf, 0) }

// PairsForRank returns the smallest n for which the bound of
// UpperQuantileBound is at most the (r+1)-th largest of n values (r = 0:
// the maximum; r = 1: the second largest, so that one outlier no longer
// sets it): the smallest n with P(Binomial(n, q) ≤ n−1−r) ≥ conf. The more
// values lie above the bound, the closer it gets to the quantile. It is
// -1 for q or conf outside (0, 1) or r < 0, and math.MaxInt past 1e12.
func PairsForRank(q, conf float64, r int) int {
	if !validQuantile(q) || !validConf(conf) || r < 0 {
		return -1
	}
	enough := func(n int) bool { return n > r && binomCDF(n-1-r, n, q) >= conf }
	// The rank-0 answer has a closed form; start there and search up, as
	// P(Binomial(n, q) ≤ n−1−r), the chance of more than r values above
	// x_q, grows with n.
	lo := int(math.Floor(math.Log1p(-conf) / math.Log(q)))
	lo = max(lo, r)
	if lo > 1e12 {
		return math.MaxInt
	}
	hi := max(lo+1, 2)
	for !enough(hi) {
		lo, hi = hi, hi*2
		if hi > 1e12 {
			return math.MaxInt
		}
	}
	// enough(hi) holds; find the first n in (lo, hi] that is enough.
	for lo+1 < hi {
		mid := lo + (hi-lo)/2
		if enough(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	if enough(lo) {
		return lo
	}
	return hi
}

// SampleQuantile returns the nearest-rank p-quantile of sorted (ascending):
// the ⌈p·n⌉-th smallest value (the smallest for p = 0), always one of the
// values. It describes data; for a bound on the population's quantile use
// UpperQuantileBound. It is NaN for an empty slice or p outside [0, 1].
func SampleQuantile(sorted []float64, p float64) float64 {
	n := len(sorted)
	if n == 0 || !(p >= 0 && p <= 1) {
		return math.NaN()
	}
	k := int(math.Ceil(p * float64(n) * (1 - 1e-12)))
	return sorted[min(max(k, 1), n)-1]
}
