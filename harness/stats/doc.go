// Package stats turns drop counts into statements an SRE can act on: how
// often a variant drops requests, how sure we are, and whether one variant
// really drops less than another.
//
// Every function is pure (counts in, numbers out) and is tested against
// published reference values: Newcombe (1998) for proportions, standard
// Poisson tables and R's poisson.test for counts, Fisher's tea-tasting table,
// Wikipedia's and R's fisher.test examples, and R's binom.test.
//
// # Intervals
//
// An Interval is a range of values the data does not rule out, at a stated
// confidence (usually 95%). "Drop rate 0.30% (95% CI 0.25%–0.37%)" means: if
// the true rate were outside that range, results like ours would be unusual
// (less than 5% likely). A narrow interval needs many requests; an interval
// that is wide says "measure more", not "the rate is large".
//
//   - Wilson is the interval for a proportion: drops out of requests, or the
//     share of rollouts that dropped anything. It behaves well for rare events
//     and for 0 or n successes, where the textbook "p ± 1.96·SE" interval
//     collapses to a single point. Use it for rates shown in tables and plots.
//   - ClopperPearson is the exact interval for a proportion. It is never
//     narrower than it should be, so it is a little wider than Wilson; the
//     rate-ratio interval is built from it.
//   - PoissonRate is the exact (Garwood) interval for a count of independent
//     rare events per unit of exposure, such as drops per rollout (exposure =
//     number of rollouts). It does not need to know how many requests were
//     sent.
//   - UpperBoundZero and ZeroBoundPhrase cover the variant that dropped
//     nothing: "0 in 214,000 requests: rate < 1.4e-5 at 95%". Zero drops
//     never proves a zero rate; it proves the rate is below a bound that
//     shrinks as requests grow (about 3/n at 95%, the "rule of three").
//     This bound is one-sided: we only ask how large the rate could be.
//
// # Comparing two variants (or a run and its baseline)
//
//   - RateRatio is drop rate A divided by drop rate B with an exact interval:
//     0.5 means A drops half as often as B. An interval entirely below 1
//     means A is better; one that contains 1 means the data cannot tell.
//     When B dropped nothing the upper end is +Inf; when A dropped nothing
//     the lower end is 0.
//   - FisherExact asks, per request: if both variants had the same drop
//     rate, how likely would a split of drops at least this lopsided be?
//     That probability is the p-value; a small one (below 0.05) means
//     luck is an unlikely explanation for the difference.
//   - PoissonTest asks the same question per rollout: given the drops of
//     both variants together, is the split between them what equal rates
//     per rollout would produce?
//   - RolloutsToDetect answers "no difference detected" honestly: how many
//     rollouts per variant would find a difference of a given size (say 2x)
//     most of the time (80% power), so a reader can tell "no difference"
//     from "not enough data".
//   - Compare runs all of the above on two sets of counts and writes a
//     one-line verdict; with rollouts known, CompareRollouts decides.
//
// # The rollout is the unit
//
// Fisher's test and the intervals per request assume that requests fail
// independently. Rollout drops do not: they come in bursts when a pod is
// removed while still receiving traffic, and the size of the burst varies
// from rollout to rollout far more than independent requests would let it
// (on this cluster, 40–90 times the binomial variance). Per-request
// intervals then cover the true rate about a quarter of the time. So the
// rates droprun shows and gates on are over rollouts:
//
//   - DispersionOf measures the bursts: Pearson's φ over the rollouts of
//     each variant (and ρ, which carries it to rollouts of another size).
//   - RateOverRollouts is the quasi-binomial Wilson interval (K/φ drops in
//     N/φ requests, Student's t on φ's degrees of freedom) on the row's own
//     rollouts; without drops, the bound for any burst shape, or the
//     beta-binomial bound ZeroBoundOverRollouts with a stated ρ.
//   - BoundsOverRollouts is the one-sided pair a gate tests limits against,
//     never calmer than a stated floor.
//   - RatioOverRollouts bounds a rate ratio (the baseline's
//     non-inferiority test).
//   - CompareRollouts is the quasi-binomial likelihood-ratio test: the
//     deviance between two variants divided by φ, on t with φ's degrees of
//     freedom. It uses the thousands of requests inside each rollout and
//     charges them for the bursts, so 3 rollouts against 3 can decide what
//     no test over 3 rollouts' rates alone can.
//
// docs/statistics.md gives the method, its coverage simulation
// (coverage_test.go) and its limits.
//
// # Numbers
//
// p-values are computed in log space over the exact distributions, so very
// small values (1e-200) are accurate; they underflow to 0 only below about
// 1e-308. FormatP prints any p-value below 1e-16 as "p < 1e-16": beyond that
// the model assumptions, not arithmetic, limit what the number means.
// Functions return NaN for invalid arguments (such as a confidence level
// outside (0, 1)), following the math package, rather than panicking.
package stats
