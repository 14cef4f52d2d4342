package stats

import "math"

// Numerical tolerances shared by the special functions below.
const (
	// relEps is the relative precision at which series and continued
	// fractions stop.
	relEps = 1e-15
	// tiny replaces zero denominators in the modified Lentz algorithm.
	tiny = 1e-300
	// maxIter bounds every series and continued fraction. They converge in
	// O(sqrt(a)) steps, so this only guards against a non-converging loop.
	maxIter = 1 << 22
	// maxBisect bounds every bisection.
	maxBisect = 2000
)

// lchoose returns log(n choose k) for 0 <= k <= n.
func lchoose(n, k float64) float64 {
	a, _ := math.Lgamma(n + 1)
	b, _ := math.Lgamma(k + 1)
	c, _ := math.Lgamma(n - k + 1)
	return a - b - c
}

// gammaInc returns the regularized incomplete gamma functions P(a, x) (lower)
// and Q(a, x) = 1 - P(a, x) (upper) for a > 0 and x >= 0. The one of the two
// that is computed directly keeps full relative precision even when it is
// tiny; the other is 1 minus it. It uses the series for x < a+1 and the
// continued fraction otherwise (Numerical Recipes, 3rd ed., §6.2, gser/gcf).
func gammaInc(a, x float64) (p, q float64) {
	switch {
	case math.IsNaN(a) || math.IsNaN(x) || a <= 0 || x < 0:
		return math.NaN(), math.NaN()
	case x == 0:
		return 0, 1
	case math.IsInf(x, 1):
		return 1, 0
	}
	lg, _ := math.Lgamma(a)
	logPrefix := a*math.Log(x) - x - lg // log(x^a e^-x / Γ(a))
	if x < a+1 {
		// P(a,x) = x^a e^-x / Γ(a) · Σ_{n≥0} x^n / (a (a+1) ... (a+n)).
		ap, del := a, 1/a
		sum := del
		for i := 0; i < maxIter; i++ {
			ap++
			del *= x / ap
			sum += del
			if math.Abs(del) < math.Abs(sum)*relEps {
				break
			}
		}
		p = math.Min(1, sum*math.Exp(logPrefix))
		return p, 1 - p
	}
	// Q(a,x) = x^a e^-x / Γ(a) · 1/(x+1-a- 1·(1-a)/(x+3-a- 2·(2-a)/(x+5-a- ...))),
	// evaluated with the modified Lentz algorithm.
	b := x + 1 - a
	c := 1 / tiny
	d := 1 / b
	h := d
	for i := 1; i < maxIter; i++ {
		an := -float64(i) * (float64(i) - a)
		b += 2
		d = an*d + b
		if math.Abs(d) < tiny {
			d = tiny
		}
		c = b + an/c
		if math.Abs(c) < tiny {
			c = tiny
		}
		d = 1 / d
		del := d * c
		h *= del
		if math.Abs(del-1) < relEps {
			break
		}
	}
	q = math.Min(1, h*math.Exp(logPrefix))
	return 1 - q, q
}

// betaInc returns the regularized incomplete beta function I_x(a, b) (lower)
// and 1 - I_x(a, b) (upper) for a, b > 0 and 0 <= x <= 1, with the same
// precision rule as gammaInc (Numerical Recipes, 3rd ed., §6.4, betai/betacf).
func betaInc(a, b, x float64) (lower, upper float64) {
	switch {
	case math.IsNaN(a) || math.IsNaN(b) || math.IsNaN(x) || a <= 0 || b <= 0 || x < 0 || x > 1:
		return math.NaN(), math.NaN()
	case x == 0:
		return 0, 1
	case x == 1:
		return 1, 0
	}
	la, _ := math.Lgamma(a)
	lb, _ := math.Lgamma(b)
	lab, _ := math.Lgamma(a + b)
	logFront := lab - la - lb + a*math.Log(x) + b*math.Log1p(-x)
	if x < (a+1)/(a+b+2) {
		lower = math.Min(1, math.Exp(logFront)*betaCF(a, b, x)/a)
		return lower, 1 - lower
	}
	upper = math.Min(1, math.Exp(logFront)*betaCF(b, a, 1-x)/b)
	return 1 - upper, upper
}

// betaCF evaluates the continued fraction of the incomplete beta function by
// the modified Lentz algorithm. It converges quickly for x < (a+1)/(a+b+2).
func betaCF(a, b, x float64) float64 {
	qab, qap, qam := a+b, a+1, a-1
	c := 1.0
	d := 1 - qab*x/qap
	if math.Abs(d) < tiny {
		d = tiny
	}
	d = 1 / d
	h := d
	for m := 1; m < maxIter; m++ {
		fm := float64(m)
		m2 := 2 * fm
		// Even step, then odd step.
		h *= lentzStep(fm*(b-fm)*x/((qam+m2)*(a+m2)), &c, &d)
		del := lentzStep(-(a+fm)*(qab+fm)*x/((a+m2)*(qap+m2)), &c, &d)
		h *= del
		if math.Abs(del-1) < relEps {
			break
		}
	}
	return h
}

