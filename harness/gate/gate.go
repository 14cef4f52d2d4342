package gate

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/droprun/droprun/harness/analysis"
	"github.com/droprun/droprun/harness/stats"
)

// Verdict is one check's outcome, ordered from best to worst.
type Verdict int

const (
	Pass Verdict = iota
	Inconclusive
	Fail
)

func (v Verdict) String() string {
	switch v {
	case Pass:
		return "pass"
	case Inconclusive:
		return "inconclusive"
	case Fail:
		return "fail"
	}
	return fmt.Sprintf("verdict(%d)", int(v))
}

// Check names, as results and JUnit test cases carry them.
const (
	CheckRun        = "run"                   // the run is whole
	CheckMeasured   = "measured"              // the row measured something, cleanly
	CheckDropRate   = "max-drop-rate"         // Limits.MaxDropRate
	CheckPerRollout = "max-drops-per-rollout" // Limits.MaxDropsPerRollout
	CheckBaseline   = "baseline"              // not worse than the baseline run
)

// Limits are what a run is held to. A nil limit is not checked.
type Limits struct {
	// MaxDropRate is the highest drop rate (drops / rollout-window
	// requests) allowed, tested against its upper confidence bound.
	MaxDropRate *float64
	// MaxDropsPerRollout is the most any single rollout may drop.
	MaxDropsPerRollout *int64
	// Confidence is the confidence of every bound and test (0 means
	// stats.DefaultConfidence).
	Confidence float64
	// Rows limits the check to these rows (variant names, or
	// "NAME/introducing"); empty means every row.
	Rows []string
	// Baseline, when set, is a run every checked row must not be
	// significantly worse than (per rollout).
	Baseline *analysis.Summary
}

// UsageError is a bad limit or an unknown row: nothing was checked.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

func usage(format string, a ...any) error { return &UsageError{Msg: fmt.Sprintf(format, a...)} }

// Result is one check of one row (Row is empty for the run's own checks).
type Result struct {
	Row     string  `json:"row,omitempty"`
	Check   string  `json:"check"`
	Verdict Verdict `json:"-"`
	Outcome string  `json:"verdict"`
	Message string  `json:"message"`
}

// Report is every result of one check, in order.
type Report struct {
	Run     string   `json:"run"`
	Results []Result `json:"results"`
}

// Verdict is the worst verdict of all results.
func (r *Report) Verdict() Verdict {
	v := Pass
	for _, res := range r.Results {
		v = max(v, res.Verdict)
	}
	return v
}

func (r *Report) add(row, check string, v Verdict, format string, a ...any) {
	r.Results = append(r.Results, Result{Row: row, Check: check, Verdict: v, Outcome: v.String(), Message: fmt.Sprintf(format, a...)})
}

// Validate checks the limits themselves: finite, non-negative, a
// confidence in (0, 1), and at least one limit.
func (l *Limits) Validate() error {
	if l.Confidence == 0 {
		l.Confidence = stats.DefaultConfidence
	}
	if !(l.Confidence > 0 && l.Confidence < 1) {
		return usage("--confidence %v: give a confidence between 0 and 1, e.g. 0.95", l.Confidence)
	}
	if l.MaxDropRate == nil && l.MaxDropsPerRollout == nil && l.Baseline == nil {
		return usage("give at least one of --max-drop-rate, --max-drops-per-rollout, --baseline")
	}
	if r := l.MaxDropRate; r != nil && !(*r >= 0 && *r <= 1) {
		return usage("--max-drop-rate %v: give a rate between 0 and 1, e.g. 0.0001 (NaN, infinite and negative limits check nothing)", *r)
	}
	if n := l.MaxDropsPerRollout; n != nil && *n < 0 {
		return usage("--max-drops-per-rollout %d: give a count of 0 or more", *n)
	}
	return nil
}

