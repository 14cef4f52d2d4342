package stats

import (
	"cmp"
	"math"
	"slices"
)

// Rollout is what one rollout measured: its drops among its requests.
type Rollout struct {
	Drops, Requests uint64
}

// Rate is the rollout's drop rate; 0 when it sent nothing.
func (r Rollout) Rate() float64 {
	if r.Requests == 0 {
		return 0
	}
	return float64(r.Drops) / float64(r.Requests)
}

// Dispersion is how much more a rollout's drop count varies than it would
// if requests failed independently. Drops come in bursts, one per rollout,
// so the requests of a rollout are not independent samples: with
// dispersion φ, N requests carry the information of N/φ independent ones.
type Dispersion struct {
	// Phi is Pearson's dispersion φ = X²/DF, at least 1: a rollout's drop
	// count varies φ times as much as a binomial count would. An estimate
	// below 1 is taken as 1: drops are never taken as less bursty than
	// independent requests (which also keeps identical rollouts from
	// claiming certainty).
	Phi float64
	// DF is the degrees of freedom of the estimate, Σ (rollouts − 1) over
	// the groups it was estimated from; 0 when nothing could measure it.
	DF int
	// Rho is the intraclass correlation ρ = (φ − 1)/(n̄ − 1), n̄ the mean
	// requests per rollout: how alike the requests of one rollout fail. It
	// carries the dispersion over to a rollout of another size (At).
	Rho float64
}

// Measured reports whether any rollouts measured the dispersion.
func (d Dispersion) Measured() bool { return d.DF > 0 }

// At is the dispersion of a rollout of n requests: 1 + (n − 1)ρ.
func (d Dispersion) At(n float64) float64 { return 1 + math.Max(0, n-1)*d.Rho }

// DispersionOf estimates the dispersion from groups of rollouts, each group
// one variant with its own drop rate p̂ (its drops over its requests):
// X² = Σ over groups and rollouts of (k − n·p̂)² / (n·p̂·(1 − p̂)), on
// Σ (rollouts − 1) degrees of freedom. A group that dropped nothing (or
// everything), or has fewer than two rollouts that sent requests, says
// nothing about the dispersion and is left out; with no group left the
// result is not Measured (φ 1, ρ 0).
func DispersionOf(groups ...[]Rollout) Dispersion {
	var x2, requests float64
	df, used := 0, 0
	for _, g := range groups {
		var k, n uint64
		m := 0
		for _, r := range g {
			if r.Requests > 0 {
				k, n, m = k+r.Drops, n+r.Requests, m+1
			}
		}
		if k == 0 || k >= n || m < 2 {
			continue
		}
		p := float64(k) / float64(n)
		for _, r := range g {
			if r.Requests == 0 {
				continue
			}
			e := float64(r.Requests) * p
			d := float64(r.Drops) - e
			x2 += d * d / (e * (1 - p))
		}
		df, used, requests = df+m-1, used+m, requests+float64(n)
	}
	if df == 0 {
		return Dispersion{Phi: 1}
	}
	phi := math.Max(1, x2/float64(df))
	rho := 0.0
	if nbar := requests / float64(used); nbar > 1 {
		rho = math.Min(maxRho, (phi-1)/(nbar-1))
	}
	return Dispersion{Phi: phi, DF: df, Rho: rho}
}

// maxRho keeps ρ below 1, where every rollout drops all or nothing.
const maxRho = 1 - 1e-9

// DispersionSource says what the dispersion an interval used rests on.
type DispersionSource string

const (
	// FromRow: the row's own rollouts (it dropped in some, and had two or
	// more).
	FromRow DispersionSource = "row"
	// FromStated: a dispersion stated for the row (by the user, or the
	// least burstiness the gate assumes), because the row's own rollouts
	// cannot measure it or measured less.
	FromStated DispersionSource = "stated"
	// AnyShape: the row dropped nothing and no dispersion was stated, so
	// the bound holds for drops of any burst shape: a rollout that drops
	// all its requests or none (1 − (1 − conf)^(1/R)), which bounds the
	// share of rollouts that drop at all as well as the rate.
	AnyShape DispersionSource = "any"
	// FromNothing: one rollout with drops and nothing stated, so the
	// interval treats requests as independent, and says so.
	FromNothing DispersionSource = "none"
)

