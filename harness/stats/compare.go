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
	// when unknown, which disables the per-rollout test.
	Rollouts int
}

// Comparison is the result of Compare(a, b): how a's drop rate relates to b's.
type Comparison struct {
	// Ratio is a's drop rate per request divided by b's, with its exact
	// interval (see RateRatio).
	Ratio Interval
	// FisherP is the two-sided p-value of Fisher's exact test per request.
	FisherP float64
	// PoissonP is the two-sided p-value of PoissonTest on drops per rollout;
	// NaN when either Rollouts is 0.
	PoissonP float64
	// Significant reports that a difference was declared: FisherP is below
	// 1-conf.
	Significant bool
	// RolloutsNeeded is about how many rollouts per variant would detect a
	// DetectRatio (2x) difference with DetectPower (80%) at the pooled drop
	// rate (see RolloutsToDetect); -1 when it cannot be estimated (no drops,
	// or rollouts unknown).
	RolloutsNeeded int
	// Verdict is a one-line plain-English summary, e.g. "graceful-drain
	// drops less than no-prestop: rate ratio 0.0014 (95% CI 3.6e-5–0.008),
	// Fisher p < 1e-16, per-rollout Poisson p < 1e-16" or "no difference
	// detected between a and b (Fisher p = 0.83); about 21 rollouts per
	// variant would detect a 2x difference (this run had 10)".
	Verdict string
}

// Compare compares the drop rates of a and b at confidence conf (0.95 for
// 95%): the rate ratio a/b with its interval, Fisher's exact test per
// request, the Poisson test per rollout, and a one-line verdict. The
// per-request test decides (a difference is declared when FisherP < 1-conf);
// the verdict adds the per-rollout p-value when rollouts are known and says
// so when it disagrees, which happens when the variants sent different
// numbers of requests per rollout. When no difference is found the verdict
// says how many rollouts would detect a 2x difference. A conf outside (0, 1)
// yields NaN numbers and a verdict that says so.
func Compare(a, b Counts, conf float64) Comparison {
	nameA, nameB := nameOr(a.Name, "A"), nameOr(b.Name, "B")
	c := Comparison{FisherP: math.NaN(), PoissonP: math.NaN(), RolloutsNeeded: -1}
	switch {
	case !validConf(conf):
		c.Ratio = nanInterval()
		c.Verdict = fmt.Sprintf("cannot compare %s and %s: confidence %v is not between 0 and 1", nameA, nameB, conf)
		return c
	case a.Drops > a.Requests || b.Drops > b.Requests:
		c.Ratio = nanInterval()
		c.Verdict = fmt.Sprintf("cannot compare %s and %s: more drops than requests", nameA, nameB)
		return c
	}
	c.Ratio = RateRatio(a.Drops, float64(a.Requests), b.Drops, float64(b.Requests), conf)
	_, _, c.FisherP = FisherExact(a.Drops, a.Requests-a.Drops, b.Drops, b.Requests-b.Drops)
	perRollout := a.Rollouts > 0 && b.Rollouts > 0
	if perRollout {
		c.PoissonP = PoissonTest(a.Drops, float64(a.Rollouts), b.Drops, float64(b.Rollouts))
	}
	alpha := 1 - conf
	pct := formatPercent(conf)

	switch {
	case a.Requests == 0 || b.Requests == 0:
		missing := nameA
		if b.Requests == 0 {
			missing = nameB
		}
		c.Verdict = fmt.Sprintf("cannot compare %s and %s: no requests for %s", nameA, nameB, missing)
		return c
	case a.Drops+b.Drops == 0:
		c.Verdict = fmt.Sprintf("neither %s nor %s dropped a request (%s: rate < %s, %s: rate < %s, at %s)",
			nameA, nameB,
			nameA, formatSigUp(UpperBoundZero(a.Requests, conf), 2),
			nameB, formatSigUp(UpperBoundZero(b.Requests, conf), 2), pct)
		return c
	}

	ratio := fmt.Sprintf("rate ratio %s (%s CI %s–%s)",
		FormatSig(c.Ratio.Point, 2), pct, FormatSig(c.Ratio.Lo, 2), FormatSig(c.Ratio.Hi, 2))
	direction := "more"
	if c.Ratio.Point < 1 {
		direction = "less"
	}
	c.Significant = c.FisherP < alpha

	// How many rollouts (or, without rollout counts, requests) per variant
	// a 2x difference at the pooled rate would need.
	drops := a.Drops + b.Drops
	requests := a.Requests + b.Requests
	pooled := float64(drops) / float64(requests)
	need := ""
	if perRollout {
		perRolloutReqs := float64(requests) / float64(a.Rollouts+b.Rollouts)
		c.RolloutsNeeded = RolloutsToDetect(pooled, DetectRatio, perRolloutReqs, alpha, DetectPower)
		had := strconv.Itoa(a.Rollouts)
		if a.Rollouts != b.Rollouts {
			had += " and " + strconv.Itoa(b.Rollouts)
		}
		need = fmt.Sprintf("about %s rollouts per variant would detect a 2x difference (this run had %s)",
			FormatCount(uint64(max(c.RolloutsNeeded, 0))), had)
	} else if n := RolloutsToDetect(pooled, DetectRatio, 1, alpha, DetectPower); n > 0 {
		need = fmt.Sprintf("about %s requests per variant would detect a 2x difference", FormatCount(uint64(n)))
	}

	switch {
	case !c.Significant:
		c.Verdict = fmt.Sprintf("no difference detected between %s and %s (Fisher %s)", nameA, nameB, FormatP(c.FisherP))
		if need != "" {
			c.Verdict += "; " + need
		}
	case perRollout && !(c.PoissonP < alpha):
		c.Verdict = fmt.Sprintf("%s drops %s than %s per request: %s, Fisher %s; but not per rollout (Poisson %s): the variants sent different numbers of requests per rollout",
			nameA, direction, nameB, ratio, FormatP(c.FisherP), FormatP(c.PoissonP))
	default:
		c.Verdict = fmt.Sprintf("%s drops %s than %s: %s, Fisher %s", nameA, direction, nameB, ratio, FormatP(c.FisherP))
		if perRollout {
			c.Verdict += ", per-rollout Poisson " + FormatP(c.PoissonP)
		}
	}
	return c
}

func nameOr(name, fallback string) string {
	if name == "" {
		return fallback
	}
	return name
}