// Check holds the run a to l. It returns a *UsageError, and no report,
// for bad limits, a row a does not have, or a row the baseline lacks.
func Check(a *analysis.Analysis, l Limits) (*Report, error) {
	if err := l.Validate(); err != nil {
		return nil, err
	}
	sum := a.Summary
	rows, err := pick(sum, l.Rows)
	if err != nil {
		return nil, err
	}
	base := map[string]analysis.VariantSummary{}
	if l.Baseline != nil {
		for _, v := range l.Baseline.Variants {
			base[v.Variant] = v
		}
		var missing []string
		for _, v := range rows {
			if _, ok := base[v.Variant]; !ok {
				missing = append(missing, v.Variant)
			}
		}
		if len(missing) > 0 {
			return nil, usage("the baseline has no row %s (it has %s): compare runs of the same variants, or pick rows with --variant",
				quoteList(missing), quoteList(rowNames(l.Baseline)))
		}
	}
	r := &Report{}
	checkRun(r, a)
	for _, v := range rows {
		checkRow(r, sum, v, l, base)
	}
	return r, nil
}

// pick returns the rows named, or every row; an unknown name is a usage
// error that lists the rows there are.
func pick(sum *analysis.Summary, names []string) ([]analysis.VariantSummary, error) {
	if len(names) == 0 {
		return sum.Variants, nil
	}
	var out []analysis.VariantSummary
	for _, n := range names {
		i := slices.IndexFunc(sum.Variants, func(v analysis.VariantSummary) bool { return v.Variant == n })
		if i < 0 {
			return nil, usage("--variant %q: the run has no such row; its rows are %s", n, quoteList(rowNames(sum)))
		}
		out = append(out, sum.Variants[i])
	}
	return out, nil
}

// checkRun fails a run that is not whole: interrupted, errored, killed,
// a variant missing or fewer rollouts than asked.
func checkRun(r *Report, a *analysis.Analysis) {
	sum := a.Summary
	var problems []string
	switch {
	case sum.Interrupted:
		problems = append(problems, "the run was interrupted")
	case sum.Error != "":
		problems = append(problems, "the run ended in an error: "+sum.Error)
	case sum.Finished.IsZero():
		problems = append(problems, "the run never finished (killed, or still running)")
	}
	asked := sum.Traffic.Rollouts
	got := map[string]int{}
	for _, v := range sum.Variants {
		got[analysis.RowVariant(v.Variant)] += len(v.Rollouts)
	}
	var names []string
	for _, v := range a.Scenario.Variants {
		names = append(names, v.Name)
	}
	for _, n := range names {
		switch {
		case got[n] == 0:
			problems = append(problems, fmt.Sprintf("variant %s was never measured", n))
		case asked > 0 && got[n] < asked:
			problems = append(problems, fmt.Sprintf("variant %s has %d of the %d rollouts asked for", n, got[n], asked))
		}
	}
	if len(problems) > 0 {
		r.add("", CheckRun, Fail, "not a whole run: %s; rerun it", strings.Join(problems, "; "))
		return
	}
	r.add("", CheckRun, Pass, "%d variant(s), %d rollout(s) each, finished", len(names), asked)
}

// checkRow runs every limit on row v.
func checkRow(r *Report, sum *analysis.Summary, v analysis.VariantSummary, l Limits, base map[string]analysis.VariantSummary) {
	row := v.Variant
	if v.WindowRequests == 0 || len(v.Rollouts) == 0 {
		r.add(row, CheckMeasured, Fail, "no requests in any rollout window: nothing was measured")
		return
	}
	suspect := append(slices.Clone(sum.Suspect), v.Suspect...)
	if len(suspect) > 0 {
		// A limit the drops break still fails; one they meet cannot pass.
		r.add(row, CheckMeasured, Inconclusive, "suspect measurement: %s; rerun on a quiet machine (or at a lower rate) before trusting a pass", strings.Join(suspect, "; "))
	} else {
		r.add(row, CheckMeasured, Pass, "%s requests in %d rollout window(s), control window clean", stats.FormatCount(v.WindowRequests), len(v.Rollouts))
	}
	if l.MaxDropRate != nil {
		dropRate(r, v, *l.MaxDropRate, l.Confidence)
	}
	if l.MaxDropsPerRollout != nil {
		perRollout(r, v, *l.MaxDropsPerRollout, l.Confidence)
	}
	if b, ok := base[row]; ok {
		baseline(r, v, b, l.Confidence)
	}
}