// RolloutRate is a drop rate with its interval over rollouts.
type RolloutRate struct {
	Interval
	// Dispersion is the dispersion the interval used, and Source what it
	// rests on.
	Dispersion Dispersion
	Source     DispersionSource
}

// Independent reports that the interval had to treat requests as
// independent (nothing measured or stated the dispersion): it is then as
// narrow as a per-request interval and must say so beside its number.
func (r RolloutRate) Independent() bool { return r.Source == FromNothing }

// RateOverRollouts returns the drop rate of rs (drops over requests) with
// a two-sided interval at conf that treats the rollout, not the request,
// as the independent sample. It rests on the row's own rollouts alone,
// never on another row's: stated is a dispersion stated for this row (by
// the user; not Measured: none), used when rs cannot measure its own.
//
//   - With drops, it is the quasi-binomial Wilson interval: the Wilson
//     interval of K/φ drops in N/φ requests, with Student's t on the
//     dispersion's degrees of freedom in place of the normal quantile, so
//     three rollouts (2 degrees of freedom) give the wide interval three
//     samples deserve.
//   - Without drops, it is [0, hi] one-sided at conf: with a stated ρ the
//     rate a beta-binomial with that ρ could have and still give every
//     rollout zero drops (1 − conf of the time); without one, the bound
//     for any burst shape, 1 − (1 − conf)^(1/R) (AnyShape).
//
// For no requests it is Empty; for conf outside (0, 1), NaN.
func RateOverRollouts(rs []Rollout, conf float64, stated Dispersion) RolloutRate {
	return overRollouts(rs, stated, conf, 1-(1-conf)/2, false)
}

// BoundsOverRollouts returns the one-sided bounds at conf on the drop rate
// of rs that a gate tests a limit against: the rate is at least lo with
// confidence conf, and at most hi with confidence conf. floor is the
// least burstiness the bounds assume (not Measured: none); a row whose own
// rollouts measured less takes the floor, because a few rollouts of a
// bursty service often look calm (docs/statistics.md measures how often).
// A row without drops is bounded as RateOverRollouts bounds it, with the
// floor as the stated ρ; one rollout with drops is bounded below by
// Markov's inequality (a rollout's rate is x or more with probability at
// most μ/x, so μ ≥ (1 − conf)·x) and above by 1 without a floor.
func BoundsOverRollouts(rs []Rollout, conf float64, floor Dispersion) (lo, hi float64, r RolloutRate) {
	r = overRollouts(rs, floor, conf, conf, true)
	return r.Lo, r.Hi, r
}

// overRollouts computes RateOverRollouts (floored false) and
// BoundsOverRollouts (floored true) with the quantile q of each bound
// (1 − tail), conf only checked.
func overRollouts(rs []Rollout, stated Dispersion, conf, q float64, floored bool) RolloutRate {
	if !validConf(conf) {
		return RolloutRate{Interval: nanInterval(), Source: FromNothing}
	}
	var k, n uint64
	var sizes []float64
	for _, r := range rs {
		if r.Requests > 0 {
			k, n = k+r.Drops, n+r.Requests
			sizes = append(sizes, float64(r.Requests))
		}
	}
	if k > n {
		return RolloutRate{Interval: nanInterval(), Source: FromNothing}
	}
	if n == 0 {
		return RolloutRate{Interval: emptyInterval(0, 1), Source: FromNothing}
	}
	nbar := float64(n) / float64(len(sizes))
	if k == 0 {
		if stated.Measured() {
			return RolloutRate{Source: FromStated, Dispersion: stated, Interval: Interval{Hi: zeroBound(sizes, stated.Rho, 1-q)}}
		}
		return RolloutRate{Source: AnyShape, Dispersion: Dispersion{Phi: nbar, Rho: 1}, Interval: Interval{Hi: zeroBound(sizes, 1, 1-q)}}
	}
	own := RolloutRate{Dispersion: DispersionOf(rs), Source: FromRow}
	own.Interval = quasiWilson(k, n, own.Dispersion.Phi, own.Dispersion.DF, q)
	if !stated.Measured() {
		if own.Dispersion.Measured() {
			return own
		}
		own.Source = FromNothing
		if floored {
			// One rollout, nothing stated: Markov below, nothing above.
			own.Interval = Interval{Point: own.Point, Lo: (1 - q) * own.Point, Hi: 1}
		}
		return own
	}
	st := RolloutRate{Source: FromStated, Dispersion: Dispersion{Phi: stated.At(nbar), DF: stated.DF, Rho: stated.Rho}}
	st.Interval = quasiWilson(k, n, st.Dispersion.Phi, st.Dispersion.DF, q)
	switch {
	case !own.Dispersion.Measured():
		return st
	case !floored:
		return own
	}
	// A floor only widens: the wider of the two bounds on each side, the
	// source the upper one's.
	out := own
	if st.Hi > own.Hi {
		out = st
	}
	out.Lo = math.Min(own.Lo, st.Lo)
	return out
}

