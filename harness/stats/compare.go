package stats

import (
	"fmt"
	"math"
	"strconv"
)

// Counts is what one variant (or one run) measured.
type Counts struct {
	// Name labels the variant in the verdict, e.g. "graceful-drain".
	Name string
	// Drops is the number of requests that failed; Requests is the number
	// sent, including the dropped ones.
	Drops, Requests uint64
	// Rollouts is the number of rollouts the requests were spread over; 0
	// when unknown. PerRollout, when given, is each rollout's own counts
	// (summing to Drops and Requests): the comparison then tests rollouts,
	// not requests.
	Rollouts   int
	PerRollout []Rollout
}

// Comparison is the result of Compare(a, b): how a's drop rate relates to b's.
type Comparison struct {
	// Ratio is a's drop rate per request divided by b's, with its exact
	// interval (see RateRatio).
	Ratio Interval
	// FisherP is the two-sided p-value of Fisher's exact test per request.
	FisherP float64
	// Rollouts is the test over rollouts (CompareRollouts); nil without
	// PerRollout on both sides.
	Rollouts *RolloutTest
	// OverRollouts is a's drop rate over b's with its interval over
	// rollouts (RatioInterval), the number a verdict leads with; NaN
	// without rollouts on both sides or a dispersion to measure.
	OverRollouts Interval
	// Test names the test that decided Significant.
	Test string
	// P is the deciding test's two-sided p-value, and Adjusted the same
	// adjusted for the family of comparisons it was made in (Holm; P
	// itself in a family of one); Family is the family's size.
	P, Adjusted float64
	Family      int
	// Significant reports that a difference was declared: the deciding
	// test's adjusted p-value is below 1-conf.
	Significant bool
	// RolloutsNeeded is about how many rollouts per variant would detect a
	// DetectRatio (2x) difference with DetectPower (80%) at the pooled drop
	// rate (see RolloutsToDetect, times the dispersion over rollouts); -1
	// when it cannot be estimated (no drops, or rollouts unknown).
	RolloutsNeeded int
	// Verdict is a one-line plain-English summary naming the test that
	// decided, e.g. "prestop-sleep drops less than no-prestop (test over 3
	// rollouts p = 0.016, drops 43x as bursty as independent requests); per
	// request, as if requests failed independently: rate ratio 0 (95% CI
	// 0–0.0025), Fisher p < 1e-16".
	Verdict string
}

// Test names, as verdicts print them.
const (
	TestRollouts = "test over rollouts"
	TestFisher   = "Fisher's exact test per request"
)

// Compare compares the drop rates of a and b at confidence conf (0.95 for
// 95%): the rate ratio a/b with its interval, Fisher's exact test per
// request and, when both sides give PerRollout, the test over rollouts
// (CompareRollouts), and a one-line verdict. Drops come in bursts, one
// per rollout, so requests are not independent trials and Fisher's p-value
// is overconfident: with rollouts known, the test over rollouts decides
// and Fisher's test is shown beside it, labelled. When no difference is
// found the verdict says how many rollouts would detect a 2x difference,
// and when the rollouts cannot measure how bursty the drops are, it says
// so. A conf outside (0, 1) yields NaN numbers and a verdict that says so.
func Compare(a, b Counts, conf float64) Comparison {
	return CompareAll([]Pair{{a, b}}, conf)[0]
}

// Pair is one comparison of a family: A against B.
type Pair struct{ A, B Counts }