// dropRate tests the row's drop rate against limit: pass when its upper
// bound is at or below it, fail when its lower bound is above, otherwise
// inconclusive with the requests (and rollouts) it would take. With drops,
// the bound over rollouts (a one-sided t bound on the mean per-rollout
// rate) is tested too, and the larger upper bound decides: drops in bursts
// make the per-request bound too narrow.
func dropRate(r *Report, v analysis.VariantSummary, limit, conf float64) {
	k, n := v.Drops, v.WindowRequests
	rate := float64(k) / float64(n)
	lo, hi := stats.OneSided(k, n, conf)
	pct := percent(conf)
	how := fmt.Sprintf("drop rate %s (%s in %s requests); at %s it is at most %s per request",
		stats.FormatSig(rate, 2), stats.FormatCount(k), stats.FormatCount(n), pct, stats.FormatSigUp(hi, 2))
	if rhi, ok := rolloutUpper(v, conf); ok && rhi > hi {
		hi = rhi
		how += fmt.Sprintf(", %s over its %d rollouts (drops come in bursts)", stats.FormatSigUp(rhi, 2), len(v.Rollouts))
	}
	lim := stats.FormatSig(limit, 2)
	switch {
	case hi <= limit:
		r.add(v.Variant, CheckDropRate, Pass, "%s: within the limit %s", how, lim)
	case lo > limit:
		r.add(v.Variant, CheckDropRate, Fail, "%s, and at least %s: above the limit %s", how, stats.FormatSig(lo, 2), lim)
	case rate > limit:
		r.add(v.Variant, CheckDropRate, Inconclusive, "%s: the observed rate is above the limit %s, but not by enough to show the limit broken; %s", how, lim, need(rate, limit, conf, v))
	default:
		r.add(v.Variant, CheckDropRate, Inconclusive, "%s: above the limit %s, so this run cannot show the limit is met; %s", how, lim, need(rate, limit, conf, v))
	}
}

// need says how much traffic would decide a rate limit, at the rate seen.
func need(rate, limit, conf float64, v analysis.VariantSummary) string {
	n := stats.TrialsToDecide(rate, limit, conf)
	switch {
	case limit == 0:
		return "a limit of 0 is met only by a bound of 0, which no finite run shows; use --max-drops-per-rollout 0 to forbid any drop"
	case n < 0:
		return "no number of requests decides a rate equal to the limit"
	case n == math.MaxInt:
		return "it would take more than 1e15 requests"
	}
	perRollout := float64(v.WindowRequests) / float64(len(v.Rollouts))
	rollouts := int(math.Ceil(float64(n) / perRollout))
	return fmt.Sprintf("at that rate it would take about %s window requests, about %d rollouts at this run's %s requests per rollout (raise traffic.rollouts or traffic.rate)",
		stats.FormatCount(uint64(n)), rollouts, stats.FormatCount(uint64(perRollout)))
}

// rolloutUpper is the one-sided upper bound at conf on the mean per-rollout
// drop rate (mean + t·s/√R); ok is false without drops or with fewer than
// two rollouts, where it says nothing the per-request bound does not.
func rolloutUpper(v analysis.VariantSummary, conf float64) (float64, bool) {
	rates := rolloutRates(v)
	if v.Drops == 0 || len(rates) < 2 {
		return 0, false
	}
	mean, ss := 0.0, 0.0
	for _, x := range rates {
		mean += x
	}
	mean /= float64(len(rates))
	for _, x := range rates {
		ss += (x - mean) * (x - mean)
	}
	sd := math.Sqrt(ss / float64(len(rates)-1))
	t := stats.StudentTQuantile(conf, float64(len(rates)-1))
	return math.Min(1, mean+t*sd/math.Sqrt(float64(len(rates)))), true
}