// Stated is the dispersion of a stated intraclass correlation rho (the
// share of a rollout's variance that is between rollouts), as a bound or
// a floor takes it: known, so Student's t is not asked to pay for its
// estimate (DF counts as infinite).
func Stated(rho float64) Dispersion {
	return Dispersion{Phi: 1, DF: math.MaxInt32, Rho: math.Min(maxRho, math.Max(0, rho))}
}

// QuasiWilson is the two-sided interval at conf of k drops in n requests
// whose dispersion is phi, estimated on df degrees of freedom (0: known,
// or requests independent): the Wilson interval of k/φ in n/φ with
// Student's t on df in place of the normal quantile. RateOverRollouts is
// it with the rollouts' own φ; it is exported to re-analyse totals whose
// rollouts were not kept, with a dispersion measured elsewhere.
func QuasiWilson(k, n uint64, phi float64, df int, conf float64) Interval {
	if !validConf(conf) || k > n || !(phi >= 1) || df < 0 {
		return nanInterval()
	}
	if n == 0 {
		return emptyInterval(0, 1)
	}
	return quasiWilson(k, n, phi, df, 1-(1-conf)/2)
}

// quasiWilson is QuasiWilson with the quantile q of each bound.
func quasiWilson(k, n uint64, phi float64, df int, q float64) Interval {
	z := NormalQuantile(q)
	if df > 0 {
		z = StudentTQuantile(q, float64(df))
	}
	iv := wilsonZ(float64(k)/phi, float64(n)/phi, z)
	iv.Point = float64(k) / float64(n)
	return iv
}

// ZeroBoundOverRollouts is the one-sided upper bound at conf on the drop
// rate of rollouts that all dropped nothing, for drops with intraclass
// correlation rho (a beta-binomial rate per rollout): the mean rate μ at
// which zero drops in every rollout has probability 1 − conf. With rho 0 it
// is UpperBoundZero of their requests (about 3/N at 95%); the burstier the
// drops, the less more requests per rollout help and the more only more
// rollouts do, up to 1 − (1 − conf)^(1/R) for drops all-or-nothing per
// rollout. sizes are the requests of each rollout.
func ZeroBoundOverRollouts(sizes []float64, rho, conf float64) float64 {
	if !validConf(conf) || !(rho >= 0 && rho <= 1) {
		return math.NaN()
	}
	return zeroBound(sizes, rho, 1-conf)
}

// zeroBound is ZeroBoundOverRollouts at tail probability 1 − conf.
func zeroBound(sizes []float64, rho, tail float64) float64 {
	return zeroBoundTimes(sizes, 1, rho, tail)
}