// bisect returns the boundary x in [lo, hi] where past(x) switches from
// false (below the root) to true (at or above it). past must be monotone and
// past(hi) true. It stops at a relative width of about 1e-14, so roots close
// to zero keep their relative precision.
func bisect(past func(float64) bool, lo, hi float64) float64 {
	for i := 0; i < maxBisect; i++ {
		mid := lo + (hi-lo)/2
		if mid <= lo || mid >= hi || hi-lo <= 1e-14*hi {
			break
		}
		if past(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return lo + (hi-lo)/2
}

// bracketUp doubles hi, starting from start, until past(hi) is true.
func bracketUp(past func(float64) bool, start float64) float64 {
	hi := start
	for i := 0; i < 2000 && !past(hi); i++ {
		hi *= 2
	}
	return hi
}

// poissonMeanLower returns the exact lower confidence bound for the mean of a
// Poisson count k with lower tail probability tail: the mean m with
// P(X >= k | m) = tail, i.e. P(k, m) = tail (the chi-square quantile
// χ²(tail; 2k)/2). It is 0 for k == 0.
func poissonMeanLower(k uint64, tail float64) float64 {
	if k == 0 {
		return 0
	}
	a := float64(k)
	past := func(m float64) bool { p, _ := gammaInc(a, m); return p >= tail }
	return bisect(past, 0, bracketUp(past, a+1))
}

// poissonMeanUpper returns the exact upper confidence bound for the mean of a
// Poisson count k with upper tail probability tail: the mean m with
// P(X <= k | m) = tail, i.e. Q(k+1, m) = tail (χ²(1-tail; 2k+2)/2).
func poissonMeanUpper(k uint64, tail float64) float64 {
	a := float64(k) + 1
	past := func(m float64) bool { _, q := gammaInc(a, m); return q <= tail }
	return bisect(past, 0, bracketUp(past, 2*a+10))
}

// binomLower returns the Clopper-Pearson lower bound for k successes in n
// trials with tail probability tail: the p with P(X >= k | n, p) = tail,
// i.e. I_p(k, n-k+1) = tail. It is 0 for k == 0.
func binomLower(k, n uint64, tail float64) float64 {
	if k == 0 {
		return 0
	}
	a, b := float64(k), float64(n-k)+1
	past := func(p float64) bool { i, _ := betaInc(a, b, p); return i >= tail }
	return bisect(past, 0, 1)
}

// binomUpper returns the Clopper-Pearson upper bound for k successes in n
// trials with tail probability tail: the p with P(X <= k | n, p) = tail,
// i.e. 1 - I_p(k+1, n-k) = tail. It is 1 for k == n.
func binomUpper(k, n uint64, tail float64) float64 {
	if k >= n {
		return 1
	}
	a, b := float64(k)+1, float64(n-k)
	past := func(p float64) bool { _, j := betaInc(a, b, p); return j <= tail }
	return bisect(past, 0, 1)
}

// logSum accumulates log(Σ exp(lp)) without overflow or underflow.
type logSum struct {
	max, sum float64
	any      bool
}

func (s *logSum) add(lp float64) {
	switch {
	case math.IsInf(lp, -1):
	case !s.any:
		s.max, s.sum, s.any = lp, 1, true
	case lp > s.max:
		s.sum = s.sum*math.Exp(s.max-lp) + 1
		s.max = lp
	default:
		s.sum += math.Exp(lp - s.max)
	}
}

func (s *logSum) log() float64 {
	if !s.any {
		return math.Inf(-1)
	}
	return s.max + math.Log(s.sum)
}

// relErr is the relative tolerance R's fisher.test and binom.test use when
// deciding which outcomes are "no more likely than the observed one".
const relErr = 1e-7

// logCut is how far (in natural log) below the observed outcome's
// probability the summation stops: terms beyond it change no sum by more
// than about e^-60 relative.
const logCut = 60

// discreteTest sums a log-concave (hence unimodal) discrete distribution,
// given by unnormalized log-probabilities logpmf over the support lo..hi, and
// returns for the observed value obs: P(X <= obs), P(X >= obs), and the
// two-sided p-value, the total probability of the values whose probability is
// at most the observed one's times (1 + 1e-7), as in R. Only the values whose
// probability is within e^-60 of the observed one's are visited; they form an
// interval around obs that contains the mode, so the cost is the width of the
// distribution, not of its support.
func discreteTest(lo, hi, obs uint64, logpmf func(uint64) float64) (less, greater, two float64) {
	var all, le, ge, tw logSum
	lobs := logpmf(obs)
	threshold := lobs + math.Log1p(relErr)
	cut := lobs - logCut
	visit := func(x uint64, lp float64) {
		all.add(lp)
		if x <= obs {
			le.add(lp)
		}
		if x >= obs {
			ge.add(lp)
		}
		if lp <= threshold {
			tw.add(lp)
		}
	}
	for x := obs; ; x-- {
		lp := logpmf(x)
		if lp < cut {
			break
		}
		visit(x, lp)
		if x == lo {
			break
		}
	}
	for x := obs + 1; x <= hi && x > obs; x++ {
		lp := logpmf(x)
		if lp < cut {
			break
		}
		visit(x, lp)
	}
	norm := all.log()
	p := func(s logSum) float64 { return math.Min(1, math.Exp(s.log()-norm)) }
	return p(le), p(ge), p(tw)
}

// lentzStep advances the modified Lentz evaluation of a continued fraction
// by one term with numerator aa (denominator 1), and returns the factor
// that multiplies the running value.
func lentzStep(aa float64, c, d *float64) float64 {
	*d = 1 + aa**d
	if math.Abs(*d) < tiny {
		*d = tiny
	}
	*c = 1 + aa/(*c)
	if math.Abs(*c) < tiny {
		*c = tiny
	}
	*d = 1 / *d
	return *d * *c
}

// CombinedP combines independent p-values by Fisher's method: −2 Σ ln p
// is χ² on 2k degrees of freedom when every null holds. NaN for none.
// For permutation p-values (discrete, never 0) it is conservative.
func CombinedP(ps []float64) float64 {
	if len(ps) == 0 {
		return math.NaN()
	}
	x := 0.0
	for _, p := range ps {
		x -= 2 * math.Log(p)
	}
	_, q := gammaInc(float64(len(ps)), x/2)
	return q
}