func rolloutRates(v analysis.VariantSummary) []float64 {
	var out []float64
	for _, ro := range v.PerRollout() {
		if ro.Requests > 0 {
			out = append(out, ro.Rate())
		}
	}
	return out
}

// perRollout fails a row one of whose rollouts dropped more than limit.
// A pass says how often a rollout could still break it, at conf.
func perRollout(r *Report, v analysis.VariantSummary, limit int64, conf float64) {
	var over []string
	worst := uint64(0)
	for _, ro := range v.Rollouts {
		worst = max(worst, ro.Window.Failures)
		if int64(ro.Window.Failures) > limit {
			over = append(over, fmt.Sprintf("rollout %d dropped %s", ro.N, stats.FormatCount(ro.Window.Failures)))
		}
	}
	if len(over) > 0 {
		r.add(v.Variant, CheckPerRollout, Fail, "%s: above the limit %d per rollout (%d of %d rollouts)", strings.Join(over, ", "), limit, len(over), len(v.Rollouts))
		return
	}
	_, hi := stats.OneSided(0, uint64(len(v.Rollouts)), conf)
	r.add(v.Variant, CheckPerRollout, Pass, "the most any of %d rollouts dropped is %s: within the limit %d; at %s, up to %s of rollouts could still break it",
		len(v.Rollouts), stats.FormatCount(worst), limit, percent(conf), stats.FormatSigUp(hi*100, 2)+"%")
}

// baseline fails a row that drops significantly more than the baseline's,
// per rollout (one-sided permutation test); a test that cannot reach conf
// with these rollouts is inconclusive.
func baseline(r *Report, v, b analysis.VariantSummary, conf float64) {
	c := stats.Compare(stats.Counts{Name: v.Variant + " (this run)", Drops: v.Drops, Requests: v.WindowRequests, PerRollout: v.PerRollout()},
		stats.Counts{Name: v.Variant + " (baseline)", Drops: b.Drops, Requests: b.WindowRequests, PerRollout: b.PerRollout()}, conf)
	alpha := 1 - conf
	p := c.Permutation
	switch {
	case v.Drops == 0:
		r.add(v.Variant, CheckBaseline, Pass, "no drops in this run: not worse than the baseline (%s)", c.Verdict)
	case p == nil:
		r.add(v.Variant, CheckBaseline, Inconclusive, "cannot compare with the baseline: %s", c.Verdict)
	case p.Diff > 0 && p.Greater < alpha:
		r.add(v.Variant, CheckBaseline, Fail, "worse than the baseline: one-sided permutation test over rollouts %s; %s", stats.FormatP(p.Greater), c.Verdict)
	case p.MinP/2 >= alpha:
		// The test could not have failed: a pass would check nothing.
		r.add(v.Variant, CheckBaseline, Inconclusive, "%d and %d rollouts are too few for any test over rollouts to show this run worse than the baseline at %s: run at least %d rollouts in each; %s",
			len(v.Rollouts), len(b.Rollouts), percent(conf), stats.RolloutsForPermutation(alpha*2), c.Verdict)
	default:
		r.add(v.Variant, CheckBaseline, Pass, "not significantly worse than the baseline (one-sided permutation test over rollouts %s); %s", stats.FormatP(p.Greater), c.Verdict)
	}
}

func rowNames(sum *analysis.Summary) []string {
	var out []string
	for _, v := range sum.Variants {
		out = append(out, v.Variant)
	}
	return out
}

func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	if len(q) == 0 {
		return "none"
	}
	return strings.Join(q, ", ")
}

func percent(conf float64) string { return stats.FormatSig(conf*100, 3) + "%" }