// zeroBoundTimes is zeroBound for every size in sizes taken times times
// (RolloutsToDecide asks about many rollouts of one size).
func zeroBoundTimes(sizes []float64, times, rho, tail float64) float64 {
	n := 0.0
	for _, s := range sizes {
		n += s * times
	}
	if n == 0 {
		return 1
	}
	if rho == 0 {
		return -math.Expm1(math.Log(tail) / n)
	}
	if rho >= maxRho {
		return -math.Expm1(math.Log(tail) / (float64(len(sizes)) * times))
	}
	// P(0 drops in n | beta(a, b)) = B(a, b+n) / B(a, b), a + b = 1/ρ − 1.
	ab := 1/rho - 1
	lab, _ := math.Lgamma(ab)
	logZero := func(mu float64) float64 {
		a, b := mu*ab, (1-mu)*ab
		lb, _ := math.Lgamma(b)
		sum := 0.0
		for _, s := range sizes {
			l1, _ := math.Lgamma(b + s)
			l4, _ := math.Lgamma(a + b + s)
			sum += l1 + lab - lb - l4
		}
		return sum * times
	}
	lt := math.Log(tail)
	return bisect(func(mu float64) bool { return logZero(mu) <= lt }, 0, 1-1e-12)
}

// RolloutTest compares two drop rates with rollouts as the unit.
type RolloutTest struct {
	// Diff is a's drop rate minus b's (each its drops over its requests).
	Diff float64
	// Greater is the one-sided p-value that a drops more than b, Less that
	// it drops less, TwoSided that they differ; NaN when the dispersion
	// could not be measured.
	Greater, Less, TwoSided float64
	// Dispersion is the dispersion pooled over both sides' rollouts
	// (DispersionOf(a, b)).
	Dispersion Dispersion
}

// CompareRollouts tests whether a and b drop at different rates, with
// the rollout as the unit: the quasi-binomial likelihood-ratio test. The
// binomial deviance of "one rate for both" against "a rate each" is
// divided by the dispersion pooled over both sides' rollouts, and its
// signed square root is referred to Student's t on the dispersion's
// degrees of freedom (the F(1, df) test of a quasi-binomial model,
// McCullagh & Nelder 1989, §9.2). It uses the evidence within rollouts
// (thousands of requests each) and charges it for the bursts between them,
// so three rollouts that each dropped hundreds can be told from three that
// dropped none, which no test over three rollouts' rates alone can do.
// Without drops in two or more rollouts of one side the dispersion cannot
// be measured and every p-value is NaN.
func CompareRollouts(a, b []Rollout) RolloutTest {
	ka, na := totals(a)
	kb, nb := totals(b)
	t := RolloutTest{Diff: math.NaN(), Greater: math.NaN(), Less: math.NaN(), TwoSided: math.NaN(), Dispersion: DispersionOf(a, b)}
	if na == 0 || nb == 0 {
		return t
	}
	pa, pb := float64(ka)/float64(na), float64(kb)/float64(nb)
	t.Diff = pa - pb
	if !t.Dispersion.Measured() {
		return t
	}
	p0 := float64(ka+kb) / float64(na+nb)
	g := 2 * (xlogy(ka, pa/p0) + xlogy(na-ka, (1-pa)/(1-p0)) + xlogy(kb, pb/p0) + xlogy(nb-kb, (1-pb)/(1-p0)))
	stat := math.Sqrt(math.Max(0, g) / t.Dispersion.Phi)
	if t.Diff < 0 {
		stat = -stat
	}
	df := float64(t.Dispersion.DF)
	t.Greater, t.Less = studentUpper(stat, df), studentUpper(-stat, df)
	t.TwoSided = math.Min(1, 2*math.Min(t.Greater, t.Less))
	return t
}

// totals sums rollouts' drops and requests.
func totals(rs []Rollout) (drops, requests uint64) {
	for _, r := range rs {
		drops, requests = drops+r.Drops, requests+r.Requests
	}
	return drops, requests
}

// xlogy is k·ln(ratio), 0 when k is 0.
func xlogy(k uint64, ratio float64) float64 {
	if k == 0 {
		return 0
	}
	return float64(k) * math.Log(ratio)
}

// studentUpper is P(T > t) for Student's t on nu degrees of freedom.
func studentUpper(t, nu float64) float64 {
	lower, _ := betaInc(nu/2, 0.5, nu/(nu+t*t))
	if t >= 0 {
		return lower / 2
	}
	return 1 - lower/2
}

