package stats

import "math"

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

// DispersionSource says which rollouts measured the dispersion an
// interval used.
type DispersionSource string

const (
	// FromRow: the row's own rollouts (it dropped in some, and had two or
	// more).
	FromRow DispersionSource = "row"
	// FromRun: the rollouts of the run's other rows that dropped (ρ carried
	// over), because the row's own cannot measure it: it dropped nothing,
	// or had one rollout.
	FromRun DispersionSource = "run"
	// FromNothing: no rollout of the run measured it, so the interval
	// treats requests as independent, and says so.
	FromNothing DispersionSource = "none"
)

// RolloutRate is a drop rate with its interval over rollouts.
type RolloutRate struct {
	Interval
	// Dispersion is the dispersion the interval used, and Source the
	// rollouts that measured it.
	Dispersion Dispersion
	Source     DispersionSource
}

// Independent reports that the interval had to treat requests as
// independent (no rollout measured the dispersion): it is then as narrow
// as a per-request interval and must say so beside its number.
func (r RolloutRate) Independent() bool { return r.Source == FromNothing }

// RateOverRollouts returns the drop rate of rs (drops over requests) with
// a two-sided interval at conf that treats the rollout, not the request,
// as the independent sample. run is the dispersion of the run's rows
// (DispersionOf over all of them), used when rs cannot measure its own.
//
//   - With drops, it is the quasi-binomial Wilson interval: the Wilson
//     interval of K/φ drops in N/φ requests, with Student's t on the
//     dispersion's degrees of freedom in place of the normal quantile, so
//     three rollouts (2 degrees of freedom) give the wide interval three
//     samples deserve.
//   - Without drops, it is [0, ZeroBoundOverRollouts] at conf, one-sided:
//     the rate a beta-binomial with the run's ρ could have and still give
//     every rollout zero drops (1 − conf of the time).
//
// The Source says where the dispersion came from; FromNothing means the
// interval is per request. For no requests it is Empty; for conf outside
// (0, 1), NaN.
func RateOverRollouts(rs []Rollout, conf float64, run Dispersion) RolloutRate {
	return overRollouts(rs, run, conf, 1-(1-conf)/2)
}

// BoundsOverRollouts returns the one-sided bounds at conf on the drop rate
// of rs, over rollouts as RateOverRollouts: the rate is at least lo with
// confidence conf, and at most hi with confidence conf. A gate tests a
// limit against them. When the row measured its own dispersion and the run
// did too, hi is the larger of the bounds with either: rare drops in few
// rollouts (a handful in one, none in the others) understate their own
// burstiness, and the bound with the row's own alone then covers the true
// rate only about 82% of the time (docs/statistics.md).
func BoundsOverRollouts(rs []Rollout, conf float64, run Dispersion) (lo, hi float64, r RolloutRate) {
	r = overRollouts(rs, run, conf, conf)
	if r.Source == FromRow && run.Measured() {
		k, n := totals(rs)
		phi := run.At(float64(n) / float64(rolloutsWithRequests(rs)))
		r.Hi = math.Max(r.Hi, quasiWilson(k, n, phi, run.DF, conf).Hi)
	}
	return r.Lo, r.Hi, r
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

// overRollouts computes RateOverRollouts with the quantile q of each bound
// (1 − tail), conf only checked.
func overRollouts(rs []Rollout, run Dispersion, conf, q float64) RolloutRate {
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
	if k == 0 {
		out := RolloutRate{Source: FromNothing, Dispersion: Dispersion{Phi: 1}}
		rho := 0.0
		if run.Measured() {
			out.Source, out.Dispersion, rho = FromRun, run, run.Rho
		}
		out.Interval = Interval{Hi: zeroBound(sizes, rho, 1-q)}
		return out
	}
	out := RolloutRate{Dispersion: DispersionOf(rs), Source: FromRow}
	phi := out.Dispersion.Phi
	switch {
	case out.Dispersion.Measured():
	case run.Measured():
		out.Source, out.Dispersion = FromRun, run
		phi = run.At(float64(n) / float64(len(sizes)))
	default:
		out.Source = FromNothing
	}
	out.Interval = quasiWilson(k, n, phi, out.Dispersion.DF, q)
	return out
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