// CompareAll compares every pair as Compare does, as one family: the
// deciding p-values are adjusted by Holm's method over the pairs that
// have one, so that the chance of declaring any false difference in the
// family stays at 1 − conf (seven fixes against one no-prestop, tested
// each at 5 %, declare a false difference in about a quarter of runs).
// The verdicts say so beside each adjusted p-value.
func CompareAll(pairs []Pair, conf float64) []Comparison {
	out := make([]Comparison, len(pairs))
	ps := make([]float64, len(pairs))
	type pending struct {
		a, b Counts
		p    phrases
	}
	todo := make([]*pending, len(pairs))
	for i, pr := range pairs {
		a, b := pr.A, pr.B
		nameA, nameB := nameOr(a.Name, "A"), nameOr(b.Name, "B")
		c := Comparison{FisherP: math.NaN(), RolloutsNeeded: -1, Test: TestFisher, P: math.NaN(), Adjusted: math.NaN(),
			OverRollouts: nanInterval()}
		ps[i] = math.NaN()
		if why := uncomparable(a, b, conf); why != "" {
			c.Ratio = nanInterval()
			c.Verdict = fmt.Sprintf("cannot compare %s and %s: %s", nameA, nameB, why)
			out[i] = c
			continue
		}
		if len(a.PerRollout) > 0 {
			a.Rollouts = len(a.PerRollout)
		}
		if len(b.PerRollout) > 0 {
			b.Rollouts = len(b.PerRollout)
		}
		c.Ratio = RateRatio(a.Drops, float64(a.Requests), b.Drops, float64(b.Requests), conf)
		_, _, c.FisherP = FisherExact(a.Drops, a.Requests-a.Drops, b.Drops, b.Requests-b.Drops)
		p := phrases{nameA: nameA, nameB: nameB, pct: formatPercent(conf), had: rolloutsHad(a, b)}
		if v := nothingToTest(a, b, conf, p); v != "" {
			c.Verdict = v
			out[i] = c
			continue
		}
		if len(a.PerRollout) > 0 && len(b.PerRollout) > 0 {
			r, lo, hi := RatioInterval(a.PerRollout, b.PerRollout, conf)
			c.OverRollouts = Interval{Point: r, Lo: lo, Hi: hi}
		}
		p.direction = c.decide(a, b)
		ps[i] = c.P
		out[i], todo[i] = c, &pending{a, b, p}
	}
	adjusted := Holm(ps)
	alpha := 1 - conf
	for i, t := range todo {
		if t == nil {
			continue
		}
		c := &out[i]
		c.Adjusted, c.Family = adjusted[i], len(pairs)
		c.Significant = c.Adjusted < alpha
		t.p.need = c.detectionNeed(t.a, t.b, alpha, t.p)
		c.Verdict = c.verdict(t.a, t.b, alpha, t.p)
	}
	return out
}

// phrases are the parts of Compare's verdict worked out before it.
type phrases struct {
	nameA, nameB string
	pct          string // the confidence, "95%"
	had          string // the rollouts each side had: "10", or "10 and 12"
	direction    string // "more" or "less": how a's drops compare to b's
	need         string // what would detect a 2x difference; "" unknown
}

// uncomparable says why a and b cannot be compared at conf at all, or "".
func uncomparable(a, b Counts, conf float64) string {
	switch {
	case !validConf(conf):
		return fmt.Sprintf("confidence %v is not between 0 and 1", conf)
	case a.Drops > a.Requests || b.Drops > b.Requests:
		return "more drops than requests"
	}
	return ""
}

// nothingToTest is the verdict when a side sent no request or neither
// dropped one (then each side's rate gets an upper bound), else "".
func nothingToTest(a, b Counts, conf float64, p phrases) string {
	switch {
	case a.Requests == 0 || b.Requests == 0:
		missing := p.nameA
		if b.Requests == 0 {
			missing = p.nameB
		}
		return fmt.Sprintf("cannot compare %s and %s: no requests for %s", p.nameA, p.nameB, missing)
	case a.Drops+b.Drops == 0:
		s := fmt.Sprintf("neither %s nor %s dropped a request", p.nameA, p.nameB)
		if a.Rollouts > 0 && b.Rollouts > 0 {
			s += fmt.Sprintf(" in %s rollouts: nothing to compare", p.had)
		}
		return s + fmt.Sprintf(" (per request, as if requests failed independently, %s: rate < %s, %s: rate < %s, at %s)",
			p.nameA, FormatSigUp(UpperBoundZero(a.Requests, conf), 2),
			p.nameB, FormatSigUp(UpperBoundZero(b.Requests, conf), 2), p.pct)
	}
	return ""
}