// RolloutsToDecide is about how many rollouts of perRollout requests each,
// dropping at rate with dispersion d (ρ carried to that size; not Measured:
// independent requests), would put the one-sided bound over rollouts at
// conf on the far side of limit: the upper bound at or below it when rate
// is below, the lower bound above it when rate is above. For rate 0 it is
// the rollouts whose zero bound (ZeroBoundOverRollouts with d's ρ) is at
// most limit. It returns -1 when no number decides (rate equal to limit,
// arguments out of range) and math.MaxInt past a million rollouts.
func RolloutsToDecide(rate, limit, conf, perRollout float64, d Dispersion) int {
	if !validConf(conf) || !(rate >= 0 && rate < 1) || !(limit > 0 && limit < 1) || rate == limit || !(perRollout >= 1) {
		return -1
	}
	phi := 1.0
	if d.Measured() {
		phi = d.At(perRollout)
	}
	decided := func(r int) bool {
		n := float64(r) * perRollout
		if rate == 0 {
			return zeroBoundTimes([]float64{perRollout}, float64(r), d.Rho, 1-conf) <= limit
		}
		z := NormalQuantile(conf)
		if d.Measured() {
			z = StudentTQuantile(conf, float64(max(d.DF, r-1)))
		}
		iv := wilsonZ(rate*n/phi, n/phi, z)
		if rate < limit {
			return iv.Hi <= limit
		}
		return iv.Lo > limit
	}
	// At least two rollouts: one measures no dispersion.
	return firstDecided(func(r uint64) bool { return r >= 2 && decided(int(r)) }, 1_000_000)
}

// RatioOverRollouts bounds the ratio of a's drop rate to b's, one-sided
// at conf each way, with the rollout as the unit: the quasi-Poisson Wald
// interval on the log ratio, whose variance is φ/K_a + φ/K_b, φ the
// dispersion pooled over both sides' rollouts (DispersionOf(a, b)) and
// never below floor at either side's rollout size, with Student's t on
// the pooled dispersion's degrees of freedom (the normal quantile when
// only the floor measured it). Either side without drops has no log
// ratio: its bounds are then the ratio of each side's bounds at
// 1 − (1 − conf)/2 (BoundsOverRollouts; together they hold at conf), so
// a ratio to a side without drops is unbounded above.
//
// between is the standard deviation of a run's log drop rate between runs
// beyond what its rollouts show (a day effect: the two runs were measured
// apart); 0 leaves it out. It adds 2·between² to the log ratio's
// variance. betweenDF, when above 0, is the degrees of freedom it was
// estimated on: Student's t then takes the Welch–Satterthwaite degrees of
// freedom of the two parts' sum, so that a between-run part measured near
// zero costs the bound little and one that dominates brings t down to
// its own few degrees of freedom.
func RatioOverRollouts(a, b []Rollout, conf float64, floor Dispersion, between float64, betweenDF int) (ratio, lo, hi float64, d Dispersion) {
	ka, na := totals(a)
	kb, nb := totals(b)
	if !validConf(conf) || na == 0 || nb == 0 || ka > na || kb > nb {
		return math.NaN(), math.NaN(), math.NaN(), Dispersion{}
	}
	ratio = (float64(ka) / float64(na)) / (float64(kb) / float64(nb))
	if ka == 0 || kb == 0 {
		each := 1 - (1-conf)/2
		aLo, aHi, _ := BoundsOverRollouts(a, each, floor)
		bLo, bHi, _ := BoundsOverRollouts(b, each, floor)
		day := math.Exp(NormalQuantile(each) * math.Sqrt2 * between)
		return ratio, aLo / bHi / day, aHi / bLo * day, Dispersion{}
	}
	d = DispersionOf(a, b)
	// Each side is charged at least its own dispersion: one calm side
	// (many rollouts) must not vouch for a burstier one.
	phiA, phiB := math.Max(d.Phi, DispersionOf(a).Phi), math.Max(d.Phi, DispersionOf(b).Phi)
	if floor.Measured() {
		phiA = math.Max(phiA, floor.At(float64(na)/float64(rolloutsWithRequests(a))))
		phiB = math.Max(phiB, floor.At(float64(nb)/float64(rolloutsWithRequests(b))))
	}
	if !d.Measured() && !floor.Measured() {
		return ratio, math.NaN(), math.NaN(), d
	}
	within, day := phiA/float64(ka)+phiB/float64(kb), 2*between*between
	df := math.Inf(1)
	if d.Measured() {
		df = float64(d.DF)
	}
	if betweenDF > 0 && day > 0 {
		df = satterthwaite(within, df, day, float64(betweenDF))
	}
	z := NormalQuantile(conf)
	if !math.IsInf(df, 1) {
		z = StudentTQuantile(conf, df)
	}
	se := math.Sqrt(within + day)
	return ratio, ratio * math.Exp(-z*se), ratio * math.Exp(z*se), d
}

