package stats

// FisherExact returns Fisher's exact test p-values for the 2x2 table
//
//	[[a, b],
//	 [c, d]]
//
// where a row is a variant and the columns are (dropped, not dropped)
// requests. With all margins fixed, a follows the hypergeometric
// distribution if both variants share one drop rate. pLess is P(A <= a), the
// evidence that the first row drops less; pGreater is P(A >= a), that it
// drops more; pTwoSided sums the probabilities of every table no more likely
// than the observed one (relative tolerance 1e-7), as R's fisher.test does.
//
// The probabilities are computed in log space with math.Lgamma and summed
// only where they matter, so tables with hundreds of thousands of requests
// are fast and p-values down to about 1e-308 are accurate.
func FisherExact(a, b, c, d uint64) (pLess, pGreater, pTwoSided float64) {
	r1, r2, c1 := a+b, c+d, a+c
	if r1+r2 == 0 {
		return 1, 1, 1
	}
	lo := uint64(0)
	if c1 > r2 {
		lo = c1 - r2
	}
	hi := min(r1, c1)
	fr1, fr2, fc1 := float64(r1), float64(r2), float64(c1)
	return discreteTest(lo, hi, a, func(x uint64) float64 {
		fx := float64(x)
		return lchoose(fr1, fx) + lchoose(fr2, fc1-fx)
	})
}
