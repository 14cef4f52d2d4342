package stats

import "math"

// Coefficients of Acklam's rational approximation to the normal quantile
// (P. J. Acklam, "An algorithm for computing the inverse normal cumulative
// distribution function", 2003; relative error below 1.15e-9 before
// refinement).
var (
	acklamA = [6]float64{-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02, 1.383577518672690e+02, -3.066479806614716e+01, 2.506628277459239e+00}
	acklamB = [5]float64{-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02, 6.680131188771972e+01, -1.328068155288572e+01}
	acklamC = [6]float64{-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00, -2.549732539343734e+00, 4.374664141464968e+00, 2.938163982698783e+00}
	acklamD = [4]float64{7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00, 3.754408661907416e+00}
)

// NormalQuantile returns the standard normal quantile: the z with
// P(Z <= z) = p. NormalQuantile(0.975) is 1.959964, the z of a two-sided 95%
// interval. It returns -Inf for p == 0, +Inf for p == 1 and NaN outside
// [0, 1]. It uses Acklam's rational approximation followed by one Halley
// step on math.Erfc, which brings it to full double precision.
func NormalQuantile(p float64) float64 {
	switch {
	case math.IsNaN(p) || p < 0 || p > 1:
		return math.NaN()
	case p == 0:
		return math.Inf(-1)
	case p == 1:
		return math.Inf(1)
	case p > 0.5:
		// 1-p is exact for p >= 0.5, and the lower tail is the accurate one.
		return -NormalQuantile(1 - p)
	}
	a, b, c, d := acklamA, acklamB, acklamC, acklamD
	var x float64
	if p < 0.02425 {
		q := math.Sqrt(-2 * math.Log(p))
		x = (((((c[0]*q+c[1])*q+c[2])*q+c[3])*q+c[4])*q + c[5]) /
			((((d[0]*q+d[1])*q+d[2])*q+d[3])*q + 1)
	} else {
		q := p - 0.5
		r := q * q
		x = (((((a[0]*r+a[1])*r+a[2])*r+a[3])*r+a[4])*r + a[5]) * q /
			(((((b[0]*r+b[1])*r+b[2])*r+b[3])*r+b[4])*r + 1)
	}
	// Halley refinement: e is the error in probability, u the error in x.
	e := 0.5*math.Erfc(-x/math.Sqrt2) - p
	u := e * math.Sqrt(2*math.Pi) * math.Exp(x*x/2)
	if refined := x - u/(1+x*u/2); !math.IsNaN(refined) && !math.IsInf(refined, 0) {
		x = refined
	}
	return x
}

// twoSidedZ returns the z of a two-sided interval at confidence conf, e.g.
// 1.959964 for 0.95.
func twoSidedZ(conf float64) float64 {
	return -NormalQuantile((1 - conf) / 2)
}

// validConf reports whether conf is a usable confidence level.
func validConf(conf float64) bool {
	return conf > 0 && conf < 1
}

// StudentTQuantile returns the p-quantile of Student's t distribution with
// nu degrees of freedom, for 0.5 <= p < 1 (the one-sided critical value
// of a t-test at confidence p), found by bisection on its CDF
// 1 - I_{nu/(nu+t²)}(nu/2, 1/2)/2. It returns NaN outside that range.
func StudentTQuantile(p, nu float64) float64 {
	if !(p >= 0.5 && p < 1) || !(nu > 0) {
		return math.NaN()
	}
	if p == 0.5 {
		return 0
	}
	past := func(t float64) bool {
		lower, _ := betaInc(nu/2, 0.5, nu/(nu+t*t))
		return 1-lower/2 >= p
	}
	return bisect(past, 0, bracketUp(past, 1))
}