// satterthwaite is the Welch–Satterthwaite degrees of freedom of the sum
// of two variance estimates a and b, on dfA and dfB degrees of freedom
// (either may be +Inf: known).
func satterthwaite(a, dfA, b, dfB float64) float64 {
	den := 0.0
	if !math.IsInf(dfA, 1) {
		den += a * a / dfA
	}
	if !math.IsInf(dfB, 1) {
		den += b * b / dfB
	}
	if den == 0 {
		return math.Inf(1)
	}
	return (a + b) * (a + b) / den
}

// rolloutsWithRequests counts the rollouts that sent anything.
func rolloutsWithRequests(rs []Rollout) int {
	m := 0
	for _, r := range rs {
		if r.Requests > 0 {
			m++
		}
	}
	return m
}

// RatioInterval is the two-sided interval at conf on the ratio of a's
// drop rate to b's that CompareRollouts' test goes with: the quasi-Poisson
// Wald interval on the log ratio with the dispersion pooled over both
// sides (the test's), t on its degrees of freedom. A side without drops
// is bounded with the pooled ρ (the test's own assumption, that both
// sides' drops are as bursty as the pooled rollouts), each side's bound
// at 1 − (1 − conf)/4 so that both ends hold together at conf. NaN when
// the pooled dispersion cannot be measured.
func RatioInterval(a, b []Rollout, conf float64) (ratio, lo, hi float64) {
	ka, na := totals(a)
	kb, nb := totals(b)
	d := DispersionOf(a, b)
	if !validConf(conf) || na == 0 || nb == 0 || !d.Measured() {
		return math.NaN(), math.NaN(), math.NaN()
	}
	ratio = (float64(ka) / float64(na)) / (float64(kb) / float64(nb))
	if ka == 0 || kb == 0 {
		each := 1 - (1-conf)/4
		pooled := Dispersion{Phi: d.Phi, DF: d.DF, Rho: d.Rho}
		aLo, aHi, _ := BoundsOverRollouts(a, each, pooled)
		bLo, bHi, _ := BoundsOverRollouts(b, each, pooled)
		return ratio, aLo / bHi, aHi / bLo
	}
	z := StudentTQuantile(1-(1-conf)/2, float64(d.DF))
	se := math.Sqrt(d.Phi/float64(ka) + d.Phi/float64(kb))
	return ratio, ratio * math.Exp(-z*se), ratio * math.Exp(z*se)
}

// Holm adjusts p-values for the family they were tested in (Holm 1979):
// the k-th smallest of m is multiplied by m − k + 1, and each adjusted
// value is at least the one before it, so that rejecting where an
// adjusted value is below α keeps the chance of any false difference in
// the family at α. NaN p-values are left out of the family and stay NaN.
func Holm(ps []float64) []float64 {
	out := make([]float64, len(ps))
	var idx []int
	for i, p := range ps {
		out[i] = math.NaN()
		if !math.IsNaN(p) {
			idx = append(idx, i)
		}
	}
	slices.SortStableFunc(idx, func(x, y int) int { return cmp.Compare(ps[x], ps[y]) })
	m, prev := len(idx), 0.0
	for k, i := range idx {
		adj := math.Min(1, math.Max(prev, float64(m-k)*ps[i]))
		out[i], prev = adj, adj
	}
	return out
}