// rolloutsHad says how many rollouts each side had: one number when they
// had as many.
func rolloutsHad(a, b Counts) string {
	had := strconv.Itoa(a.Rollouts)
	if a.Rollouts != b.Rollouts {
		had += " and " + strconv.Itoa(b.Rollouts)
	}
	return had
}

// decide runs the deciding test, the test over rollouts when both sides
// give them, else Fisher's, sets c.Test, c.Rollouts and c.P, and returns
// the direction a's drops take against b's.
func (c *Comparison) decide(a, b Counts) (direction string) {
	direction = "more"
	if float64(a.Drops)*float64(b.Requests) < float64(b.Drops)*float64(a.Requests) {
		direction = "less"
	}
	c.P = c.FisherP
	if len(a.PerRollout) == 0 || len(b.PerRollout) == 0 {
		return direction
	}
	rt := CompareRollouts(a.PerRollout, b.PerRollout)
	c.Rollouts, c.Test, c.P = &rt, TestRollouts, rt.TwoSided
	return direction
}

// detectionNeed sets c.RolloutsNeeded and says how many rollouts (or,
// without rollout counts, requests) per variant a 2x difference at the
// pooled rate would need; when the rollouts cannot measure the dispersion,
// it says what would.
func (c *Comparison) detectionNeed(a, b Counts, alpha float64, p phrases) string {
	requests := a.Requests + b.Requests
	pooled := float64(a.Drops+b.Drops) / float64(requests)
	switch {
	case c.Rollouts != nil && !c.Rollouts.Dispersion.Measured():
		c.RolloutsNeeded = 2
		noun := "rollouts"
		if p.had == "1" {
			noun = "rollout"
		}
		return fmt.Sprintf("no side dropped in two or more rollouts, so %s %s cannot show how bursty the drops are: run at least 2 per variant", p.had, noun)
	case a.Rollouts > 0 && b.Rollouts > 0:
		perRolloutReqs := float64(requests) / float64(a.Rollouts+b.Rollouts)
		c.RolloutsNeeded = RolloutsToDetect(pooled, DetectRatio, perRolloutReqs, alpha, DetectPower)
		if c.Rollouts != nil && c.RolloutsNeeded > 0 {
			c.RolloutsNeeded = rolloutsWithDispersion(c.RolloutsNeeded, c.Rollouts.Dispersion.At(perRolloutReqs), a.Drops > 0 && b.Drops > 0, alpha)
		}
		return fmt.Sprintf("about %s rollouts per variant would detect a 2x difference (this run had %s)",
			FormatCount(uint64(max(c.RolloutsNeeded, 0))), p.had)
	default:
		if n := RolloutsToDetect(pooled, DetectRatio, 1, alpha, DetectPower); n > 0 {
			return fmt.Sprintf("about %s requests per variant would detect a 2x difference", FormatCount(uint64(n)))
		}
		return ""
	}
}

// rolloutsWithDispersion turns m, the rollouts per variant a 2x difference
// needs if requests failed independently, into what the test over
// rollouts needs: φ times as many (bursts make a rollout worth 1/φ of its
// requests), and more while the dispersion's few degrees of freedom (m − 1
// per side that drops) widen Student's t beyond the normal quantile.
func rolloutsWithDispersion(m int, phi float64, bothDrop bool, alpha float64) int {
	base := float64(m) * math.Max(1, phi)
	z, zp := -NormalQuantile(alpha/2), NormalQuantile(DetectPower)
	for n := 2; n < 1_000_000; n++ {
		df := float64(n - 1)
		if bothDrop {
			df *= 2
		}
		grow := (StudentTQuantile(1-alpha/2, df) + zp) / (z + zp)
		if float64(n) >= math.Ceil(base*grow*grow) {
			return n
		}
	}
	return math.MaxInt32
}

// burstiness words a dispersion for a verdict.
func burstiness(phi float64) string {
	if phi < 1.05 {
		return "drops no burstier than independent requests"
	}
	return "drops " + FormatSig(phi, 2) + "x as bursty as independent requests"
}

