package gate

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/droprun/droprun/harness/analysis"
	"github.com/droprun/droprun/harness/history"
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
	CheckBalance    = "min-new-pod-share"     // Limits.MinNewPodShare
	CheckHistory    = "history"               // Limits.History
)

// Limits are what a run is held to. A nil limit is not checked.
type Limits struct {
	// MaxDropRate is the highest drop rate (drops / rollout-window
	// requests) allowed, tested against its upper confidence bound over
	// rollouts.
	MaxDropRate *float64
	// Burstiness, when set, is the intraclass correlation ρ the rate gate
	// assumes of a row's drops: the floor for a row that drops (in place
	// of DefaultBurstiness) and the ρ that bounds a row that does not
	// (without it, that bound holds for any burst shape).
	Burstiness *float64
	// MaxDropsPerRollout is the most any single rollout may drop.
	MaxDropsPerRollout *int64
	// Tolerance is the share of rollouts a per-rollout limit
	// (MaxDropsPerRollout, MinNewPodShare) lets break it: it passes when
	// the exact upper bound on the share that do is at most Tolerance. 0
	// is DefaultTolerance.
	Tolerance float64
	// MinNewPodShare is the least share, as a fraction of an even share,
	// every new pod must have answered in each rollout's balance span
	// (analysis.Balance).
	MinNewPodShare *float64
	// Confidence is the confidence of every bound and test, in [0.5, 1)
	// (stats.DefaultConfidence is the usual one).
	Confidence float64
	// Rows limits the check to these rows (variant names, or
	// "NAME/introducing"); empty means every row.
	Rows []string
	// Baseline, when set, is a run every checked row's drop rate must be
	// shown within Margin times of (non-inferiority over rollouts).
	Baseline *analysis.Summary
	// Margin is how many times the baseline's drop rate a row may have;
	// 0 is DefaultMargin.
	Margin float64
	// BetweenRuns is the standard deviation of a run's log drop rate
	// between runs beyond what its rollouts show (a day effect), which
	// the baseline's ratio bounds include; 0 leaves it out, and says so.
	BetweenRuns float64
	// History, when set, holds every rollout of each row to a percentile
	// of its own key's past rollouts.
	History *HistoryLimit
}

