package report

import (
	"fmt"
	"slices"

	"github.com/droprun/droprun/harness/analysis"
	"github.com/droprun/droprun/harness/stats"
)

// Limits are what `droprun check` holds a run to. A negative value means
// no limit.
type Limits struct {
	// MaxDropRate is the highest drop rate (drops / rollout-window
	// requests) a row may show.
	MaxDropRate float64
	// MaxDropsPerRollout is the most any single rollout may drop.
	MaxDropsPerRollout int64
	// Variants limits the check to these rows; empty means every row.
	Variants []string
}

// Check returns one line per row that breaks a limit or, with a baseline,
// drops significantly more than the baseline's row of the same name (Fisher
// p < 0.05 and the rate ratio's lower bound above 1). A suspect run fails
// too: its numbers are not a measurement.
func Check(sum, baseline *analysis.Summary, l Limits) []string {
	var fails []string
	base := map[string]analysis.VariantSummary{}
	if baseline != nil {
		for _, v := range baseline.Variants {
			base[v.Variant] = v
		}
	}
	rows := Rows(sum)
	for k, r := range rows {
		if len(l.Variants) > 0 && !slices.Contains(l.Variants, r.Variant) {
			continue
		}
		if r.WindowRequests == 0 {
			fails = append(fails, fmt.Sprintf("%s: no requests in any rollout window: nothing was measured", r.Variant))
			continue
		}
		if l.MaxDropRate >= 0 && r.DropRate > l.MaxDropRate {
			fails = append(fails, fmt.Sprintf("%s: drop rate %s (%d in %d) above the limit %s", r.Variant,
				stats.FormatSig(r.DropRate, 2), r.Drops, r.WindowRequests, stats.FormatSig(l.MaxDropRate, 2)))
		}
		if l.MaxDropsPerRollout >= 0 && int64(r.MaxRolloutDrops) > l.MaxDropsPerRollout {
			fails = append(fails, fmt.Sprintf("%s: a rollout dropped %d requests, above the limit %d", r.Variant, r.MaxRolloutDrops, l.MaxDropsPerRollout))
		}
		if b, ok := base[r.Variant]; ok {
			v := sum.Variants[k]
			c := stats.Compare(stats.Counts{Name: r.Variant + " (this run)", Drops: v.Drops, Requests: v.WindowRequests, Rollouts: len(v.Rollouts)},
				stats.Counts{Name: r.Variant + " (baseline)", Drops: b.Drops, Requests: b.WindowRequests, Rollouts: len(b.Rollouts)}, Conf)
			if c.Significant && c.Ratio.Lo > 1 {
				fails = append(fails, fmt.Sprintf("%s: worse than the baseline: %s", r.Variant, c.Verdict))
			}
		}
		for _, s := range r.Suspect {
			fails = append(fails, fmt.Sprintf("%s: suspect measurement: %s", r.Variant, s))
		}
	}
	return fails
}

// Compare returns one verdict per row name present in both a and b.
func Compare(a, b *analysis.Summary) []string {
	var out []string
	for _, va := range a.Variants {
		for _, vb := range b.Variants {
			if va.Variant != vb.Variant {
				continue
			}
			c := stats.Compare(stats.Counts{Name: va.Variant + " (A)", Drops: va.Drops, Requests: va.WindowRequests, Rollouts: len(va.Rollouts)},
				stats.Counts{Name: vb.Variant + " (B)", Drops: vb.Drops, Requests: vb.WindowRequests, Rollouts: len(vb.Rollouts)}, Conf)
			out = append(out, c.Verdict)
		}
	}
	return out
}

// CompareVariants returns the verdict of every row of sum against the
// first row (e.g. each fix against no-prestop).
func CompareVariants(sum *analysis.Summary) []string {
	var out []string
	for _, c := range compareVariants(sum) {
		out = append(out, c.Verdict)
	}
	return out
}

// compareVariants compares every row of sum after the first with the first;
// element k is about sum.Variants[k+1].
func compareVariants(sum *analysis.Summary) []stats.Comparison {
	if len(sum.Variants) < 2 {
		return nil
	}
	ref := sum.Variants[0]
	var out []stats.Comparison
	for _, v := range sum.Variants[1:] {
		out = append(out, stats.Compare(stats.Counts{Name: v.Variant, Drops: v.Drops, Requests: v.WindowRequests, Rollouts: len(v.Rollouts)},
			stats.Counts{Name: ref.Variant, Drops: ref.Drops, Requests: ref.WindowRequests, Rollouts: len(ref.Rollouts)}, Conf))
	}
	return out
}