// verdict words the comparison in one line, naming the deciding test;
// with the test over rollouts, the per-request numbers come beside it.
func (c *Comparison) verdict(a, b Counts, alpha float64, p phrases) string {
	ratio := fmt.Sprintf("rate ratio %s (%s CI %s–%s)",
		FormatSig(c.Ratio.Point, 2), p.pct, FormatSig(c.Ratio.Lo, 2), FormatSig(c.Ratio.Hi, 2))
	perRequest := fmt.Sprintf("%s, Fisher %s", ratio, FormatP(c.FisherP))
	if c.Rollouts == nil {
		perRequest = ratio
	}
	withNeed := func(v string) string {
		if p.need != "" {
			v += "; " + p.need
		}
		return v
	}
	rt := c.Rollouts
	fisher := "Fisher " + c.pSaid(c.FisherP)
	switch {
	case rt == nil && c.Significant:
		return fmt.Sprintf("%s drops %s than %s: %s, Fisher %s, as if requests failed independently (no rollouts to test over)", p.nameA, p.direction, p.nameB, ratio, c.pSaid(c.FisherP))
	case rt == nil:
		return withNeed(fmt.Sprintf("no difference detected between %s and %s (%s, as if requests failed independently)", p.nameA, p.nameB, fisher))
	}
	beside := fmt.Sprintf("per request, as if requests failed independently: %s", perRequest)
	if !rt.Dispersion.Measured() {
		return fmt.Sprintf("%s dropped %s than %s in these rollouts (mean rate per rollout %s against %s), but the test over rollouts cannot decide: %s; %s",
			p.nameA, p.direction, p.nameB, FormatSig(meanRate(a.PerRollout), 2), FormatSig(meanRate(b.PerRollout), 2), p.need, beside)
	}
	over := fmt.Sprintf("rate ratio %s over rollouts (%s CI %s–%s)", FormatSig(c.OverRollouts.Point, 2), p.pct, FormatSig(c.OverRollouts.Lo, 2), FormatSig(c.OverRollouts.Hi, 2))
	tested := fmt.Sprintf("test over %s rollouts %s, %s", p.had, c.pSaid(rt.TwoSided), burstiness(rt.Dispersion.Phi))
	switch {
	case c.Significant:
		return fmt.Sprintf("%s drops %s than %s: %s (%s); %s", p.nameA, p.direction, p.nameB, over, tested, beside)
	case c.AloneOnly(alpha):
		// Say both, never "no difference" beside an interval that
		// excludes 1.
		return withNeed(fmt.Sprintf("%s drops %s than %s in this comparison alone, but not across the %d comparisons Holm's correction holds together: %s (%s); %s",
			p.nameA, p.direction, p.nameB, c.Family, over, tested, beside))
	}
	return withNeed(fmt.Sprintf("no difference detected between %s and %s: %s (%s); %s", p.nameA, p.nameB, over, tested, beside))
}

// AloneOnly reports that the deciding test put the difference below
// alpha on its own but Holm's correction over the family did not: it is
// undecided across the family, not shown absent.
func (c Comparison) AloneOnly(alpha float64) bool {
	return !c.Significant && c.Family > 1 && c.P < alpha
}

// pSaid words the deciding test's p-value: raw in a family of one; else
// Holm-adjusted, the family's size and the raw value beside it.
func (c *Comparison) pSaid(p float64) string {
	if c.Family <= 1 || p != c.P {
		return FormatP(p)
	}
	return fmt.Sprintf("%s Holm-adjusted over %d comparisons (%s unadjusted)", FormatP(c.Adjusted), c.Family, FormatP(p))
}

// meanRate is the mean of the rollouts' drop rates.
func meanRate(rs []Rollout) float64 {
	sum := 0.0
	for _, r := range rs {
		sum += r.Rate()
	}
	return sum / float64(len(rs))
}

func nameOr(name, fallback string) string {
	if name == "" {
		return fallback
	}
	return name
}