// HistoryLimit holds a row to its key's past (history.Past: the last good
// stretch of earlier runs): fail when its drop rate is shown above the
// past's, pass when it is shown within Margin times it, once the past
// holds MinRollouts rollouts (fewer: inconclusive, never a pass).
type HistoryLimit struct {
	// MinAllowance is the drops per rollout never counted as a regression
	// against a past that dropped nothing.
	MinAllowance float64
	MinRollouts  int
	// Past is each checked row's past, by row name; a row absent has none.
	Past map[string]history.Past
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

// Validate checks the limits themselves: finite, non-negative, a rate
// below 1, a confidence in [0.5, 1), and at least one limit.
func (l *Limits) Validate() error {
	if !(l.Confidence >= 0.5 && l.Confidence < 1) {
		return usage("--confidence %v: give a confidence of at least 0.5 and below 1, e.g. 0.95 (below 0.5 an upper bound falls below the rate it bounds)", l.Confidence)
	}
	if l.MaxDropRate == nil && l.MaxDropsPerRollout == nil && l.Baseline == nil && l.MinNewPodShare == nil && l.History == nil {
		return usage("give at least one of --max-drop-rate, --max-drops-per-rollout, --min-new-pod-share, --baseline, --history")
	}
	if h := l.History; h != nil {
		switch {
		case !(h.MinAllowance >= 0) || math.IsInf(h.MinAllowance, 1):
			return usage("--min-allowance %v: give 0 or more drops per rollout", h.MinAllowance)
		case h.MinRollouts < 1:
			return usage("--history-min-rollouts %d: give at least 1 (a limit learned from no rollout checks nothing)", h.MinRollouts)
		}
	}
	if m := l.MinNewPodShare; m != nil && !(*m >= 0 && *m <= 1) {
		return usage("--min-new-pod-share %v: give a fraction of an even share from 0 to 1, e.g. 0.5 (every new pod answers at least half of what an even spread gives it)", *m)
	}
	if r := l.MaxDropRate; r != nil && !(*r >= 0 && *r < 1) {
		return usage("--max-drop-rate %v: give a rate of 0 or more and below 1, e.g. 0.0001 (a limit of 1 lets every request fail; NaN, infinite and negative limits check nothing)", *r)
	}
	if b := l.Burstiness; b != nil && !(*b >= 0 && *b <= 1) {
		return usage("--burstiness %v: give an intraclass correlation from 0 (requests fail independently) to 1 (a rollout drops all its requests or none), e.g. 0.005", *b)
	}
	if m := l.Margin; !(m >= 0) || math.IsInf(m, 1) || m > 0 && m < 1 {
		return usage("--margin %v: give how many times the baseline's drop rate a run may have, 1 or more, e.g. 2 (a margin below 1 asks the run to be better, which --max-drop-rate states directly)", m)
	}
	if d := l.BetweenRuns; !(d >= 0 && d < 5) {
		return usage("--between-runs %v: give the standard deviation of a run's log drop rate between runs, 0 or more, e.g. 0.35 (runs differing by about 40 %%)", d)
	}
	if t := l.Tolerance; !(t >= 0 && t < 1) {
		return usage("--rollout-tolerance %v: give the share of rollouts a per-rollout limit lets break it, above 0 and below 1, e.g. 0.25", t)
	}
	if n := l.MaxDropsPerRollout; n != nil && *n < 0 {
		return usage("--max-drops-per-rollout %d: give a count of 0 or more", *n)
	}
	return nil
}

// Check holds the run a to l. It returns a *UsageError, and no report,
// for bad limits, a row neither the run nor its scenario has, or a row the
// baseline lacks. Every limit counts a row's drops with those connection
// reuse masked (a retry on a new connection hid them from the client; the
// pod still refused them).
func Check(a *analysis.Analysis, l Limits) (*Report, error) {
	if err := l.Validate(); err != nil {
		return nil, err
	}
	sum := a.Summary
	rows, unmeasured, err := pick(a, l.Rows)
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
	if l.Baseline != nil {
		checkBaselineRun(r, l.Baseline)
	}
	for _, n := range unmeasured {
		r.add(n, CheckMeasured, Fail, "the scenario asks for %s but the run never measured it; rerun it", n)
	}
	b := burstiness{rho: DefaultBurstiness}
	if l.Burstiness != nil {
		b = burstiness{rho: *l.Burstiness, stated: true}
	}
	for _, v := range rows {
		checkRow(r, sum, v, l, base, b)
	}
	return r, nil
}

// pick returns the rows named, or every row. A name the scenario has but
// the run never measured is returned in unmeasured (a failure, not bad
// usage); any other unknown name is a usage error that lists the rows
// there are.
func pick(a *analysis.Analysis, names []string) (rows []analysis.VariantSummary, unmeasured []string, err error) {
	sum := a.Summary
	if len(names) == 0 {
		return sum.Variants, nil, nil
	}
	asked := map[string]bool{}
	if a.Scenario != nil {
		for _, v := range a.Scenario.Variants {
			asked[v.Name] = true
		}
	}
	for _, n := range names {
		i := slices.IndexFunc(sum.Variants, func(v analysis.VariantSummary) bool { return v.Variant == n })
		switch {
		case i >= 0:
			rows = append(rows, sum.Variants[i])
		case asked[analysis.RowVariant(n)]:
			unmeasured = append(unmeasured, n)
		default:
			return nil, nil, usage("--variant %q: the run has no such row; its rows are %s", n, quoteList(rowNames(sum)))
		}
	}
	return rows, unmeasured, nil
}

// checkRun fails a run that is not whole: interrupted, errored, killed,
// a variant missing or fewer rollouts than asked.
func checkRun(r *Report, a *analysis.Analysis) {
	sum := a.Summary
	problems := unfinished(sum, "the run")
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

// unfinished says how a run (named who) did not finish, or nil.
func unfinished(sum *analysis.Summary, who string) []string {
	if u := sum.Unfinished(who); u != "" {
		return []string{u}
	}
	return nil
}

// checkBaselineRun fails a baseline that is not whole (a run cut short
// drops what it likes, and anything is "not worse" than it) and holds a
// suspect one inconclusive.
func checkBaselineRun(r *Report, b *analysis.Summary) {
	problems := unfinished(b, "the baseline")
	asked := b.Traffic.Rollouts
	for _, v := range b.Variants {
		if asked > 0 && !strings.HasSuffix(v.Variant, "/introducing") && len(v.Rollouts) < asked {
			problems = append(problems, fmt.Sprintf("its %s has %d of the %d rollouts asked for", v.Variant, len(v.Rollouts), asked))
		}
	}
	switch {
	case len(problems) > 0:
		r.add("", CheckBaseline, Fail, "not a whole baseline: %s; compare with a whole run", strings.Join(problems, "; "))
	case len(b.Suspect) > 0:
		r.add("", CheckBaseline, Inconclusive, "suspect baseline: %s; rerun it on a quiet machine before comparing with it", strings.Join(b.Suspect, "; "))
	default:
		r.add("", CheckBaseline, Pass, "the baseline is a whole run, measured cleanly")
	}
}

// checkRow runs every limit on row v; b is the burstiness the rate gate
// assumes.
func checkRow(r *Report, sum *analysis.Summary, v analysis.VariantSummary, l Limits, base map[string]analysis.VariantSummary, b burstiness) {
	row := v.Variant
	if v.WindowRequests == 0 || len(v.Rollouts) == 0 {
		r.add(row, CheckMeasured, Fail, "no requests in any rollout window: nothing was measured")
		return
	}
	if suspect := sum.SuspectOf(v); len(suspect) > 0 {
		// A limit the drops break still fails; one they meet cannot pass.
		r.add(row, CheckMeasured, Inconclusive, "suspect measurement: %s; rerun on a quiet machine (or at a lower rate) before trusting a pass", strings.Join(suspect, "; "))
	} else {
		r.add(row, CheckMeasured, Pass, "%s requests in %d rollout window(s), control window clean", stats.FormatCount(v.WindowRequests), len(v.Rollouts))
	}
	shared := sum.Cluster.Kind
	if l.MaxDropRate != nil {
		dropRate(r, v, *l.MaxDropRate, l.Confidence, b, shared)
	}
	if l.MaxDropsPerRollout != nil {
		n := *l.MaxDropsPerRollout
		perRollout(r, v, n, l.tolerance(), l.Confidence, shared)
	}
	if l.History != nil {
		fromHistory(r, v, l, b, shared)
	}
	if l.MinNewPodShare != nil {
		balance(r, v, *l.MinNewPodShare, l.tolerance(), l.Confidence)
	}
	if bv, ok := base[row]; ok {
		baseline(r, v, bv, l, b)
	}
}

// balance holds every rollout of row v to limit: each new pod's share of
// what the pods answered in the span after the rollout completed, as a
// fraction of an even share. A rollout without a decided balance (not
// measured, counts not exact, too few requests) counts as under the limit
// for a pass and as not for a failure; the verdict is exact over
// rollouts at tolerance tol (decideShare).
func balance(r *Report, v analysis.VariantSummary, limit, tol, conf float64) {
	var under, unsure []string
	least := math.Inf(1)
	for _, ro := range v.Rollouts {
		b := ro.Balance
		switch {
		case b == nil:
			unsure = append(unsure, fmt.Sprintf("rollout %d: not measured (traffic.balance 0s, no pods' counters, or a run recorded before droprun measured it)", ro.N))
		case b.Undecided != "":
			unsure = append(unsure, fmt.Sprintf("rollout %d: %s", ro.N, b.Undecided))
		default:
			least = min(least, b.Least)
			if b.Least < limit {
				under = append(under, fmt.Sprintf("rollout %d: %s", ro.N, leastPod(b)))
			}
		}
	}
	var said []string
	if len(under) > 0 {
		said = append(said, fmt.Sprintf("%s: below %.2f of an even share", strings.Join(under, "; "), limit))
	}
	if len(unsure) > 0 {
		said = append(said, fmt.Sprintf("%s: the new pods' shares cannot be told (rerun with traffic.balance of at least 30s)", strings.Join(unsure, "; ")))
	}
	if len(said) == 0 {
		said = append(said, fmt.Sprintf("the least-served new pod of %d rollouts answered %.2f of an even share: at least %.2f", len(v.Rollouts), least, limit))
	}
	decideShare(r, v.Variant, CheckBalance, strings.Join(said, "; "), len(under), len(unsure), len(v.Rollouts), tol, conf)
}

// leastPod names b's least-served pod and its share.
func leastPod(b *analysis.Balance) string {
	p := slices.MinFunc(b.Pods, func(x, y analysis.PodShare) int { return cmp.Compare(x.OfEven, y.OfEven) })
	return fmt.Sprintf("%s answered %s of %s (%.2f of an even share) in the %.0f s after it completed",
		p.Pod, stats.FormatCount(uint64(p.Answered)), stats.FormatCount(uint64(b.Answered)), p.OfEven, b.Seconds)
}

// dropRate tests the row's drop rate against limit with its one-sided
// bounds over rollouts (stats.BoundsOverRollouts): pass when the upper
// bound is at or below it, fail when the lower bound is above, otherwise
// inconclusive with what would decide. The bounds rest on the row's own
// rollouts, never on another row's, and assume drops at least as bursty
// as b (the user's --burstiness, else DefaultBurstiness). A row without
// drops is bounded with a stated burstiness only; without one, its bound
// holds for any burst shape (a rollout drops all or nothing).
func dropRate(r *Report, v analysis.VariantSummary, limit, conf float64, b burstiness, shared bool) {
	rs := v.Counted()
	var k, n uint64
	for _, ro := range rs {
		k, n = k+ro.Drops, n+ro.Requests
	}
	rate := float64(k) / float64(n)
	floor := b.floor()
	if k == 0 && !b.stated {
		floor = stats.Dispersion{}
	}
	lo, hi, est := stats.BoundsOverRollouts(rs, conf, floor)
	pct := percent(conf)
	how := fmt.Sprintf("drop rate %s (%s in %s requests over %d rollouts%s); at %s it is at most %s",
		stats.FormatSig(rate, 2), stats.FormatCount(k), stats.FormatCount(n), len(rs), maskedNote(v), pct, stats.FormatSigUp(hi, 2))
	switch est.Source {
	case stats.FromRow:
		how += fmt.Sprintf(" over rollouts (drops %sx as bursty as independent requests)", stats.FormatSig(math.Max(1, est.Dispersion.Phi), 2))
	case stats.FromStated:
		how += fmt.Sprintf(" over rollouts, for drops %s", b.says())
	case stats.AnyShape:
		how = fmt.Sprintf("0 drops in %s requests over %d rollouts; at %s at most %s of rollouts drop at all, whatever the shape of their bursts, so the rate is at most %s",
			stats.FormatCount(n), len(rs), pct, stats.FormatSigUp(hi*100, 2)+"%", stats.FormatSigUp(hi, 2))
	case stats.FromNothing:
		how += ": one rollout cannot show how bursty its drops are, so nothing bounds the rate from above"
	}
	lim := stats.FormatSig(limit, 2)
	switch {
	case math.IsNaN(lo) || math.IsNaN(hi):
		r.add(v.Variant, CheckDropRate, Inconclusive, "%s: the bounds could not be computed, so nothing is shown", how)
	case hi <= limit && rate <= limit:
		r.add(v.Variant, CheckDropRate, Pass, "%s: within the limit %s", how, lim)
	case lo > limit && !provenAbove(v, limit, conf, floor, shared):
		r.add(v.Variant, CheckDropRate, Inconclusive, "%s, and at least %s: above the limit %s, but only with drops the rig, not the variant, may have dropped (in rollouts it was short of CPU for, or hiding answers the pods gave that the client never received); counting only the variant's beyond doubt, the limit is not shown broken; rerun on a quiet machine (or at a lower rate)",
			how, stats.FormatSig(lo, 2), lim)
	case lo > limit:
		r.add(v.Variant, CheckDropRate, Fail, "%s, and at least %s: above the limit %s", how, stats.FormatSig(lo, 2), lim)
	case rate > limit:
		r.add(v.Variant, CheckDropRate, Inconclusive, "%s: the observed rate is above the limit %s, but not by enough to show the limit broken; %s", how, lim, need(rate, limit, conf, v, est.Dispersion, b))
	default:
		r.add(v.Variant, CheckDropRate, Inconclusive, "%s: above the limit %s, so this run cannot show the limit is met; %s", how, lim, need(rate, limit, conf, v, est.Dispersion, b))
	}
}

// DefaultBurstiness is the least burstiness the rate gate assumes of a
// row's drops, as an intraclass correlation ρ (the share of a rollout's
// variance in drop rate that lies between rollouts): the drops droprun
// measured on kind (compare-all, no-prestop and naive-shutdown, ρ 0.002-0.009).
// A few rollouts of a bursty service often look calm; without the floor,
// the gate passed 7-11 % of 1.5x breaches of heavy-tailed and rare, bursty
// drops (docs/statistics.md).
const DefaultBurstiness = 0.005

// burstiness is what the rate gate assumes of a row's bursts: ρ, and
// whether the user stated it.
type burstiness struct {
	rho    float64
	stated bool
}

// floor is the least dispersion the bounds take.
func (b burstiness) floor() stats.Dispersion { return stats.Stated(b.rho) }

// says names the assumption, for a message.
func (b burstiness) says() string {
	if b.stated {
		return fmt.Sprintf("as bursty as ρ %s (stated with --burstiness)", stats.FormatSig(b.rho, 2))
	}
	return fmt.Sprintf("at least as bursty as ρ %s (the gate's floor; its own rollouts looked calmer)", stats.FormatSig(b.rho, 2))
}

// provenAbove reports whether the row's drop rate is shown above limit
// with each rollout's drops cut to those the variant's beyond the rig's
// doubt (beyondDoubt; shared as for doubt).
func provenAbove(v analysis.VariantSummary, limit, conf float64, floor stats.Dispersion, shared bool) bool {
	lo, _, _ := stats.BoundsOverRollouts(beyondDoubt(v, shared), conf, floor)
	return lo > limit
}

// maskedNote says how many of a row's counted drops connection reuse
// masked, or "".
func maskedNote(v analysis.VariantSummary) string {
	if v.Masked == 0 {
		return ""
	}
	return fmt.Sprintf(", %s of them masked by connection reuse", stats.FormatCount(v.Masked))
}

// need says how many rollouts would decide a rate limit, at the rate seen
// and with the dispersion d the bound used (b: what the gate assumed).
func need(rate, limit, conf float64, v analysis.VariantSummary, d stats.Dispersion, b burstiness) string {
	perRollout := float64(v.WindowRequests) / float64(len(v.Rollouts))
	n := stats.RolloutsToDecide(rate, limit, conf, perRollout, d)
	more := ""
	if d.Rho >= 1 {
		more = fmt.Sprintf(", or state how bursty its drops would be with --burstiness (ρ: 0 when requests fail independently, 1 when a rollout drops all or nothing; drops measured on kind had 0.002-0.009, and %s is the gate's floor for rows that drop)", stats.FormatSig(DefaultBurstiness, 2))
	}
	switch {
	case limit == 0:
		return "a limit of 0 is met only by a bound of 0, which no finite run shows; use --max-drops-per-rollout 0 to forbid any drop"
	case n < 0:
		return "no number of rollouts decides a rate equal to the limit"
	case n == math.MaxInt:
		return "it would take more than a million rollouts" + more
	}
	return fmt.Sprintf("at that rate it would take about %s rollouts at this run's %s window requests per rollout (raise traffic.rollouts)%s",
		stats.FormatCount(uint64(n)), stats.FormatCount(uint64(perRollout)), more)
}

// perRollout holds every rollout of row v to at most limit drops
// (--max-drops-per-rollout), exactly over rollouts at tolerance tol
// (decideShare). A rollout breaks it only with drops of the variant's
// beyond the rig's doubt (doubt; shared as there); one that breaks it
// only with drops the rig may have caused counts as breaking it for a
// pass and as not for a failure.
func perRollout(r *Report, v analysis.VariantSummary, limit int64, tol, conf float64, shared bool) {
	what := fmt.Sprintf("the limit %d per rollout", limit)
	var over, unsure []string
	var worst uint64
	grants := unreceivedShares(v)
	for k, ro := range v.Counted() {
		rs := v.Rollouts[k]
		worst = max(worst, ro.Drops)
		d, why := doubt(v, rs, grants[k], ro.Drops, shared)
		switch {
		case int64(ro.Drops) <= limit:
		case d == 0:
			over = append(over, fmt.Sprintf("rollout %d dropped %s", rs.N, stats.FormatCount(ro.Drops)))
		case int64(ro.Drops-d) > limit:
			over = append(over, fmt.Sprintf("rollout %d dropped %s (%s of them the variant's beyond doubt, %s)", rs.N, stats.FormatCount(ro.Drops), stats.FormatCount(ro.Drops-d), why))
		default:
			unsure = append(unsure, fmt.Sprintf("rollout %d dropped %s %s", rs.N, stats.FormatCount(ro.Drops), why))
		}
	}
	said := fmt.Sprintf("the most any of %d rollouts dropped is %s: within %s", len(v.Rollouts), stats.FormatCount(worst), what)
	if len(over)+len(unsure) > 0 {
		said = strings.Join(append(slices.Clone(over), unsure...), "; ") + ": above " + what
		if len(unsure) > 0 {
			said += fmt.Sprintf(" (%d of them only with drops the rig, not the variant, may have caused; rerun on a quiet machine, or at a lower rate)", len(unsure))
		}
	}
	decideShare(r, v.Variant, CheckPerRollout, said, len(over), len(unsure), len(v.Rollouts), tol, conf)
}

// decideShare decides a per-rollout limit from the share of rollouts that
// break it, exactly (Clopper-Pearson, one-sided at conf): of n rollouts,
// over broke it beyond doubt and unsure only with the rig's doubt. It
// passes when the upper bound on the share, counting the unsure as
// breaking, is at most tol; fails when the lower bound, counting only
// over, is above tol; and is otherwise inconclusive, saying how many more
// rollouts without a breach would pass it. said is what the rollouts
// showed, for the message.
func decideShare(r *Report, row, check, said string, over, unsure, n int, tol, conf float64) {
	lo, _ := stats.OneSided(uint64(over), uint64(n), conf)
	_, hi := stats.OneSided(uint64(over+unsure), uint64(n), conf)
	share := func(x float64) string { return stats.FormatSig(x*100, 2) + "%" }
	tolerance := fmt.Sprintf("the tolerance %s of rollouts (--rollout-tolerance)", share(tol))
	switch {
	case hi <= tol:
		r.add(row, check, Pass, "%s; at %s at most %s of rollouts break it (exact, over %d rollouts): within %s", said, percent(conf), stats.FormatSigUp(hi*100, 2)+"%", n, tolerance)
	case lo > tol:
		r.add(row, check, Fail, "%s; at %s at least %s of rollouts break it (exact, %d of %d here): above %s", said, percent(conf), share(lo), over, n, tolerance)
	default:
		more := stats.CleanTrialsToPass(uint64(over+unsure), uint64(n), tol, conf)
		what := fmt.Sprintf("%d more rollout(s) without a breach would show it met (traffic.rollouts %d in all)", more, n+more)
		if more == math.MaxInt || more < 0 {
			what = "no number of rollouts shows it met"
		}
		r.add(row, check, Inconclusive, "%s; at %s between %s and %s of rollouts break it (exact, %d of %d here), so this run cannot tell whether %s is kept: %s, or raise --rollout-tolerance",
			said, percent(conf), share(lo), stats.FormatSigUp(hi*100, 2)+"%", over+unsure, n, tolerance, what)
	}
}

// fromHistory holds row v to its key's past (l.History): the last good
// stretch of earlier runs, pooled. It fails when the rate ratio (this
// run's drop rate over the past's) is shown above 1 by the variant's
// drops beyond the rig's doubt, passes when it is shown within the
// margin, and is otherwise inconclusive. The ratio's bounds are
// stats.RatioOverRollouts with the runs' variation between them beyond
// their rollouts: stated (--between-runs), or measured on the past's runs
// (three or more). A past that dropped nothing bounds no ratio; there a
// rollout above --min-allowance is a regression when Fisher's exact test
// over rollouts shows this run's share of them above the past's.
func fromHistory(r *Report, v analysis.VariantSummary, l Limits, b burstiness, shared bool) {
	h := *l.History
	past := h.Past[v.Variant]
	rolls := past.Rollouts()
	if past.Runs() == 0 && len(past.Left) == 0 {
		r.add(v.Variant, CheckHistory, Inconclusive, "no earlier run in the history has this row's key, %s: runs are compared only when scenario, row, path, protocol, request rate and client timeout, kube-proxy mode, Kubernetes version, node count and image repository all match (`droprun history DIR` lists the keys it holds); measure %d rollout(s) of this key first",
			past.Key, h.MinRollouts)
		return
	}
	if len(rolls) < h.MinRollouts {
		more := h.MinRollouts - len(rolls)
		r.add(v.Variant, CheckHistory, Inconclusive, "the history holds %s; a comparison needs %d (--history-min-rollouts): measure %d more rollout(s) of it, about %d run(s) like this one",
			past.Describe(), h.MinRollouts, more, (more+len(v.Rollouts)-1)/max(1, len(v.Rollouts)))
		return
	}
	if rateOf(rolls) == 0 {
		againstClean(r, v, h, len(rolls), past.Describe(), l, shared)
		return
	}
	between, df, how := l.BetweenRuns, 0, fmt.Sprintf("runs differing by a factor of e^%s beyond their rollouts (--between-runs)", stats.FormatSig(l.BetweenRuns, 2))
	if l.BetweenRuns == 0 {
		sd, runs, ok := past.BetweenRuns(b.floor())
		if !ok {
			r.add(v.Variant, CheckHistory, Inconclusive, "the history holds %s: how much runs differ beyond their rollouts is measured on 3 or more past runs that dropped, or stated with --between-runs SD", past.Describe())
			return
		}
		between, df = sd, runs-1
		how = fmt.Sprintf("runs differing by a factor of e^%s beyond their rollouts, as the past's %d runs that dropped differ (on %d degrees of freedom)", stats.FormatSig(sd, 2), runs, df)
	}
	this := v.Counted()
	floor, margin, conf := b.floor(), l.margin(), l.Confidence
	ratio, lo, hi, _ := stats.RatioOverRollouts(this, rolls, conf, floor, between, df)
	if rateOf(this) == 0 && !b.stated {
		_, _, hi, _ = stats.RatioOverRollouts(this, rolls, conf, stats.Dispersion{}, between, df)
	}
	_, loCut, _, _ := stats.RatioOverRollouts(beyondDoubt(v, shared), rolls, conf, floor, between, df)
	rates := fmt.Sprintf("this run %s per request over %d rollouts, its history %s (%s)", stats.FormatSig(rateOf(this), 2), len(this), stats.FormatSig(rateOf(rolls), 2), past.Describe())
	method := fmt.Sprintf("quasi-Poisson bound on the log ratio over rollouts, for drops %s, with %s", b.says(), how)
	switch {
	case math.IsNaN(lo) || math.IsNaN(hi):
		r.add(v.Variant, CheckHistory, Inconclusive, "%s: the bounds could not be computed", rates)
	case lo > 1 && loCut > 1:
		r.add(v.Variant, CheckHistory, Fail, "worse than its history: %s: rate ratio %s, at %s at least %s (%s)", rates, stats.FormatSig(ratio, 2), percent(conf), stats.FormatSig(lo, 2), method)
	case lo > 1:
		r.add(v.Variant, CheckHistory, Inconclusive, "%s: rate ratio %s, at %s at least %s, but only with drops the rig, not the variant, may have caused; counting only the variant's beyond doubt it is not shown worse (%s); rerun on a quiet machine, or at a lower rate", rates, stats.FormatSig(ratio, 2), percent(conf), stats.FormatSig(lo, 2), method)
	case hi <= margin:
		r.add(v.Variant, CheckHistory, Pass, "%s: rate ratio %s, at %s at most %s, within the margin %sx (--margin; %s)", rates, stats.FormatSig(ratio, 2), percent(conf), stats.FormatSigUp(hi, 2), stats.FormatSig(margin, 2), method)
	default:
		r.add(v.Variant, CheckHistory, Inconclusive, "%s: rate ratio %s, at %s between %s and %s: not shown worse than its history, nor within the margin %sx (--margin): %s (%s)", rates, stats.FormatSig(ratio, 2), percent(conf), stats.FormatSig(lo, 2), stats.FormatSigUp(hi, 2), stats.FormatSig(margin, 2), ratioNeed(ratio, hi, 1, margin, conf, len(this), between), method)
	}
}

// againstClean holds row v to a past of n rollouts that dropped nothing:
// a rollout above h.MinAllowance is a regression when Fisher's exact test
// over rollouts (one-sided) shows this run's share of such rollouts above
// the past's none, counting only those the variant's beyond the rig's
// doubt. It passes when no rollout is above the allowance and the exact
// bound on the share of rollouts above it, over this run's and the past's
// together, is within the tolerance.
func againstClean(r *Report, v analysis.VariantSummary, h HistoryLimit, n int, describe string, l Limits, shared bool) {
	var over, unsure []string
	grants := unreceivedShares(v)
	for k, ro := range v.Counted() {
		if float64(ro.Drops) <= h.MinAllowance {
			continue
		}
		d, why := doubt(v, v.Rollouts[k], grants[k], ro.Drops, shared)
		line := fmt.Sprintf("rollout %d dropped %s", v.Rollouts[k].N, stats.FormatCount(ro.Drops))
		if float64(ro.Drops-d) > h.MinAllowance {
			over = append(over, line)
		} else {
			unsure = append(unsure, line+" "+why)
		}
	}
	R := len(v.Rollouts)
	allowance := stats.FormatSig(h.MinAllowance, 3)
	conf := l.Confidence
	// P(this run holds ≥ len(over) of them | the rollouts exchangeable).
	_, p, _ := stats.FisherExact(uint64(len(over)), uint64(R-len(over)), 0, uint64(n))
	said := fmt.Sprintf("none of the history's %d rollouts dropped anything (%s)", n, describe)
	switch {
	case len(over) > 0 && p < 1-conf:
		r.add(v.Variant, CheckHistory, Fail, "worse than its history: %s: above the allowance %s per rollout (%d of %d rollouts), where %s; Fisher's exact test over rollouts %s", strings.Join(over, ", "), allowance, len(over), R, said, stats.FormatP(p))
	case len(over)+len(unsure) == 0:
		_, hi := stats.OneSided(0, uint64(n+R), conf)
		what := fmt.Sprintf("no rollout dropped more than the allowance %s, and %s: together, at %s at most %s of rollouts drop more (exact, over %d rollouts)", allowance, said, percent(conf), stats.FormatSigUp(hi*100, 2)+"%", n+R)
		if hi <= l.tolerance() {
			r.add(v.Variant, CheckHistory, Pass, "%s: within the tolerance %s (--rollout-tolerance)", what, stats.FormatSig(l.tolerance()*100, 2)+"%")
		} else {
			r.add(v.Variant, CheckHistory, Inconclusive, "%s, above the tolerance %s (--rollout-tolerance): measure more rollouts", what, stats.FormatSig(l.tolerance()*100, 2)+"%")
		}
	default:
		r.add(v.Variant, CheckHistory, Inconclusive, "%s: above the allowance %s per rollout, where %s, but not shown worse (Fisher's exact test over rollouts %s, counting only the variant's drops beyond the rig's doubt); more rollouts would decide",
			strings.Join(append(over, unsure...), "; "), allowance, said, stats.FormatP(p))
	}
}

// beyondDoubt is row v's rollouts with each one's drops cut to those the
// variant's beyond the rig's doubt (doubt; shared as there).
func beyondDoubt(v analysis.VariantSummary, shared bool) []stats.Rollout {
	cut := v.Counted()
	grants := unreceivedShares(v)
	for k, ro := range v.Rollouts {
		d, _ := doubt(v, ro, grants[k], cut[k].Drops, shared)
		cut[k].Drops -= d
	}
	return cut
}

// doubt is how many of rollout ro's drops (drops, as counted) the rig, not
// the variant, may have caused, and why. A rollout the rig was short of
// CPU for (starved) may owe it every drop but the proven ones. A row whose
// pods answered 2xx the client never received (Unreceived) may owe it up
// to that many timeouts, resets and EOFs that no race window accounts for:
// the answers came, the client or the host's path to the cluster lost
// them. The pods' count is over the whole run, so it is shared out across
// the rollouts (unreceivedShares) and this one may owe it grant of them.
// On a cluster that shares the rig's CPU (shared), answers lost so are the
// host starving the pods or the client, so that rollout's drops inside
// race windows prove nothing either, as in a starved one; its other drops
// still count. Through a front that logs every request, the drops it
// logged as answered 2xx (HopFrontAnswered) are lost answers the same
// way, known one by one.
func doubt(v analysis.VariantSummary, ro analysis.RolloutSummary, grant, drops uint64, shared bool) (uint64, string) {
	var n uint64
	var why []string
	if starved(ro) {
		n = drops - min(drops, proven(ro, shared))
		why = append(why, fmt.Sprintf("while the rig was short of CPU (%s), %s of them inside a race window%s", starvedWhy(ro), stats.FormatCount(raced(ro)), sharedNote(shared, raced(ro))))
	}
	if grant > 0 {
		w := fmt.Sprintf("while the pods answered %s 2xx the client never received, %s of which may hide among this rollout's %s timeouts, resets and EOFs outside every race window (the rest shared out over the other rollouts)",
			stats.FormatCount(v.Unreceived), stats.FormatCount(grant), stats.FormatCount(ro.Unaccounted()))
		h := grant
		if shared {
			h += raced(ro)
			w += fmt.Sprintf(", %s of them inside a race window%s", stats.FormatCount(raced(ro)), sharedNote(shared, raced(ro)))
		}
		n = max(n, h)
		why = append(why, w)
	}
	// Through a front that logs every request, each drop it answered 2xx
	// is a lost answer by the front's own account, request by request.
	if a := ro.ByHop[analysis.HopFrontAnswered]; a > 0 {
		w := fmt.Sprintf("while the front answered %s of them 2xx (its access log) and the client never received the answers", stats.FormatCount(a))
		if shared {
			a += raced(ro)
			w += fmt.Sprintf(", %s of them inside a race window%s", stats.FormatCount(raced(ro)), sharedNote(shared, raced(ro)))
		}
		n = max(n, a)
		why = append(why, w)
	}
	return min(n, drops), strings.Join(why, ", and ")
}

// unreceivedShares shares row v's Unreceived answers out across its
// rollouts, so that none is granted twice: each rollout may owe at most
// its own unaccounted drops (analysis.RolloutSummary.Unaccounted), and the
// rollouts with the most take theirs first (the allotment that leaves the
// most rollouts in doubt where it matters, the largest drops).
func unreceivedShares(v analysis.VariantSummary) []uint64 {
	out := make([]uint64, len(v.Rollouts))
	order := make([]int, len(v.Rollouts))
	for k := range order {
		order[k] = k
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return cmp.Compare(v.Rollouts[b].Unaccounted(), v.Rollouts[a].Unaccounted())
	})
	left := v.Unreceived
	for _, k := range order {
		out[k] = min(left, v.Rollouts[k].Unaccounted())
		left -= out[k]
	}
	return out
}

// starved reports whether the rig was short of CPU during rollout ro: a
// rig sample saw the client or a node stall, or timeouts were excused as
// the rig's stall.
// Then a drop outside every race window may be the rig's.
func starved(ro analysis.RolloutSummary) bool {
	return ro.Excused > 0 || ro.Rig != nil && ro.Rig.Saturated
}

// starvedWhy says what showed rollout ro starved.
func starvedWhy(ro analysis.RolloutSummary) string {
	var why []string
	if ro.Rig != nil && ro.Rig.Saturated {
		why = append(why, ro.Rig.String())
	}
	if ro.Excused > 0 {
		why = append(why, fmt.Sprintf("%s timeouts excused as the rig's stall", stats.FormatCount(ro.Excused)))
	}
	return strings.Join(why, "; ")
}

// proven is how many of starved rollout ro's drops are the variant's
// beyond the rig's doubt: inside a (pod, node) race window, or cut by a
// pod's close (raced). None when shared: the cluster's nodes share the
// rig's CPU (a kind cluster on its host), so the starvation slows their
// kube-proxy too and opens race windows of its own, even for a variant
// that stops being routed to before it closes.
func proven(ro analysis.RolloutSummary, shared bool) uint64 {
	if shared {
		return 0
	}
	return raced(ro)
}

// raced is how many of rollout ro's drops fell inside a race window or
// were cut by a pod's close; 0 without route data.
func raced(ro analysis.RolloutSummary) uint64 {
	if e := ro.Explained; e != nil {
		return e.Explained + e.Cut
	}
	return 0
}

// sharedNote says why drops inside race windows did not decide a starved
// rollout on a cluster sharing the rig's CPU; "" otherwise.
func sharedNote(shared bool, raced uint64) string {
	if !shared || raced == 0 {
		return ""
	}
	return " (the kind nodes share the rig's CPU, so a starved rig slows their kube-proxy too and opens race windows of its own)"
}

// baseline is the non-inferiority test of row v against the baseline's
// row b: it passes when the upper bound on the rate ratio (this run's
// drop rate over the baseline's) is at most margin, fails when the lower
// bound is above it, and is otherwise inconclusive. The ratio's bounds
// are each side's one-sided bounds over rollouts at 1 − (1 − conf)/2
// (stats.BoundsOverRollouts with burstiness b; Bonferroni, so together
// they hold at conf): hi = this run's upper over the baseline's lower, lo
// = this run's lower over the baseline's upper. A baseline without drops
// bounds no ratio. No variation between runs beyond their rollouts' is
// included, and the message says so.
func baseline(r *Report, v, bv analysis.VariantSummary, l Limits, b burstiness) {
	this, then := v.Counted(), bv.Counted()
	floor, margin, conf := b.floor(), l.margin(), l.Confidence
	between, df, how := l.BetweenRuns, 0, ""
	if l.BetweenRuns > 0 {
		how = fmt.Sprintf("with runs differing by a factor of e^%s beyond their rollouts (--between-runs)", stats.FormatSig(l.BetweenRuns, 2))
	} else if h := l.History; h != nil {
		if past, ok := h.Past[v.Variant]; ok {
			if sd, runs, ok := past.BetweenRuns(floor); ok {
				between, df = sd, runs-1
				how = fmt.Sprintf("with runs differing by a factor of e^%s beyond their rollouts, as this key's %d past runs that dropped differ (on %d degrees of freedom)", stats.FormatSig(sd, 2), runs, df)
			}
		}
	}
	ratio, lo, hi, _ := stats.RatioOverRollouts(this, then, conf, floor, between, df)
	if rateOf(this) == 0 && !b.stated {
		// No drops: its bound is for any burst shape, as --max-drop-rate's.
		_, _, hi, _ = stats.RatioOverRollouts(this, then, conf, stats.Dispersion{}, between, df)
	}
	bLo, _, _ := stats.BoundsOverRollouts(then, conf, floor)
	rates := fmt.Sprintf("this run %s per request over %d rollouts, the baseline %s over %d", stats.FormatSig(rateOf(this), 2), len(this), stats.FormatSig(rateOf(then), 2), len(then))
	m := stats.FormatSig(margin, 2)
	method := fmt.Sprintf("quasi-Poisson bound on the log ratio over rollouts, for drops %s; ", b.says())
	if how != "" {
		method += how
	} else {
		method += "variation between runs beyond their rollouts' is not included: runs measured apart often differ by more, so state it with --between-runs SD, or give --history to measure it"
	}
	switch {
	case rateOf(then) == 0 || bLo == 0:
		r.add(v.Variant, CheckBaseline, Inconclusive, "%s: the baseline's rate is not shown above 0, so no ratio to it can be bounded; hold this run to an absolute limit instead (--max-drop-rate, --max-drops-per-rollout)", rates)
	case math.IsNaN(hi) || math.IsNaN(lo):
		r.add(v.Variant, CheckBaseline, Inconclusive, "%s: the bounds could not be computed", rates)
	case hi <= margin:
		r.add(v.Variant, CheckBaseline, Pass, "%s: rate ratio %s, at %s at most %s, within the margin %sx (--margin; %s)", rates, stats.FormatSig(ratio, 2), percent(conf), stats.FormatSigUp(hi, 2), m, method)
	case lo > margin:
		r.add(v.Variant, CheckBaseline, Fail, "worse than the baseline by more than the margin %sx (--margin): %s: rate ratio %s, at %s at least %s (%s)", m, rates, stats.FormatSig(ratio, 2), percent(conf), stats.FormatSig(lo, 2), method)
	default:
		r.add(v.Variant, CheckBaseline, Inconclusive, "%s: rate ratio %s, at %s between %s and %s, so this run cannot show it within the margin %sx (--margin) nor beyond it: %s (%s)", rates, stats.FormatSig(ratio, 2), percent(conf), stats.FormatSig(lo, 2), stats.FormatSigUp(hi, 2), m, ratioNeed(ratio, hi, margin, margin, conf, len(this), between), method)
	}
}

// rateOf is rollouts' drops over their requests.
func rateOf(rs []stats.Rollout) float64 {
	var k, n uint64
	for _, r := range rs {
		k, n = k+r.Drops, n+r.Requests
	}
	return float64(k) / float64(n)
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

func percent(conf float64) string { return stats.FormatPercent(conf, 3) }

// DefaultTolerance is the share of rollouts a per-rollout limit tolerates
// breaking it, unless told otherwise: at most three rollouts in ten. Nine
// rollouts without a breach show it at 95 %; three show only that at most
// 63 % of rollouts break it.
const DefaultTolerance = 0.3

// tolerance is l.Tolerance, or DefaultTolerance when unset.
func (l Limits) tolerance() float64 {
	if l.Tolerance == 0 {
		return DefaultTolerance
	}
	return l.Tolerance
}

// DefaultMargin is how many times the baseline's drop rate a run may
// have and still pass --baseline, unless told otherwise.
const DefaultMargin = 2.0

// margin is l.Margin, or DefaultMargin when unset.
func (l Limits) margin() float64 {
	if l.Margin == 0 {
		return DefaultMargin
	}
	return l.Margin
}

// ratioNeed says about how many rollouts per run would decide a rate
// ratio seen at ratio with upper bound hi from r rollouts: pass when its
// upper bound falls to margin (ratio below it), fail when its lower bound
// rises above worse (ratio above that). The bound's width on the log
// scale is taken as z·sqrt(w/R + 2·between²), its rollouts' part w/R
// shrinking with R (both runs measured alike); when the runs' variation
// alone leaves no room, no number of rollouts decides, and it says so.
func ratioNeed(ratio, hi, worse, margin, conf float64, r int, between float64) string {
	z := stats.NormalQuantile(conf)
	if !(ratio > 0) || math.IsInf(hi, 1) || math.IsNaN(hi) || r < 1 {
		return "more rollouts in both runs would decide"
	}
	room := 0.0
	switch {
	case ratio < margin:
		room = math.Log(margin / ratio)
	case ratio > worse:
		room = math.Log(ratio / worse)
	default:
		return "no number of rollouts decides a ratio this close to the limit"
	}
	day := 2 * between * between
	now := math.Pow(math.Log(hi/ratio)/z, 2) - day
	target := math.Pow(room/z, 2) - day
	if target <= 0 || now <= 0 {
		return fmt.Sprintf("no number of rollouts decides: runs differ by a factor of e^%s beyond their rollouts, more than the ratio leaves room for; compare runs measured alike, or more runs", stats.FormatSig(between, 2))
	}
	n := int(math.Ceil(float64(r) * now / target))
	if n > 100_000 {
		return "it would take more than 100,000 rollouts per run"
	}
	return fmt.Sprintf("at this ratio about %s rollouts per run would decide (this run had %d; raise traffic.rollouts)", stats.FormatCount(uint64(max(n, r+1))), r)
}
